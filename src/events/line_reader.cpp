#include "events/line_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "events/file_errors.hpp"

namespace pp {

LineReader::LineReader(const std::string& path, int64_t offset, int64_t lines_before)
    : path_(path), line_number_(lines_before), complete_bytes_(offset),
      complete_lines_(lines_before) {
  do fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw_file_error("cannot open", path, errno);
  if (offset > 0 && ::lseek(fd_, offset, SEEK_SET) < 0) {
    const int error = errno;
    ::close(fd_);
    throw_file_error("cannot seek in", path, error);
  }
  ::posix_fadvise(fd_, offset, 0, POSIX_FADV_SEQUENTIAL);
  buffer_.resize(256 * 1024);
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool LineReader::fill() {
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // a line longer than the buffer
  ssize_t n;
  do n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
  while (n < 0 && errno == EINTR);
  if (n < 0) throw_file_error("cannot read", path_, errno);
  if (n == 0) {
    eof_ = true;
    return false;
  }
  end_ += static_cast<size_t>(n);
  return true;
}

bool LineReader::next(std::string_view& line, bool& complete) {
  size_t scanned = begin_;  // bytes before this offset hold no '\n'
  for (;;) {
    const char* data = buffer_.data();
    if (scanned < end_) {
      const void* newline = std::memchr(data + scanned, '\n', end_ - scanned);
      if (newline) {
        const size_t stop = static_cast<const char*>(newline) - data;
        line = std::string_view(data + begin_, stop - begin_);
        complete_bytes_ += static_cast<int64_t>(stop + 1 - begin_);
        ++complete_lines_;
        begin_ = stop + 1;
        complete = true;
        ++line_number_;
        return true;
      }
    }
    scanned = end_ - begin_;  // offsets move to the front in fill()
    if (eof_ || !fill()) break;
  }
  if (begin_ == end_) return false;
  line = std::string_view(buffer_.data() + begin_, end_ - begin_);
  begin_ = end_;
  complete = false;
  ++line_number_;
  return true;
}

}  // namespace pp
