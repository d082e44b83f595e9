// Shared by the fuzz targets: a failed property aborts, so libFuzzer keeps the input as a crash
// (build-fuzz/fuzz/artifacts/TARGET-crash-*) and the CTest run fails.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#define PP_FUZZ_CHECK(cond, ...)                                                          \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "\nfuzz check failed at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                  \
      std::fputc('\n', stderr);                                                           \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

namespace pp_fuzz {

// An exception the parser's contract does not allow (anything but pp::Error where errors are
// expected): print what it says before aborting, so the report names it.
[[noreturn]] inline void unexpected_exception(const char* where, const std::exception& e) {
  std::fprintf(stderr, "\n%s: unexpected exception: %s\n", where, e.what());
  std::abort();
}

inline std::string printable(const std::string& s, size_t limit = 200) {
  std::string out;
  for (unsigned char c : s.substr(0, limit)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + (s.size() > limit ? "..." : "");
}

}  // namespace pp_fuzz
