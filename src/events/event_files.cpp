#include "events/event_files.hpp"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>

#include "core/errors.hpp"
#include "events/file_errors.hpp"
#include "events/regular_file.hpp"

namespace pp {
namespace {

namespace fs = std::filesystem;

// The file the live emulator's --mirror and analyze --emulate leave in a copy of a run's event
// files rewritten onto emulated GPUs (python/precisionprobe/_emulated_copy.py).
constexpr const char* kEmulatedCopyMark = ".precisionprobe-emulated";

std::string skipped_kind(const std::string& file, mode_t mode) {
  return std::string("skipped '") + file + "': " + file_kind(mode) + ", not a regular file";
}

// The *.jsonl files below `directory` (not following symbolic links to directories, which could
// loop or name a folder twice: each is a note saying how to read it), unsorted, and the folders
// that hold an emulated copy's mark.
// A directory that cannot be read is a note, or an error when `named` (the path argument
// itself). False when `directory` could not be read.
bool walk(const fs::path& directory, bool named, std::vector<std::string>& found, std::vector<std::string>& copies,
          std::vector<std::string>& notes) {
  std::error_code ec;
  fs::directory_iterator it(directory, ec);
  if (ec) {
    if (named) throw Error("cannot read directory '" + directory.string() + "': " + ec.message());
    notes.push_back("skipped directory '" + directory.string() + "': " + ec.message());
    return false;
  }
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec)) {
      if (!it->is_symlink(type_ec))
        walk(it->path(), false, found, copies, notes);
      else
        notes.push_back("skipped '" + it->path().string() +
                        "': a link to a directory, not followed (name it, or what it links to, to read it)");
      continue;
    }
    if (it->path().filename() == kEmulatedCopyMark) copies.push_back(directory.string());
    if (it->path().extension() != ".jsonl") continue;
    struct stat st;
    if (::stat(it->path().c_str(), &st) != 0) {
      notes.push_back("skipped '" + it->path().string() + "': " + std::strerror(errno));
      continue;
    }
    if (S_ISREG(st.st_mode))
      found.push_back(it->path().string());
    else if (!S_ISDIR(st.st_mode))
      notes.push_back(skipped_kind(it->path().string(), st.st_mode));
  }
  if (ec) throw Error("cannot read directory '" + directory.string() + "': " + ec.message());
  return true;
}

void append_jsonl_files(const std::string& directory, bool named, std::vector<std::string>& files,
                        std::vector<std::string>& notes) {
  std::vector<std::string> found;
  std::vector<std::string> copies;
  if (!walk(directory, named, found, copies, notes)) return;
  if (found.empty()) notes.push_back("no *.jsonl files in directory '" + directory + "'");
  // Copies below `directory` beside event files outside them: the run and its copies, every call
  // read once more for each.
  std::vector<std::string> doubled;
  for (const std::string& copy : copies) {
    if (fs::path(copy).lexically_normal() == fs::path(directory).lexically_normal()) continue;
    const bool outside = std::any_of(found.begin(), found.end(),
                                     [&](const std::string& file) { return file.rfind(copy + "/", 0) != 0; });
    if (outside) doubled.push_back(copy);
  }
  if (!doubled.empty()) {
    std::sort(doubled.begin(), doubled.end());
    std::string named;
    for (const std::string& copy : doubled) named += (named.empty() ? "'" : ", '") + copy + "'";
    notes.push_back("'" + directory + "' holds event files and " +
                    (doubled.size() == 1 ? "an emulator's copy of them (" + named + "), so every call is read twice"
                                         : std::to_string(doubled.size()) + " emulator's copies of them (" + named +
                                               "), so calls are read more than once") +
                    ": name the copy (the calls on the emulated GPUs) or the events' own folder");
  }
  std::sort(found.begin(), found.end());
  files.insert(files.end(), found.begin(), found.end());
}

// glob(3) reports directories it cannot read through a plain function pointer.
thread_local std::vector<std::string>* glob_notes = nullptr;

int note_glob_error(const char* path, int error) {
  if (glob_notes) glob_notes->push_back(std::string("skipped directory '") + path + "': " + std::strerror(error));
  return 0;  // go on with the rest
}

}  // namespace

std::vector<std::string> event_files(const std::string& path, std::vector<std::string>& notes) {
  if (path.empty())
    throw argument_error("path", "is empty: name an event file, a folder of them or a glob pattern");
  std::vector<std::string> files;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      append_jsonl_files(path, true, files, notes);
    else if (S_ISREG(st.st_mode))
      files.push_back(path);
    else
      throw argument_error("path", std::string("names ") + file_kind(st.st_mode) + ", not a regular file: '" + path + "'");
    return files;
  }
  if (errno != ENOENT && errno != ENOTDIR) throw_file_error("cannot access", path, errno);
  const int missing = errno;
  const size_t wildcard = path.find_first_of("*?[");
  if (wildcard != std::string::npos) {
    glob_t matches{};
    glob_notes = &notes;
    const int rc = ::glob(path.c_str(), 0, note_glob_error, &matches);
    glob_notes = nullptr;
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
        if (::stat(match.c_str(), &st) != 0)
          notes.push_back("skipped '" + match + "': " + std::strerror(errno));
        else if (S_ISDIR(st.st_mode))
          append_jsonl_files(match, false, files, notes);
        else if (S_ISREG(st.st_mode))
          files.push_back(match);
        else
          notes.push_back(skipped_kind(match, st.st_mode));
      }
      return files;
    }
    if (rc == GLOB_NOMATCH) {
      // The folder the pattern starts from: a mistyped one is the likely cause.
      const size_t slash = path.rfind('/', wildcard);
      const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
      const bool folder_exists = ::stat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      throw Error("no file matches the pattern '" + path + "'" +
                  (folder_exists ? "" : " (there is no folder '" + folder + "')"));
    }
  }
  if (missing == ENOTDIR) {
    // "runs/a.jsonl/" or "runs/a.jsonl/x": a part of the path taken as a directory is a file.
    std::string prefix = path;
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    if (prefix != path && ::stat(prefix.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
      throw argument_error("path", "ends in '/', but '" + prefix + "' is a file, not a directory (drop the '/')");
    throw argument_error("path", "goes through a file: a part of '" + path + "' before a '/' is a file, not a directory");
  }
  throw Error("no such file or directory: '" + path + "'");
}

}  // namespace pp
