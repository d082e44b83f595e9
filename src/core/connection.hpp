// State that belongs to one SQLite connection: its settings, the warnings of its latest
// statement, and the per-statement response cache of the Prometheus tables. The extension's
// init creates one Connection per sqlite3* and every function and module it registers holds a
// shared reference, so the state lives exactly as long as the last object that uses it.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/http_client.hpp"
#include "core/settings.hpp"
#include "core/sqlite_api.hpp"

namespace pp {

class Connection {
 public:
  explicit Connection(sqlite3* db) : db_(db) { http_.watch_interrupts(db); }
  sqlite3* db() const { return db_; }

  Settings& settings() { return settings_; }

  // While the engine writes its tables (pp_refresh), settings cannot change: a CHECK
  // constraint or trigger that runs during the write cannot redirect the requests the write
  // makes, and every step of it reads the same settings. pp_config(key, value) refuses then.
  class WriteScope {
   public:
    explicit WriteScope(Connection& c) : c_(c) { ++c_.writing_; }
    ~WriteScope() { --c_.writing_; }
    WriteScope(const WriteScope&) = delete;
    WriteScope& operator=(const WriteScope&) = delete;

   private:
    Connection& c_;
  };
  bool engine_writing() const { return writing_ > 0; }
  HttpClient& http() { return http_; }

  // Warnings (Prometheus "warnings", skipped input lines, ...) of the current statement, read
  // with pp_last_warnings(). They are cleared when a statement opens its first cursor on one
  // of the extension's tables, so they describe the latest statement that read data. The first
  // kMaxWarnings distinct ones are kept; warnings() ends with how many more there were.
  static constexpr size_t kMaxWarnings = 100;
  void add_warning(const std::string& warning);
  // A callback for code below the SQL boundary: adds "NAME: " + its warning.
  std::function<void(const std::string&)> warner(const char* name) {
    return [this, name](const std::string& warning) { add_warning(std::string(name) + ": " + warning); };
  }
  std::vector<std::string> warnings() const;

  // Cursors of the extension's tables call these from xOpen/xClose; cursor_opened returns the
  // cursor's serial number (never reused). While at least one is open a statement is running:
  // its identical requests are answered from the cache (a nested loop, a subquery, a UNION of
  // the same call). When the last closes, the cache is dropped, so the next statement sees fresh
  // data; while one is held open (a cursor not read to its end), an answer serves only the
  // cursors that were open when it came and the statements (and runs of them) that were
  // running then, so a later statement, or the same one run again, still asks again.
  uint64_t cursor_opened();
  void cursor_closed(uint64_t cursor);

  // Whether `call` (pp_refresh's arguments) is the first such call of the statement running now
  // (of its run: a statement run again starts afresh), whichever cursor runs it: a subquery
  // opens a cursor for each of its runs.
  bool first_refresh_call(const std::vector<std::string>& call);

  // The number of a table-valued call within the statement running now (of its run): 0 for its
  // first, the same number for a call with the same key, the next for a new one. Kept across
  // the statement's cursors, since a MULTI-INDEX OR closes a table's cursor and opens another
  // for each branch (table_function.hpp, first_rowid).
  uint64_t call_number(const std::string& key);

  // "now" in the time arguments of the statement running now (of its run), in unix ms: the wall
  // clock read at its first such call and kept for its others, so that 'now' is one time
  // whatever the plan (a correlated subquery opens a cursor for each outer row, one per
  // statement run).
  int64_t statement_now_ms();

  // An interrupted pp_refresh leaves its savepoint open: SQLite runs no statement (not even
  // ROLLBACK TO) while the interrupt is in force, so the next pp_refresh rolls it back. Until
  // then, or until a ROLLBACK, a COMMIT on the connection would store part of a refresh: the
  // commit hook turns it into a rollback (and says so in pp_last_warnings). Called only where
  // the refresh had written a row.
  void hold_refresh_open();
  bool refresh_left_open() const { return refresh_left_open_; }
  void refresh_closed() { refresh_left_open_ = false; }

  // A statement's run: its address and how often it had been run (reset) before. The runs of
  // the connection's statements that are running now, in order.
  using StatementRun = std::pair<sqlite3_stmt*, int>;
  std::vector<StatementRun> running_statements() const;

  // Returns the cached value for key, or computes, caches (if small enough) and returns it.
  // Cached values are immutable and shared, so a nested-loop join reuses one response. The key
  // names everything that shapes the answer (the URL, the request, headers and credentials).
  std::shared_ptr<const void> cached(const std::string& key, uint64_t cursor, size_t& bytes_hint,
                                     const std::function<std::shared_ptr<const void>(size_t&)>& compute);

 private:
  sqlite3* db_;
  Settings settings_;
  int writing_ = 0;
  bool refresh_left_open_ = false;
  bool transaction_hooks_ = false;  // the commit and rollback hooks are this connection's
  HttpClient http_;
  mutable std::mutex mutex_;
  std::vector<std::string> warnings_;
  std::unordered_set<size_t> warnings_not_kept_;  // hashes of the distinct ones past kMaxWarnings
  std::vector<StatementRun> warned_statements_;  // running when warnings_ was last cleared
  uint64_t last_cursor_ = 0;
  std::vector<uint64_t> open_cursors_;  // serials, ascending
  struct CachedAnswer {
    std::shared_ptr<const void> value;
    size_t bytes = 0;
    std::vector<uint64_t> cursors;  // open when it came: those it serves
    std::vector<StatementRun> statements;  // running when it came: their later cursors too
  };
  std::map<std::string, CachedAnswer> cache_;
  std::vector<StatementRun> refresh_statements_;  // running at the calls in refresh_calls_
  std::set<std::vector<std::string>> refresh_calls_;
  // The calls' numbers by the statements running at each call: a statement run between the
  // rows of another (a loop that queries as it reads) numbers its own calls, and leaves the
  // other's as they were for its later branches.
  std::map<std::vector<StatementRun>, std::map<std::string, uint64_t>> call_numbers_;
  std::map<std::vector<StatementRun>, int64_t> statement_clocks_;  // "now" by the statements running
  size_t cache_bytes_ = 0;
};

using ConnectionPtr = std::shared_ptr<Connection>;

// The state of db's connection: the one its functions already share where the extension was
// loaded into db before (a second `.load` keeps the settings), else a new one.
ConnectionPtr connection_of(sqlite3* db);

// The connection of a function registered with uses_connection (core/registration.hpp).
inline Connection& connection_from(void* user_data) { return **static_cast<ConnectionPtr*>(user_data); }

}  // namespace pp
