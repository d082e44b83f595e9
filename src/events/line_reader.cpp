#include "events/line_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "events/file_errors.hpp"
#include "events/regular_file.hpp"

namespace pp {

namespace {
constexpr size_t kReadBytes = 256 * 1024;
}

LineReader::LineReader(const std::string& path, int64_t offset, int64_t lines_before,
                       size_t max_line_bytes, std::function<void()> poll)
    : path_(path), max_line_bytes_(std::max<size_t>(max_line_bytes, 1)), poll_(std::move(poll)),
      line_number_(lines_before), complete_bytes_(offset), complete_lines_(lines_before) {
  struct stat st;
  fd_ = open_regular_file(path, st);
  if (offset > 0 && ::lseek(fd_, offset, SEEK_SET) < 0) {
    const int error = errno;
    ::close(fd_);
    throw_file_error("cannot seek in", path, error);
  }
  ::posix_fadvise(fd_, offset, 0, POSIX_FADV_SEQUENTIAL);
  buffer_.resize(std::min(kReadBytes, max_line_bytes_ + 1));
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool LineReader::fill() {
  if (poll_) poll_();
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  // A line longer than the buffer: grow it, up to one byte past the longest line kept.
  if (end_ == buffer_.size()) buffer_.resize(std::min(buffer_.size() * 2, max_line_bytes_ + 1));
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
  too_long_ = false;
  int64_t dropped = 0;      // bytes of a too long line passed over
  size_t scanned = begin_;  // bytes before this offset hold no '\n'
  for (;;) {
    const char* data = buffer_.data();
    if (scanned < end_) {
      const void* newline = std::memchr(data + scanned, '\n', end_ - scanned);
      if (newline) {
        const size_t stop = static_cast<const char*>(newline) - data;
        line_bytes_ = dropped + static_cast<int64_t>(stop - begin_);
        too_long_ = line_bytes_ > static_cast<int64_t>(max_line_bytes_);
        line = too_long_ ? std::string_view() : std::string_view(data + begin_, stop - begin_);
        complete_bytes_ += line_bytes_ + 1;
        ++complete_lines_;
        begin_ = stop + 1;
        complete = true;
        ++line_number_;
        return true;
      }
    }
    if (end_ - begin_ > max_line_bytes_) {  // too long to keep: pass over what is buffered
      dropped += static_cast<int64_t>(end_ - begin_);
      begin_ = end_;
    }
    scanned = end_ - begin_;  // offsets move to the front in fill()
    if (eof_ || !fill()) break;
  }
  if (begin_ == end_ && dropped == 0) return false;
  line_bytes_ = dropped + static_cast<int64_t>(end_ - begin_);
  too_long_ = line_bytes_ > static_cast<int64_t>(max_line_bytes_);
  line = too_long_ ? std::string_view() : std::string_view(buffer_.data() + begin_, end_ - begin_);
  begin_ = end_;
  complete = false;
  ++line_number_;
  return true;
}

}  // namespace pp
