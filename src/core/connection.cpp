#include "core/connection.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>

#include "core/text.hpp"

namespace pp {

namespace {
// Responses larger than this are streamed, not kept: the cache is for repeated small requests.
constexpr size_t kMaxCacheBytes = 64u << 20;
}  // namespace

ConnectionPtr connection_of(sqlite3* db) {
  // Weak: a connection's state lives as long as the functions registered with it, which SQLite
  // destroys when db closes (a later connection at the same address then gets a new state).
  static std::mutex mutex;
  static std::map<sqlite3*, std::weak_ptr<Connection>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = loaded.begin(); it != loaded.end();) it = it->second.expired() ? loaded.erase(it) : std::next(it);
  if (ConnectionPtr existing = loaded[db].lock()) return existing;
  auto created = std::make_shared<Connection>(db);
  loaded[db] = created;
  return created;
}

void Connection::add_warning(const std::string& warning) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& w : warnings_)
    if (w == warning) return;  // a chunked fetch repeats the same server warning per chunk
  // At most kMaxWarnings, each of at most 2000 bytes: a server's warnings are the server's to
  // size. Those past them are counted, never dropped unsaid: a refresh's own warnings (events
  // not folded yet) may come after a server's.
  if (warnings_.size() < kMaxWarnings)
    warnings_.push_back(warning.size() <= 2000 ? warning : valid_utf8(warning, 2000));
  else
    warnings_not_kept_.insert(std::hash<std::string>{}(warning));
}

void Connection::hold_refresh_open() {
  refresh_left_open_ = true;
  if (transaction_hooks_) return;
  transaction_hooks_ = true;
  // (Hooks run inside SQLite: no SQL, nothing thrown; each only reads and clears the flag.)
  sqlite3_commit_hook(
      db_,
      [](void* self) -> int {
        auto* connection = static_cast<Connection*>(self);
        if (!connection->refresh_left_open_) return 0;
        connection->refresh_left_open_ = false;
        try {
          connection->add_warning(
              "pp_refresh: COMMIT was turned into ROLLBACK: the transaction held part of a refresh that was "
              "interrupted, which would have been stored as if whole; nothing of the transaction was stored, "
              "neither that part nor what it did before or since. Run pp_refresh again (and what the "
              "transaction did besides)");
        } catch (...) {  // out of memory: the rollback matters, the words do not
        }
        return 1;
      },
      this);
  sqlite3_rollback_hook(
      db_, [](void* self) { static_cast<Connection*>(self)->refresh_left_open_ = false; }, this);
}

std::vector<std::string> Connection::warnings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> warnings = warnings_;
  if (!warnings_not_kept_.empty())
    warnings.push_back(std::to_string(warnings_not_kept_.size()) + " more warnings were not kept: pp_last_warnings() "
                       "keeps the first " + std::to_string(kMaxWarnings) + " of a statement");
  return warnings;
}

std::vector<Connection::StatementRun> Connection::running_statements() const {
  std::vector<StatementRun> running;
  for (sqlite3_stmt* s = sqlite3_next_stmt(db_, nullptr); s; s = sqlite3_next_stmt(db_, s))
    if (sqlite3_stmt_busy(s)) running.emplace_back(s, sqlite3_stmt_status(s, SQLITE_STMTSTATUS_RUN, 0));
  std::sort(running.begin(), running.end());
  return running;
}

uint64_t Connection::cursor_opened() {
  std::vector<StatementRun> running = running_statements();
  std::lock_guard<std::mutex> lock(mutex_);
  // A new statement begins: the first cursor, or one of a statement (or a statement's run)
  // that was not running when the warnings were cleared (another statement holds a cursor
  // open). The statements a refresh runs are its own: their warnings are the refresh's.
  if (open_cursors_.empty() ||
      (!engine_writing() && !std::includes(warned_statements_.begin(), warned_statements_.end(), running.begin(),
                                           running.end()))) {
    warnings_.clear();
    warnings_not_kept_.clear();
    warned_statements_ = std::move(running);
  }
  open_cursors_.push_back(++last_cursor_);  // (ascending: serials only grow)
  return last_cursor_;
}

void Connection::cursor_closed(uint64_t cursor) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = std::lower_bound(open_cursors_.begin(), open_cursors_.end(), cursor);
  if (it != open_cursors_.end() && *it == cursor) open_cursors_.erase(it);
  if (open_cursors_.empty()) {  // no statement runs: the next is a new one, whatever its address
    cache_.clear();
    cache_bytes_ = 0;
    refresh_statements_.clear();
    refresh_calls_.clear();
  }
}

bool Connection::first_refresh_call(const std::vector<std::string>& call) {
  std::vector<StatementRun> running = running_statements();
  std::lock_guard<std::mutex> lock(mutex_);
  if (running != refresh_statements_) {
    refresh_statements_ = std::move(running);
    refresh_calls_.clear();
  }
  return refresh_calls_.insert(call).second;
}

uint64_t Connection::call_number(const std::string& key) {
  std::vector<StatementRun> running = running_statements();
  std::lock_guard<std::mutex> lock(mutex_);
  // (Those of statements that ended, or ran again, go: a run of a statement starts afresh.)
  for (auto it = call_numbers_.begin(); it != call_numbers_.end();)
    it = std::includes(running.begin(), running.end(), it->first.begin(), it->first.end()) ? std::next(it)
                                                                                           : call_numbers_.erase(it);
  std::map<std::string, uint64_t>& numbers = call_numbers_[std::move(running)];
  return numbers.emplace(key, numbers.size()).first->second;
}

int64_t Connection::statement_now_ms() {
  std::vector<StatementRun> running = running_statements();
  std::lock_guard<std::mutex> lock(mutex_);
  // (Those of statements that ended, or ran again, go, as in call_number.)
  for (auto it = statement_clocks_.begin(); it != statement_clocks_.end();)
    it = std::includes(running.begin(), running.end(), it->first.begin(), it->first.end())
             ? std::next(it)
             : statement_clocks_.erase(it);
  const auto [at, added] = statement_clocks_.try_emplace(std::move(running), 0);
  if (added)
    at->second = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  return at->second;
}

std::shared_ptr<const void> Connection::cached(
    const std::string& key, uint64_t cursor, size_t& bytes_hint,
    const std::function<std::shared_ptr<const void>(size_t&)>& compute) {
  std::vector<StatementRun> running = running_statements();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end() &&
        (std::binary_search(it->second.cursors.begin(), it->second.cursors.end(), cursor) ||
         std::includes(it->second.statements.begin(), it->second.statements.end(), running.begin(), running.end())))
      return it->second.value;
  }
  std::shared_ptr<const void> value = compute(bytes_hint);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!open_cursors_.empty()) {
    if (auto old = cache_.find(key); old != cache_.end()) {
      cache_bytes_ -= old->second.bytes;
      cache_.erase(old);
    }
    if (cache_bytes_ + bytes_hint <= kMaxCacheBytes) {
      cache_.emplace(key, CachedAnswer{value, bytes_hint, open_cursors_, std::move(running)});
      cache_bytes_ += bytes_hint;
    }
  }
  return value;
}

}  // namespace pp
