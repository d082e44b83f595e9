// The files that a path argument of layer_events, layer_jobs or pp_refresh names.
#pragma once
#include <string>
#include <vector>

namespace pp {

// In the order they are read:
//   * an existing file: that file;
//   * a directory: every *.jsonl file below it (subdirectories included), sorted by path;
//   * otherwise a glob(3) pattern ("runs/*/rank*.jsonl"): its matches, sorted, with matching
//     directories expanded as above.
// Only regular files are read (a FIFO would block, /dev/zero never ends). Throws pp::Error:
//   * "argument 'path' is empty: ..." for "";
//   * "no such file or directory: 'PATH'" for a path without wildcards that names nothing;
//   * "no file matches the pattern 'PATH'" for a pattern that matches nothing, with
//     " (there is no folder 'D')" when the folder it starts from is missing;
//   * "argument 'path' names a FIFO, not a regular file: 'PATH'" for a path named directly;
//   * "cannot read directory 'PATH': Permission denied" for a directory named directly.
// What a directory or glob meets on the way gives a note in `notes` and is skipped: a *.jsonl
// name that is not a regular file ("skipped 'F': a FIFO, not a regular file"), a subdirectory
// that cannot be read ("skipped directory 'D': Permission denied"), a directory without
// *.jsonl files. A directory holding event files beside an emulator's copy of them (a folder
// below it with .precisionprobe-emulated) is read whole, with a note that every call is read twice.
std::vector<std::string> event_files(const std::string& path, std::vector<std::string>& notes);

}  // namespace pp
