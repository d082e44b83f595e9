#include "events/event_file_scan.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "events/event_files.hpp"
#include "events/file_errors.hpp"
#include "events/regular_file.hpp"

namespace pp {
namespace {

// Reads up to `size` bytes at `offset`; returns how many (fewer only at the end of the file).
size_t read_at(int fd, const std::string& file, char* data, size_t size, int64_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, data + done, size - done, static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_file_error("cannot read", file, errno);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

// 64-bit FNV-1a, as a signed integer for SQLite.
int64_t fnv1a(const char* data, size_t size) {
  uint64_t hash = 14695981039346656037ull;
  for (size_t i = 0; i < size; ++i) hash = (hash ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  int64_t out;
  std::memcpy(&out, &hash, sizeof out);
  return out;
}

struct OpenFile {
  int fd;
  ~OpenFile() { ::close(fd); }
};

// The absolute path of `file` with every link resolved; empty where it cannot be resolved.
std::string real_path_of(const std::string& file) {
  char* resolved = ::realpath(file.c_str(), nullptr);
  if (!resolved) return {};
  std::string out(resolved);
  std::free(resolved);
  return out;
}

bool is_link(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// Whether nothing is at `path` any more (removed or renamed away), as opposed to unreadable.
bool is_gone(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) != 0 && errno == ENOENT;
}

}  // namespace

// The head of `path` (head fields only): its first line, or its first kHeadBytes; unknown (0)
// while that is not whole. A compact file's head is its first two lines (`compact` says which).
EventFileScan::Position EventFileScan::head_of(const std::string& path, const std::string& real_path, bool* compact) {
  struct stat st;
  const OpenFile open{open_regular_file(path, st)};
  char head[kHeadBytes];
  const size_t n = read_at(open.fd, path, head, sizeof head, 0);
  const void* newline = std::memchr(head, '\n', n);
  size_t head_bytes = newline ? static_cast<size_t>(static_cast<const char*>(newline) - head) + 1
                              : n == sizeof head ? n : 0;
  const bool is_compact = newline && is_format_line(std::string_view(head, head_bytes));
  if (is_compact) {  // every compact file starts with the same line: the header line too
    const void* second = std::memchr(head + head_bytes, '\n', n - head_bytes);
    head_bytes = second ? static_cast<size_t>(static_cast<const char*>(second) - head) + 1
                        : n == sizeof head ? n : 0;
  }
  if (compact) *compact = is_compact;
  return Position{0, 0, static_cast<int64_t>(head_bytes), head_bytes ? fnv1a(head, head_bytes) : 0, {}, real_path};
}

void EventFileScan::start(const std::string& path, const Positions* resume, Replaced replaced) {
  reader_.reset();
  next_file_ = 0;
  skipped_ = 0;
  resuming_ = resume != nullptr;
  resume_ = resume ? *resume : Positions{};
  replaced_ = std::move(replaced);
  ended_.clear();
  renamed_.clear();
  std::vector<std::string> notes;
  files_.clear();
  for (std::string& file : event_files(path, notes)) files_.push_back({file, file, {}});
  for (const std::string& note : notes) warn_(note);
  name_files_by_real_path();
}

// A file named twice in this scan (a link beside its target, a path and a glob) is read once,
// by the name that is not a link where one is.
// When resuming, a file not in resume_ by its name may be one of its files by another (a
// relative and an absolute path, a link): the real paths say, and the file keeps the name it
// was recorded under. Only then are the recorded files' real paths needed, taken from resume_
// (or resolved now, for a file recorded before real paths were).
void EventFileScan::name_files_by_real_path() {
  std::map<std::string, std::string> recorded;  // real path -> name
  bool recorded_known = false;
  std::map<std::string, size_t> named;  // in this scan: real path -> its file in kept
  std::vector<NamedFile> kept;
  std::set<std::string> scanned;  // the names this scan reads files by
  for (const NamedFile& file : files_) scanned.insert(file.path);
  for (NamedFile& file : files_) {
    file.real_path = real_path_of(file.path);
    const std::string& real = file.real_path;
    if (!real.empty()) {
      if (resuming_ && !resume_.count(file.name)) {
        if (!recorded_known) {
          for (auto& [name, position] : resume_) {
            if (position.real_path.empty()) position.real_path = real_path_of(name);
            if (!position.real_path.empty()) recorded.emplace(position.real_path, name);
          }
          recorded_known = true;
        }
        const auto found = recorded.find(real);
        if (found != recorded.end()) {
          file.name = found->second;
        } else {
          const std::string renamed = renamed_from(file, scanned);
          if (!renamed.empty()) file.name = renamed;
        }
      }
      const auto [before, added] = named.emplace(real, kept.size());
      if (!added) {
        // The file itself rather than a link to it (a link may later point elsewhere).
        NamedFile& first = kept[before->second];
        if (is_link(first.path) && !is_link(file.path)) std::swap(first, file);
        warn_(file.path + " is the same file as " + first.path + "; read once");
        continue;
      }
    }
    kept.push_back(std::move(file));
  }
  files_ = std::move(kept);
}

// The name a file was recorded under before it was renamed to `file.path` (empty: none), so
// that its events are not imported again under the new name: a recorded file that is gone
// from its name (and is not named in this scan) whose head is this file's. A head is the first
// line, which names the job, the process and the first event's time, so another file with the
// same head holds the same events. Each recorded file is taken by one file at most.
std::string EventFileScan::renamed_from(const NamedFile& file, const std::set<std::string>& scanned) {
  bool head_known = false;
  Position head;
  for (const auto& [name, position] : resume_) {
    if (position.head_bytes <= 0 || position.bytes <= 0 || scanned.count(name) || renamed_.count(name)) continue;
    if (!head_known) {
      try {
        head = head_of(file.path, file.real_path, nullptr);
      } catch (const Error&) {
        return {};  // (unreadable, or removed since the listing: its opening says so, or skips it)
      }
      head_known = true;
    }
    // (The heads first: a database that recorded thousands of files checks on disk only those
    // whose head is this one's.)
    if (head.head_bytes != position.head_bytes || head.head_hash != position.head_hash) continue;
    if (!is_gone(position.real_path.empty() ? name : position.real_path) || !is_gone(name)) continue;
    renamed_.insert(name);
    warn_(name + " was renamed to " + file.path + " since it was last read; reading it on from line " +
          std::to_string(position.lines + 1) + " (its rows keep source_file '" + name + "')");
    return name;
  }
  return {};
}

// Where to go on reading `file`, whose head is `head`: its resume position when it is still
// the file read then and still ends a line there.
EventFileScan::Position EventFileScan::resume_position(const std::string& file, const Position& head) {
  const auto found = resume_.find(file);
  if (found == resume_.end() || found->second.bytes <= 0) return {};
  const Position position = found->second;
  if (position.head_bytes > 0 &&
      (head.head_bytes != position.head_bytes || head.head_hash != position.head_hash)) {
    const std::string kept = replaced_ ? replaced_(file) : std::string();
    warn_(file + " was replaced since it was last read (its first line is not the one read then); reading it "
          "from the start" + (kept.empty() ? std::string() : "; the rows read from it before are kept as source_file '" + kept + "'"));
    return {};
  }
  struct stat st;
  const OpenFile open{open_regular_file(path_, st)};
  char last = 0;
  if (read_at(open.fd, path_, &last, 1, position.bytes - 1) == 1 && last == '\n') return position;
  warn_(file + " no longer ends a line at byte " + std::to_string(position.bytes) +
        ", where it was last read (truncated?); reading it again from the start (lines read before are kept once)");
  return {};
}

bool EventFileScan::next(std::string_view& line, bool& complete) {
  for (;;) {
    if (!reader_) {
      if (next_file_ == files_.size()) return false;
      const NamedFile& next_named = files_[next_file_++];
      path_ = next_named.path;
      source_file_ = next_named.name;
      real_path_ = next_named.real_path;
      try {
        open_next();
      } catch (const Error&) {
        // Removed or renamed between the listing and now (a cleanup, a rename): its position
        // stays as it was, and a later scan finds it by its new name.
        if (!is_gone(path_)) throw;
        warn_(path_ + " was removed or renamed after the files were listed; skipped (a later refresh reads it "
              "on under its new name, if it was renamed)");
        reader_.reset();
      }
      continue;
    }
    interrupted_.poll();
    if (reader_->next(line, complete)) {
      if (!reader_->too_long()) return true;
      warn_("skipped line " + std::to_string(reader_->line_number()) + " of " + source_file_ + ": " +
            std::to_string(reader_->line_bytes()) + " bytes, longer than the " + std::to_string(kMaxLineBytes) +
            " a line may have" + (complete ? "" : " (an incomplete last line)"));
      continue;
    }
    finish_file();
  }
}

// Opens the file named by path_, source_file_ and real_path_: reader_ reads it on from its
// resume position (or from the start).
void EventFileScan::open_next() {
  Position from;
  if (resuming_) {
    bool compact = false;
    head_ = head_of(path_, real_path_, &compact);
    from = resume_position(source_file_, head_);
    decoder_.reset(source_file_);
    std::string problem;
    if (from.bytes > 0 && compact && !decoder_.restore(from.state, problem)) {
      warn_(source_file_ + ": cannot read on from byte " + std::to_string(from.bytes) + ", where it was last read: " +
            problem + "; reading it from the start (lines read before are kept once)");
      from = {};
      decoder_.reset(source_file_);
    }
  } else {
    decoder_.reset(source_file_);
  }
  reader_ = std::make_unique<LineReader>(path_, from.bytes, from.lines, kMaxLineBytes,
                                         [this] { interrupted_.check(); });
}

bool EventFileScan::next_decoded(LayerEvent& event, LineKind& kind, std::string_view& line, std::string& problem,
                                 bool& complete) {
  if (!next(line, complete)) return false;
  kind = decoder_.decode(line, reader_->line_number(), complete, event, problem);
  return true;
}

bool EventFileScan::next_record(LayerEvent& event, LineKind& kind, std::string_view& line,
                                bool& complete) {
  while (next_decoded(event, kind, line, problem_, complete)) {
    if (kind == LineKind::Event || kind == LineKind::JobHeader) return true;
    if (kind == LineKind::Malformed) skip(problem_, complete);
  }
  return false;
}

void EventFileScan::skip(const std::string& problem, bool complete) {
  if (skipped_++ == 0) {
    first_skipped_line_ = reader_->line_number();
    // (a compact line's decoder says so itself: a torn compact line is not parsed)
    const bool said = problem.rfind("incomplete last line", 0) == 0;
    first_skipped_problem_ = complete || said ? problem : "incomplete last line (" + problem + ")";
  }
}

void EventFileScan::finish_file() {
  if (skipped_ > 0)
    warn_("skipped " + std::to_string(skipped_) +
          (skipped_ == 1 ? " malformed line in " : " malformed lines in ") + source_file_ +
          " (first at line " + std::to_string(first_skipped_line_) + ": " + first_skipped_problem_ + ")");
  skipped_ = 0;
  ended_[source_file_] = Position{reader_->complete_bytes(), reader_->complete_lines(), head_.head_bytes,
                                  head_.head_hash, decoder_.state(), head_.real_path};
  reader_.reset();
}

}  // namespace pp
