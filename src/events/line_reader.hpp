// Reading a file line by line in bounded memory: one growing buffer the size of the longest
// line, so a scan of a multi-GB file costs no more memory than a scan of a small one, and a
// file that is still being written is read up to its current end.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pp {

class LineReader {
 public:
  // Reads from byte `offset` (the start of a line), numbering lines after `lines_before`.
  // Throws pp::Error naming the file when it cannot be opened or read.
  LineReader(const std::string& path, int64_t offset = 0, int64_t lines_before = 0);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its '\n' (valid until the next call), or false at the file's
  // current end. `complete` is false for a last line with no '\n' (possibly torn).
  bool next(std::string_view& line, bool& complete);
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
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;  // unread bytes are buffer_[begin_, end_)
  bool eof_ = false;
  int64_t line_number_ = 0;
  int64_t complete_bytes_ = 0, complete_lines_ = 0;
};

}  // namespace pp
