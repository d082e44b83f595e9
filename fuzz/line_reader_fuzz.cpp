// The line reader under layer_events, over arbitrary file contents (an in-memory file read
// through its /proc/self/fd path, exactly as the extension reads a path), and the event parser
// on every line it returns.
//
// Checked: the lines, joined with '\n', give back the file exactly; no line holds a '\n'; only a
// last line without '\n' is incomplete; line numbers count from 1; the end stays the end.
//
// Input: the file's bytes, except that 0xFF followed by a byte c stands for (c + 1) * 1024 copies
// of the byte before it ('a' after a newline: long lines, not a million short ones), so short
// inputs make lines longer than the reader's 256 KiB buffer. Files stop at 1 MiB.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/errors.hpp"
#include "events/event_line.hpp"
#include "events/line_reader.hpp"
#include "fuzz/fuzz_check.hpp"

namespace {

constexpr size_t kMaxFile = 1 << 20;  // four times the reader's first buffer

std::string expand(const uint8_t* data, size_t size) {
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0xFF && i + 1 < size) {
      const char repeated = out.empty() || out.back() == '\n' ? 'a' : out.back();
      const size_t n = (size_t{data[i + 1]} + 1) * 1024;
      out.append(std::min(n, kMaxFile - std::min(kMaxFile, out.size())), repeated);
      ++i;
    } else if (out.size() < kMaxFile) {
      out += static_cast<char>(data[i]);
    }
  }
  return out;
}

int memory_file() {
  static const int fd = [] {
    const int fd = memfd_create("pp-line-reader-fuzz", MFD_CLOEXEC);
    PP_FUZZ_CHECK(fd >= 0, "memfd_create failed");
    return fd;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string content = expand(data, size);
  const int fd = memory_file();
  PP_FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate");
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = pwrite(fd, content.data() + done, content.size() - done, static_cast<off_t>(done));
    PP_FUZZ_CHECK(n > 0, "pwrite");
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);

  try {
    pp::LineReader reader(path);
    std::string joined;
    std::string_view line;
    bool complete = true;
    int64_t lines = 0;
    bool seen_incomplete = false;
    while (reader.next(line, complete)) {
      ++lines;
      PP_FUZZ_CHECK(!seen_incomplete, "a line after an incomplete one");
      PP_FUZZ_CHECK(reader.line_number() == lines, "line_number %lld for line %lld",
                    static_cast<long long>(reader.line_number()), static_cast<long long>(lines));
      PP_FUZZ_CHECK(line.find('\n') == std::string_view::npos, "line %lld holds a newline",
                    static_cast<long long>(lines));
      joined.append(line.data(), line.size());
      if (complete) {
        joined += '\n';
      } else {
        seen_incomplete = true;
        PP_FUZZ_CHECK(!line.empty(), "an empty incomplete line");
      }
      pp::LayerEvent event;
      std::string problem;
      if (pp::parse_event_line(line, event, problem) == pp::LineKind::Malformed)
        PP_FUZZ_CHECK(!problem.empty(), "malformed without a problem");
    }
    PP_FUZZ_CHECK(joined == content, "lines joined (%zu bytes) differ from the file (%zu bytes)",
                  joined.size(), content.size());
    PP_FUZZ_CHECK(seen_incomplete == (!content.empty() && content.back() != '\n'),
                  "incomplete last line flag wrong");
    PP_FUZZ_CHECK(!reader.next(line, complete) && reader.line_number() == lines,
                  "the end did not stay the end");
  } catch (const pp::Error& e) {
    PP_FUZZ_CHECK(false, "reading the memory file failed: %s", e.what());
  } catch (const std::exception& e) {
    pp_fuzz::unexpected_exception("LineReader", e);
  }
  return 0;
}
