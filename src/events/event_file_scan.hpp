// The lines of every file that a path argument names, one file after another, resuming where
// an earlier scan ended: the reading half of layer_events, layer_jobs and pp_refresh's import.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "core/interrupt.hpp"
#include "events/event_decoder.hpp"
#include "events/event_line.hpp"
#include "events/line_reader.hpp"

namespace pp {

// The caller classifies each line and calls skip() for a line it cannot use; leaving a file
// with skipped lines gives one warning through `warn`:
// "skipped 2 malformed lines in F (first at line 17: missing field 'layer')". A line longer
// than kMaxLineBytes gets a warning of its own and is never handed to the caller. Warnings
// carry no function name; the SQL layer's `warn` adds it. With a connection, every long loop
// notices sqlite3_interrupt() and throws InterruptedError.
class EventFileScan {
 public:
  using Warn = std::function<void(const std::string&)>;
  explicit EventFileScan(Warn warn, sqlite3* db = nullptr) : warn_(std::move(warn)), interrupted_(db) {}

  // Where to start reading a file, and where reading it ended (LineReader::complete_bytes()),
  // with the file's head: its first line (at most kHeadBytes of it) and a hash of those bytes,
  // which say whether a file of the same name is still the same file. head_bytes 0: unknown.
  // A compact file's first line is the same in every file, so its head is its first two lines
  // (the format line and the job header). `state` is what the decoder needs to read on from
  // `bytes` (EventDecoder::state(); empty for JSON Lines).
  // `real_path`: the file's absolute path with every symbolic link resolved (empty: unknown),
  // which says that another name (relative or absolute, through a link) is the same file.
  static constexpr int64_t kHeadBytes = 4096;
  struct Position {
    int64_t bytes = 0, lines = 0;
    int64_t head_bytes = 0, head_hash = 0;
    std::string state;
    std::string real_path;
  };
  using Positions = std::map<std::string, Position>;
  // Called for a file in `resume` whose head is not the one recorded: new content under the
  // old name. Returns what became of the rows read from it before, for the warning.
  using Replaced = std::function<std::string(const std::string& file)>;

  // Starts over with the files that `path` names (event_files(); its notes become warnings).
  // With `resume`, a file in it is read from that position on, and so is a file whose real
  // path is that of a file in it (the same file by another name: it is read and recorded under
  // the name in `resume`); a file named twice (a link beside its target) is read once. Unless:
  //   * its head is not the recorded one: the file was replaced (`replaced` is called, and it
  //     is read from the start, with a warning);
  //   * it is now shorter, or the byte before the position is not a '\n' (truncated in place:
  //     read from the start, with a warning).
  // Each file's end position is in ended() once it was read to its end.
  void start(const std::string& path, const Positions* resume = nullptr, Replaced replaced = {});
  const Positions& ended() const { return ended_; }
  // The next line (valid until the next call), opening files as needed; false after the last
  // line of the last file. `complete` as in LineReader::next.
  bool next(std::string_view& line, bool& complete);
  // Counts the line last returned as malformed, for the file's warning.
  void skip(const std::string& problem, bool complete);
  // The next line, decoded in its file's format (EventDecoder): `kind` says what it is (Event:
  // decoded into `event`; Malformed: `problem` says why); nothing is skipped. False after the
  // last line of the last file. Throws pp::Error for a file of a format this reader does not know.
  bool next_decoded(LayerEvent& event, LineKind& kind, std::string_view& line, std::string& problem,
                    bool& complete);
  // The next event or job header line: blank lines and mig_device records (pp_refresh's import
  // reads those with next_decoded()) are passed over, malformed ones skipped. `kind` says which
  // (Event: decoded into `event`); `line` is the header's text.
  // False after the last line of the last file.
  bool next_record(LayerEvent& event, LineKind& kind, std::string_view& line, bool& complete);

  // The name the current file's rows are recorded under (its name in `resume` where it had one).
  const std::string& source_file() const { return source_file_; }
  int64_t line_number() const { return reader_ ? reader_->line_number() : 0; }

 private:
  void finish_file();
  void name_files_by_real_path();
  void open_next();
  struct NamedFile;
  std::string renamed_from(const NamedFile& file, const std::set<std::string>& scanned);
  static Position head_of(const std::string& path, const std::string& real_path, bool* compact);
  Position resume_position(const std::string& file, const Position& head);

  Warn warn_;
  InterruptCheck interrupted_;
  struct NamedFile {
    std::string path;  // as event_files() gives it, to open
    std::string name;  // to record
    std::string real_path;  // when resuming (name_files_by_real_path)
  };
  std::vector<NamedFile> files_;
  std::string path_, real_path_;  // of the file being read
  bool resuming_ = false;
  Positions resume_, ended_;
  std::set<std::string> renamed_;  // recorded files taken by a file of another name (renamed_from)
  Replaced replaced_;
  Position head_;  // of the file being read (head fields only)
  EventDecoder decoder_;
  size_t next_file_ = 0;
  std::unique_ptr<LineReader> reader_;
  std::string source_file_;
  std::string problem_;
  int64_t skipped_ = 0;
  int64_t first_skipped_line_ = 0;
  std::string first_skipped_problem_;
};

}  // namespace pp
