// Opening an event file without trusting what its name stands for: a FIFO would block the
// open (and every read) forever, and a device such as /dev/zero or /dev/urandom never ends.
// Only regular files are read.
#pragma once
#include <sys/stat.h>

#include <string>

namespace pp {

// What kind of file a mode names, for messages: "a FIFO", "a character device", "a socket".
const char* file_kind(mode_t mode);

// Opens `path` for reading (O_NONBLOCK, so opening a FIFO cannot block, and O_CLOEXEC) and
// checks with fstat that it is a regular file. Throws pp::Error "cannot open 'PATH': ..." when
// it cannot be opened, and "'PATH' is a FIFO, not a regular file" when it is something else.
// Returns the descriptor, which the caller closes; `st` receives its fstat.
int open_regular_file(const std::string& path, struct stat& st);

}  // namespace pp
