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
// Throws pp::Error "no such file or directory: 'PATH'" when nothing matches. A directory
// without *.jsonl files gives no files and a note in `notes`.
std::vector<std::string> event_files(const std::string& path, std::vector<std::string>& notes);

}  // namespace pp
