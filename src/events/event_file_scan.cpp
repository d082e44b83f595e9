#include "events/event_file_scan.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "events/event_files.hpp"
#include "events/file_errors.hpp"

namespace pp {

void EventFileScan::start(const std::string& path, const Positions& resume) {
  reader_.reset();
  next_file_ = 0;
  skipped_ = 0;
  resume_ = resume;
  ended_.clear();
  std::vector<std::string> notes;
  files_ = event_files(path, notes);
  for (const std::string& note : notes) warn_(note);
}

// Where to go on reading `file`: its resume position when the file still ends a line there.
EventFileScan::Position EventFileScan::resume_position(const std::string& file) {
  const auto found = resume_.find(file);
  if (found == resume_.end() || found->second.bytes <= 0) return {};
  const Position position = found->second;
  int fd;
  do fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_file_error("cannot open", file, errno);
  char last = 0;
  ssize_t n;
  do n = ::pread(fd, &last, 1, position.bytes - 1);
  while (n < 0 && errno == EINTR);
  const int error = errno;
  ::close(fd);
  if (n < 0) throw_file_error("cannot read", file, error);
  if (n == 1 && last == '\n') return position;  // n == 0: the file is shorter now
  warn_(file + " no longer ends a line at byte " + std::to_string(position.bytes) +
        ", where it was last read (truncated or replaced?); reading it again from the start");
  return {};
}

bool EventFileScan::next(std::string_view& line, bool& complete) {
  for (;;) {
    if (!reader_) {
      if (next_file_ == files_.size()) return false;
      source_file_ = files_[next_file_++];
      const Position from = resume_.empty() ? Position{} : resume_position(source_file_);
      reader_ = std::make_unique<LineReader>(source_file_, from.bytes, from.lines);
    }
    if (reader_->next(line, complete)) return true;
    finish_file();
  }
}

bool EventFileScan::next_record(LayerEvent& event, LineKind& kind, std::string_view& line,
                                bool& complete) {
  while (next(line, complete)) {
    kind = parse_event_line(line, event, problem_);
    if (kind == LineKind::Event || kind == LineKind::JobHeader) return true;
    if (kind == LineKind::Malformed) skip(problem_, complete);
  }
  return false;
}

void EventFileScan::skip(const std::string& problem, bool complete) {
  if (skipped_++ == 0) {
    first_skipped_line_ = reader_->line_number();
    first_skipped_problem_ = complete ? problem : "incomplete last line (" + problem + ")";
  }
}

void EventFileScan::finish_file() {
  if (skipped_ > 0)
    warn_("skipped " + std::to_string(skipped_) +
          (skipped_ == 1 ? " malformed line in " : " malformed lines in ") + source_file_ +
          " (first at line " + std::to_string(first_skipped_line_) + ": " + first_skipped_problem_ + ")");
  skipped_ = 0;
  ended_[source_file_] = Position{reader_->complete_bytes(), reader_->complete_lines()};
  reader_.reset();
}

}  // namespace pp
