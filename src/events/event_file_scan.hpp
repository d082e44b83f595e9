// The lines of every file that a path argument names, one file after another, resuming where
// an earlier scan ended: the reading half of layer_events, layer_jobs and pp_refresh's import.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "events/event_line.hpp"
#include "events/line_reader.hpp"

namespace pp {

// The caller classifies each line and calls skip() for a line it cannot use; leaving a file
// with skipped lines gives one warning through `warn`:
// "skipped 2 malformed lines in F (first at line 17: missing field 'layer')". Warnings carry no
// function name; the SQL layer's `warn` adds it.
class EventFileScan {
 public:
  using Warn = std::function<void(const std::string&)>;
  explicit EventFileScan(Warn warn) : warn_(std::move(warn)) {}

  // Where to start reading a file, and where reading it ended (LineReader::complete_bytes()).
  struct Position {
    int64_t bytes = 0, lines = 0;
  };
  using Positions = std::map<std::string, Position>;

  // Starts over with the files that `path` names (event_files(); its notes become warnings).
  // A file in `resume` is read from that position on, unless it is now shorter or the byte
  // before the position is not a '\n' (the file was truncated or replaced: read from the start,
  // with a warning). Each file's end position is in ended() once it was read to its end.
  void start(const std::string& path, const Positions& resume = {});
  const Positions& ended() const { return ended_; }
  // The next line (valid until the next call), opening files as needed; false after the last
  // line of the last file. `complete` as in LineReader::next.
  bool next(std::string_view& line, bool& complete);
  // Counts the line last returned as malformed, for the file's warning.
  void skip(const std::string& problem, bool complete);
  // The next event or job header line: blank lines are passed over and malformed ones
  // skipped. `kind` says which (Event: decoded into `event`); `line` is the header's text.
  // False after the last line of the last file.
  bool next_record(LayerEvent& event, LineKind& kind, std::string_view& line, bool& complete);

  const std::string& source_file() const { return source_file_; }
  int64_t line_number() const { return reader_ ? reader_->line_number() : 0; }

 private:
  void finish_file();
  Position resume_position(const std::string& file);

  Warn warn_;
  std::vector<std::string> files_;
  Positions resume_, ended_;
  size_t next_file_ = 0;
  std::unique_ptr<LineReader> reader_;
  std::string source_file_;
  std::string problem_;
  int64_t skipped_ = 0;
  int64_t first_skipped_line_ = 0;
  std::string first_skipped_problem_;
};

}  // namespace pp
