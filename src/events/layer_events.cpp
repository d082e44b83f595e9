// layer_events: the layer events that the Python hook client writes (compact format or JSON
// Lines, each file in its own: event_decoder.hpp), as a table.
//
// USAGE:
//
//   SELECT * FROM layer_events('runs/job1/rank0.jsonl');   -- one file
//   SELECT * FROM layer_events('runs/job1');               -- every *.jsonl file below a directory
//   SELECT * FROM layer_events('runs/*/rank0.jsonl');      -- a glob(3) pattern
//
//   SELECT layer, forward, count(*), avg(t_end - t_start) * 1e3 AS ms
//     FROM layer_events('runs/job1') WHERE t_start >= 1714000000 GROUP BY 1, 2;
//
// The argument is the HIDDEN column `path` (required). Files are read in sorted path order,
// line by line in bounded memory, up to their current end (a file still being written can be
// read). The job header line of each process ({"record": "job", ...}) is skipped, as are a
// compact file's format, definition and block lines. A line that is not a complete event (bad
// JSON or compact syntax, a field missing or of the wrong type, an undefined id, or a last line
// torn by a killed process) is skipped too, and each file with such lines adds one warning to
// pp_last_warnings(): "layer_events: skipped 2 malformed lines in F (first at line 17: ...)".
// A path that names nothing is an error; an empty file gives no rows. Only regular files are
// read: a path naming a FIFO or a device is an error, and one met through a directory or glob
// is skipped with a warning, as is an unreadable subdirectory. A line longer than 1 MiB is
// passed over with a warning. sqlite3_interrupt() stops a scan with SQLITE_INTERRUPT. A file
// whose first line names a format or version this reader does not know is an error naming it.
//
// COLUMNS (in order):
//
//   job_id TEXT, host_name TEXT, ip TEXT, pod TEXT, namespace TEXT   the process's job and place
//                                                     (host_name..namespace may be NULL)
//   gpu_uuid TEXT                                     "GPU-..." or "cpu"
//   gpu INTEGER                                       device index, NULL on CPU
//   rank, local_rank, world_size, pid INTEGER         the process in the job
//   epoch, batch INTEGER                              where in training
//   layer TEXT, layer_type TEXT                       module path ("top_l.2") and class ("Linear")
//   forward INTEGER                                   1 forward pass, 0 backward
//   t_start_ns, t_end_ns INTEGER                      the layer's interval, unix nanoseconds
//   cpu_num REAL                                      CPU cores the job requested
//   t_start, t_end REAL                               the same interval in unix seconds (ns / 1e9,
//                                                     the nearest double: about 0.24 us apart)
//   source_file TEXT, line INTEGER                    where the row comes from (line is 1-based)
//
// PUSH-DOWN: job_id = X and job_id IN (...) (compared as bytes: not under NOCASE or another
// collation), and >, >=, <, <= on t_start and t_end, are checked while reading, so rows that
// fail them are never handed to SQLite (which still checks them: omit = 0). An IN list is
// taken whole (sqlite3_vtab_in): the files are read once, not once per value.
//
// ROWID: the row's line in its file, counted from a number of the file's own (table_function.hpp,
// part_rowid_base), so that the branches of a MULTI-INDEX OR, whose push-downs differ, give an
// event they both keep one rowid.
//
// DIRECTONLY: it reads files, so a view or trigger stored in a database file cannot use it
// ("unsafe use of virtual table"); TEMP views and triggers can.
#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/sql_values.hpp"
#include "core/table_function.hpp"
#include "events/event_file_scan.hpp"
#include "events/events_tables.hpp"

namespace pp {
namespace {

// The columns: the event fields (event_fields.hpp) in their order, then these.
enum Column {
  kTStart = kEventFieldCount, kTEnd, kSourceFile, kLine,
  kPath,  // HIDDEN argument
};

// idxNum bits: bit 0 is the path argument (plan_arguments); then the pushed-down constraints,
// whose values follow the path in xFilter's argv in bit order.
constexpr int kJobIdBit = 1 << 1;
constexpr int kJobIdInBit = 1 << 2;  // the value is an IN list, read with sqlite3_vtab_in_first/next
constexpr int kRangeShift = 3;       // 4 bits per time column: >, >=, <, <=
constexpr int kRangeColumns[] = {kTStart, kTEnd};
constexpr unsigned char kRangeOps[] = {SQLITE_INDEX_CONSTRAINT_GT, SQLITE_INDEX_CONSTRAINT_GE,
                                       SQLITE_INDEX_CONSTRAINT_LT, SQLITE_INDEX_CONSTRAINT_LE};
constexpr int kPushDownBits = 2 + 2 * 4;

int range_bit(int column, unsigned char op) {
  for (int c = 0; c < 2; ++c)
    for (int o = 0; o < 4; ++o)
      if (kRangeColumns[c] == column && kRangeOps[o] == op) return 1 << (kRangeShift + c * 4 + o);
  return 0;
}

// The values of an IN list handed whole to xFilter, when all are TEXT or NULL (NULL matches
// nothing). nullopt when one is of another type: affinity decides those, so SQLite's own check
// filters and nothing is pushed down.
std::optional<std::set<std::string, std::less<>>> text_values_of_in_list(sqlite3_value* list) {
  std::set<std::string, std::less<>> values;
  sqlite3_value* value = nullptr;
  int rc = sqlite3_vtab_in_first(list, &value);
  for (; rc == SQLITE_OK; rc = sqlite3_vtab_in_next(list, &value)) {
    const int type = sqlite3_value_type(value);
    if (type == SQLITE_NULL) continue;
    if (type != SQLITE_TEXT) return std::nullopt;
    values.insert(compared_bytes(value));
  }
  if (rc == SQLITE_NOMEM) throw std::bad_alloc();
  if (rc != SQLITE_DONE) throw Error("cannot read the values of job_id IN (...) (SQLite error " + std::to_string(rc) + ")");
  return values;
}

struct RangeFilter {
  bool end_column;   // t_end rather than t_start
  unsigned char op;  // SQLITE_INDEX_CONSTRAINT_GT ...
  double value;

  bool accepts(const LayerEvent& e) const {
    const double t = ns_to_seconds(end_column ? e.t_end_ns : e.t_start_ns);
    switch (op) {
      case SQLITE_INDEX_CONSTRAINT_GT: return t > value;
      case SQLITE_INDEX_CONSTRAINT_GE: return t >= value;
      case SQLITE_INDEX_CONSTRAINT_LT: return t < value;
      default: return t <= value;
    }
  }
};

// Sets the result to an event field's value.
struct ResultField {
  sqlite3_context* ctx;
  void operator()(const std::string& text) const { result_text(ctx, text); }
  void operator()(const Nullable<std::string>& text) const {
    if (text.null)
      sqlite3_result_null(ctx);
    else
      result_text(ctx, text.value);
  }
  void operator()(int64_t value) const { sqlite3_result_int64(ctx, value); }
  void operator()(const Nullable<int64_t>& value) const {
    if (value.null)
      sqlite3_result_null(ctx);
    else
      sqlite3_result_int64(ctx, value.value);
  }
  void operator()(bool value) const { sqlite3_result_int(ctx, value ? 1 : 0); }
  void operator()(double value) const { sqlite3_result_double(ctx, value); }
};

struct EventsCursor : TableCursor {
  static constexpr const char* kName = "layer_events";
  static constexpr const char* kSchema =
      "CREATE TABLE x(job_id TEXT, host_name TEXT, ip TEXT, pod TEXT, namespace TEXT, gpu_uuid TEXT, "
      "gpu INTEGER, rank INTEGER, local_rank INTEGER, world_size INTEGER, pid INTEGER, epoch INTEGER, "
      "batch INTEGER, layer TEXT, layer_type TEXT, forward INTEGER, t_start_ns INTEGER, t_end_ns INTEGER, "
      "cpu_num REAL, t_start REAL, t_end REAL, source_file TEXT, line INTEGER, path HIDDEN)";
  static constexpr int kFirstArgument = kPath;
  static constexpr bool kDirectOnly = true;

  explicit EventsCursor(ConnectionTable* table) : TableCursor(table), scan(connection->warner(kName), connection->db()) {}

  EventFileScan scan;
  LayerEvent event;
  int64_t line = 0;

  // Pushed-down constraints: each job_id set holds the values one constraint accepts.
  std::vector<std::set<std::string, std::less<>>> job_ids;
  std::vector<RangeFilter> ranges;

  // The file whose rowids file_rowid_base begins (part_rowid_base).
  std::string based_file;
  sqlite3_int64 file_rowid_base = 0;

  static int plan(sqlite3_index_info* info) {
    const int rc = plan_arguments(info, kPath, {{"path", true}});
    if (rc != SQLITE_OK) return rc;

    // One constraint per push-down bit, in bit order so xFilter can find their values.
    int chosen[kPushDownBits];
    std::fill(std::begin(chosen), std::end(chosen), -1);
    for (int i = 0; i < info->nConstraint; ++i) {
      const auto& c = info->aConstraint[i];
      if (!c.usable) continue;
      int bit = 0;
      if (c.iColumn == kEventField_job_id && c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
        // A NOCASE (or other) comparison may match rows that a byte comparison would drop.
        const char* collation = sqlite3_vtab_collation(info, i);
        if (collation && sqlite3_stricmp(collation, "BINARY") != 0) continue;
        bit = sqlite3_vtab_in(info, i, -1) ? kJobIdInBit : kJobIdBit;
      } else {
        bit = range_bit(c.iColumn, c.op);
      }
      if (bit == 0) continue;
      int index = 0;
      while ((1 << (index + 1)) != bit) ++index;
      if (chosen[index] < 0) chosen[index] = i;
    }

    int next_argv = 1 + (info->idxNum & 1);
    double rows = 100000;  // a file of about 35 MB: a few thousand batches of a small model
    for (int index = 0; index < kPushDownBits; ++index) {
      if (chosen[index] < 0) continue;
      info->idxNum |= 1 << (index + 1);
      info->aConstraintUsage[chosen[index]].argvIndex = next_argv++;
      info->aConstraintUsage[chosen[index]].omit = 0;  // SQLite checks again (affinity, NULL)
      if ((1 << (index + 1)) == kJobIdInBit) sqlite3_vtab_in(info, chosen[index], 1);  // the list whole
      rows /= (1 << (index + 1)) & (kJobIdBit | kJobIdInBit) ? 10 : 3;
    }
    // Every plan reads the whole file; push-down only saves the rows' trip through SQLite.
    info->estimatedRows = static_cast<sqlite3_int64>(rows);
    info->estimatedCost = 100000 + rows;
    return SQLITE_OK;
  }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    job_ids.clear();
    ranges.clear();
    const auto args = filter_arguments(idx_num, argc, argv, 1);
    keep_arguments(args);
    based_file.clear();
    const std::string path = required_text(args[0], "path");
    int next_value = idx_num & 1;
    bool impossible = false;  // a comparison with NULL: no row can match
    for (int index = 0; index < kPushDownBits; ++index) {
      const int bit = 1 << (index + 1);
      if (!(idx_num & bit) || next_value >= argc) continue;
      sqlite3_value* value = argv[next_value++];
      if (bit == kJobIdInBit) {
        if (auto values = text_values_of_in_list(value)) {
          if (values->empty()) impossible = true;
          job_ids.push_back(std::move(*values));
        }
        continue;
      }
      const int type = sqlite3_value_type(value);
      if (type == SQLITE_NULL) {
        impossible = true;
      } else if (bit == kJobIdBit) {
        if (type == SQLITE_TEXT) job_ids.push_back({compared_bytes(value)});
        // other types: affinity rules decide; SQLite's own check does it
      } else if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) {
        const int range = index - (kRangeShift - 1);
        ranges.push_back(RangeFilter{range >= 4, kRangeOps[range % 4], sqlite3_value_double(value)});
      }
    }
    scan.start(path);
    if (!impossible) next();
  }

  bool wanted() const {
    for (const auto& accepted : job_ids)
      if (!accepted.count(event.job_id)) return false;
    for (const RangeFilter& r : ranges)
      if (!r.accepts(event)) return false;
    return true;
  }

  // Moves to the next wanted event, opening files as needed; sets eof after the last.
  void next() {
    std::string_view text;
    bool complete = false;
    LineKind kind;
    while (scan.next_record(event, kind, text, complete))
      if (kind == LineKind::Event && wanted()) {
        line = scan.line_number();
        if (based_file.empty() || based_file != scan.source_file()) {
          based_file = scan.source_file();
          file_rowid_base = part_rowid_base(part_key(kName, based_file));
        }
        rowid = file_rowid_base + line;
        eof = false;
        return;
      }
    eof = true;
  }

  void column(sqlite3_context* ctx, int column) const {
    switch (column) {
      case kTStart: sqlite3_result_double(ctx, ns_to_seconds(event.t_start_ns)); break;
      case kTEnd: sqlite3_result_double(ctx, ns_to_seconds(event.t_end_ns)); break;
      case kSourceFile: result_text(ctx, scan.source_file()); break;
      case kLine: sqlite3_result_int64(ctx, line); break;
      default: visit_event_field(event, column, ResultField{ctx}); break;
    }
  }
};

}  // namespace

const sqlite3_module kLayerEventsModule = table_function_module<EventsCursor>();

}  // namespace pp
