// Reading layer events: the JSON Lines files written by the Python hook client (issue #3),
// one event per line, plus one job header line per process ({"record": "job", ...}).
//
// Files are read in bounded memory (a buffer the size of the longest line), so a scan of a
// multi-GB file costs no more memory than a scan of a small one, and a file that is still
// being written is read up to its current end. Each line is parsed by a purpose-built JSON
// parser that validates the whole line (strings, escapes, UTF-8, numbers, nesting) but
// decodes only the fields of an event: a general JSON DOM per line would cost several times
// more than the rest of the scan.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pp {

// One event, in the column order of layer_events. Text fields that may be JSON null in the
// file (host_name, ip, pod, namespace: absent outside Kubernetes) and gpu (null on CPU) have
// a flag; every other field is required.
struct LayerEvent {
  std::string job_id, host_name, ip, pod, namespace_, gpu_uuid, layer, layer_type;
  bool host_name_null = false, ip_null = false, pod_null = false, namespace_null = false;
  bool gpu_null = false;
  int64_t gpu = 0, rank = 0, local_rank = 0, world_size = 0, pid = 0, epoch = 0, batch = 0;
  bool forward = false;
  int64_t t_start_ns = 0, t_end_ns = 0;
  double cpu_num = 0;
};

// Unix nanoseconds as unix seconds, the double nearest the exact value (so that
// t_start = 1714000000.1004 holds for t_start_ns = 1714000000100400000): whole seconds and the
// fraction are converted separately, since ns itself has no exact double above 2^53.
inline double ns_to_seconds(int64_t ns) {
  return static_cast<double>(ns / 1000000000) + static_cast<double>(ns % 1000000000) / 1e9;
}

enum class LineKind {
  Event,      // `event` holds the line's event
  JobHeader,  // {"record": "job", ...}: once per process, not an event
  Blank,      // empty or whitespace only
  Malformed,  // not JSON, not an object, or a field missing or of the wrong type
};

// Parses one line (without its '\n'). For Malformed, `problem` says why ("missing field
// 'layer'", "invalid JSON at byte 17"); fields of `event` are then unspecified.
// Unknown fields are ignored, so newer clients can add fields without breaking old readers.
LineKind parse_event_line(std::string_view line, LayerEvent& event, std::string& problem);

// The job header line ({"record": "job", ...}) that the hook client writes once per process
// (python/precisionprobe/event_format.py, job_header). A field that is absent or null is nullopt.
struct JobHeader {
  std::string job_id;
  std::optional<std::string> host_name, torch_version;
  std::optional<std::string> command;  // the JSON text of the value (the client writes a list)
  std::optional<int64_t> pid, params, start_time_ns;
};

// Decodes a line that parse_event_line() classified as LineKind::JobHeader. Returns false, with
// `problem`, when job_id is missing or a field has the wrong type. The parameter count is the
// client's "parameters", or "params" when that is an integer (earlier writers; an object there
// is something else and gives nullopt). Headers are one line per process, so this one builds a
// JSON document rather than adding cases to the event parser.
bool parse_job_header(std::string_view line, JobHeader& header, std::string& problem);

// Reads a file line by line with one growing buffer. Throws pp::Error("FUNCTION: ...") naming
// the file when it cannot be opened or read.
class LineReader {
 public:
  // Reads from byte `offset` (the start of a line), numbering lines after `lines_before`.
  LineReader(const std::string& path, const char* function, int64_t offset = 0, int64_t lines_before = 0);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its '\n' (valid until the next call), or false at the file's
  // current end. `complete` is false for a last line with no '\n' (possibly torn).
  bool next(std::string_view& line, bool& complete);
  // 1-based number of the line last returned.
  int64_t line_number() const { return line_number_; }
  // Where the lines returned so far end, counting only lines that ended in '\n': the byte
  // offset and line count to resume from (a line without '\n' may still be being written).
  int64_t complete_bytes() const { return complete_bytes_; }
  int64_t complete_lines() const { return complete_lines_; }

 private:
  bool fill();  // reads more; false at end of file

  std::string path_;
  const char* function_;
  int fd_ = -1;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;  // unread bytes are buffer_[begin_, end_)
  bool eof_ = false;
  int64_t line_number_ = 0;
  int64_t complete_bytes_ = 0, complete_lines_ = 0;
};

// The files that a layer_events path argument names, in the order they are read:
//   * an existing file: that file;
//   * a directory: every *.jsonl file below it (subdirectories included), sorted by path;
//   * otherwise a glob(3) pattern ("runs/*/rank*.jsonl"): its matches, sorted, with matching
//     directories expanded as above.
// Throws pp::Error "FUNCTION: no such file or directory: 'PATH'" when nothing matches.
// A directory without *.jsonl files gives no files and a note in `notes`.
std::vector<std::string> event_files(const std::string& path, const char* function,
                                     std::vector<std::string>& notes);

// The lines of every file that a path argument names, one file after another: the reading
// half of layer_events and layer_jobs. The caller classifies each line and calls skip() for
// a line it cannot use; leaving a file with skipped lines gives one warning through `warn`:
// "FUNCTION: skipped 2 malformed lines in F (first at line 17: missing field 'layer')".
class EventFileScan {
 public:
  using Warn = std::function<void(const std::string&)>;
  EventFileScan(const char* function, Warn warn) : function_(function), warn_(std::move(warn)) {}

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

  const char* function_;
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
