// The error of a failed system call on a file: "cannot open 'PATH': No such file or directory".
#pragma once
#include <cstring>
#include <string>

#include "core/errors.hpp"

namespace pp {

[[noreturn]] inline void throw_file_error(const char* what, const std::string& path, int error) {
  throw Error(std::string(what) + " '" + path + "': " + std::strerror(error));
}

}  // namespace pp
