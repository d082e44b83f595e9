// Reading a file line by line in bounded memory: one growing buffer the size of the longest
// line, up to a bound, so a scan of a multi-GB file costs no more memory than a scan of a small
// one, and a file that is still being written is read up to its current end. A line longer
// than the bound is passed over without being kept (too_long()).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pp {

// The longest line kept: the hook client's lines are under 1 KiB, its job header a few KiB.
constexpr size_t kMaxLineBytes = 1 << 20;

class LineReader {
 public:
  // Reads from byte `offset` (the start of a line), numbering lines after `lines_before`.
  // Only regular files are opened (open_regular_file). Throws pp::Error naming the file when
  // it cannot be opened or read. `poll` runs before every read(2) (at most 256 KiB apart), so
  // a caller can stop a long scan by throwing from it.
  LineReader(const std::string& path, int64_t offset = 0, int64_t lines_before = 0,
             size_t max_line_bytes = kMaxLineBytes, std::function<void()> poll = {});
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its '\n' (valid until the next call), or false at the file's
  // current end. `complete` is false for a last line with no '\n' (possibly torn). A line
  // longer than max_line_bytes comes back empty, with too_long() true.
  bool next(std::string_view& line, bool& complete);
  // Whether the line last returned was longer than max_line_bytes, and how long it was.
  bool too_long() const { return too_long_; }
  int64_t line_bytes() const { return line_bytes_; }
  // 1-based number of the line last returned.
  int64_t line_number() const { return line_number_; }
  // Where the lines returned so far end, counting only lines that ended in '\n': the byte
  // offset and line count to resume from (a line without '\n' may still be being written).
  int64_t complete_bytes() const { return complete_bytes_; }
  int64_t complete_lines() const { return complete_lines_; }

 private:
  bool fill();  // reads more; false at end of file

  std::string path_;
  int fd_ = -1;
  size_t max_line_bytes_;
  std::function<void()> poll_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;  // unread bytes are buffer_[begin_, end_)
  bool eof_ = false;
  bool too_long_ = false;
  int64_t line_bytes_ = 0;
  int64_t line_number_ = 0;
  int64_t complete_bytes_ = 0, complete_lines_ = 0;
};

}  // namespace pp
