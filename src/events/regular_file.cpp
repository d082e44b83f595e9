#include "events/regular_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "core/errors.hpp"
#include "events/file_errors.hpp"

namespace pp {

const char* file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

int open_regular_file(const std::string& path, struct stat& st) {
  int fd;
  do fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_file_error("cannot open", path, errno);
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw_file_error("cannot stat", path, error);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is " + file_kind(st.st_mode) + ", not a regular file");
  }
  return fd;
}

}  // namespace pp
