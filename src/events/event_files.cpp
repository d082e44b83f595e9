#include "events/event_files.hpp"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <new>

#include "core/errors.hpp"
#include "events/file_errors.hpp"

namespace pp {
namespace {

void append_jsonl_files(const std::string& directory, std::vector<std::string>& files,
                        std::vector<std::string>& notes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> found;
  fs::recursive_directory_iterator it(directory, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->path().extension() == ".jsonl" && it->is_regular_file(type_ec))
      found.push_back(it->path().string());
  }
  if (ec)
    throw Error("cannot read directory '" + directory + "': " + ec.message());
  if (found.empty())
    notes.push_back("no *.jsonl files in directory '" + directory + "'");
  std::sort(found.begin(), found.end());
  files.insert(files.end(), found.begin(), found.end());
}


}  // namespace

std::vector<std::string> event_files(const std::string& path, std::vector<std::string>& notes) {
  std::vector<std::string> files;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      append_jsonl_files(path, files, notes);
    else
      files.push_back(path);
    return files;
  }
  if (errno != ENOENT && errno != ENOTDIR) throw_file_error("cannot access", path, errno);
  if (path.find_first_of("*?[") != std::string::npos) {
    glob_t matches{};
    const int rc = ::glob(path.c_str(), 0, nullptr, &matches);
    struct Free {
      glob_t* g;
      ~Free() { ::globfree(g); }
    } free_matches{&matches};
    if (rc == GLOB_NOSPACE) throw std::bad_alloc();
    if (rc == GLOB_ABORTED)
      throw Error("cannot read the directories of '" + path + "'");
    if (rc == 0) {
      for (size_t i = 0; i < matches.gl_pathc; ++i) {
        const std::string match = matches.gl_pathv[i];
        if (::stat(match.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
          append_jsonl_files(match, files, notes);
        else
          files.push_back(match);
      }
      return files;
    }
  }
  throw Error("no such file or directory: '" + path + "'");
}

}  // namespace pp
