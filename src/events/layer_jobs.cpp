// layer_jobs: the job header lines of the hook client's event files (a JSON line in either
// format), one row per process.
//
// USAGE:
//
//   SELECT * FROM layer_jobs('runs/job1/rank0.jsonl');   -- one file
//   SELECT * FROM layer_jobs('runs/job1');               -- every *.jsonl file below a directory
//   SELECT * FROM layer_jobs('runs/*/rank0.jsonl');      -- a glob(3) pattern
//
//   -- The paper's Table III "parameters" column: the model size of each job.
//   SELECT job_id, max(params) FROM layer_jobs('runs') GROUP BY job_id;
//
// The argument is the HIDDEN column `path` (required), read exactly as layer_events reads it
// (same files, same order, bounded memory, up to the files' current end). The hook client
// writes one header line ({"record": "job", ...}) when a process first runs its model; every
// other line is an event and gives no row here. A line that is neither (bad JSON, a torn last
// line, an event field of the wrong type, a header without job_id) is skipped, and each file
// with such lines adds one warning to pp_last_warnings():
// "layer_jobs: skipped 2 malformed lines in F (first at line 17: ...)".
// A path that names nothing is an error; an empty file gives no rows.
//
// COLUMNS (in order):
//
//   job_id TEXT              the job
//   host_name TEXT           where the process ran (NULL when the header has none)
//   pid INTEGER              the process
//   params INTEGER           the model's parameter count (header field "parameters", or an
//                            integer "params"); NULL when absent
//   command TEXT             the command line as JSON text ('["python3","train.py"]')
//   torch_version TEXT       PyTorch's version
//   start_time REAL          when the process started, unix seconds (start_time_ns / 1e9)
//   source_file TEXT, line INTEGER   where the header is (line is 1-based)
//
// DIRECTONLY: it reads files, so a view or trigger stored in a database file cannot use it
// ("unsafe use of virtual table"); TEMP views and triggers can.
#include <string>

#include "core/sql_values.hpp"
#include "core/table_function.hpp"
#include "events/event_file_scan.hpp"
#include "events/events_tables.hpp"
#include "events/job_header.hpp"

namespace pp {
namespace {

template <class T>
void result_header_field(sqlite3_context* ctx, const std::optional<T>& value) {
  if (!value)
    sqlite3_result_null(ctx);
  else if constexpr (std::is_same_v<T, std::string>)
    result_text(ctx, *value);
  else
    sqlite3_result_int64(ctx, *value);
}

struct JobsCursor : TableCursor {
  enum Column { kJobId, kHostName, kPid, kParams, kCommand, kTorchVersion, kStartTime, kSourceFile, kLine, kPath };
  static constexpr const char* kName = "layer_jobs";
  static constexpr const char* kSchema =
      "CREATE TABLE x(job_id TEXT, host_name TEXT, pid INTEGER, params INTEGER, command TEXT, "
      "torch_version TEXT, start_time REAL, source_file TEXT, line INTEGER, path HIDDEN)";
  static constexpr int kFirstArgument = kPath;
  static constexpr bool kDirectOnly = true;

  explicit JobsCursor(ConnectionTable* table) : TableCursor(table), scan(connection->warner(kName), connection->db()) {}

  EventFileScan scan;
  LayerEvent event;  // parse_event_line's output, unused: events give no rows here
  JobHeader header;
  int64_t line = 0;
  std::string problem;

  static int plan(sqlite3_index_info* info) {
    const int rc = plan_arguments(info, kPath, {{"path", true}});
    if (rc != SQLITE_OK) return rc;
    // Every line is read; a header is one line per process.
    info->estimatedRows = 10;
    info->estimatedCost = 100000;
    return SQLITE_OK;
  }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, 1);
    keep_arguments(args);
    scan.start(required_text(args[0], "path"));
    next();
  }

  // Moves to the next header line; sets eof after the last line of the last file.
  void next() {
    std::string_view text;
    bool complete = false;
    LineKind kind;
    while (scan.next_record(event, kind, text, complete)) {
      if (kind != LineKind::JobHeader) continue;
      if (parse_job_header(text, header, problem)) {
        line = scan.line_number();
        eof = false;
        return;
      }
      scan.skip(problem, complete);
    }
    eof = true;
  }

  void column(sqlite3_context* ctx, int column) const {
    const JobHeader& h = header;
    switch (column) {
      case kJobId: result_text(ctx, h.job_id); break;
      case kHostName: result_header_field(ctx, h.host_name); break;
      case kPid: result_header_field(ctx, h.pid); break;
      case kParams: result_header_field(ctx, h.params); break;
      case kCommand: result_header_field(ctx, h.command); break;
      case kTorchVersion: result_header_field(ctx, h.torch_version); break;
      case kStartTime:
        if (h.start_time_ns)
          sqlite3_result_double(ctx, ns_to_seconds(*h.start_time_ns));
        else
          sqlite3_result_null(ctx);
        break;
      case kSourceFile: result_text(ctx, scan.source_file()); break;
      case kLine: sqlite3_result_int64(ctx, line); break;
      default: sqlite3_result_null(ctx); break;
    }
  }
};

}  // namespace

const sqlite3_module kLayerJobsModule = table_function_module<JobsCursor>();

}  // namespace pp
