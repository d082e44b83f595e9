// pp_refresh's engine: brings the attribution tables up to date, in one savepoint, as named
// steps (each in its own file):
//   1. import_events      new lines of the event files into pp_events / pp_jobs (event_import.cpp)
//   2. fetch_samples      raw samples of the GPUs of unfolded events into pp_samples (fetch_samples.cpp)
//   3. set_intervals      each series' window length, a first guess (sample_intervals.cpp)
//   4. align_samples      the windows stored sample times describe (align_samples.cpp)
//   5. fold               aligned sample windows whose events are all known into layer_state (fold.cpp)
//   6. keep_history       the paper's dedup rule into layer_history (fold.cpp)
//   7. write_report_tables  the results as plain tables for clients without the extension (fold.cpp)
//   8. drop_old_data     folded events, samples and windows older than the retention setting (retention.cpp)
// and empties the work tables the steps fill for each other (pp_refresh_*, schema.sql),
// with the warnings of refresh_warnings.cpp between them. docs/architecture.md follows one
// refresh through these steps; docs/reference/attribution.md is the user documentation.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "core/connection.hpp"

namespace pp {

// The samples a GPU's jobs need: from each job's first event to at least this long after its
// last one (longer where two windows and the exporter's lag are: the sample covering the last
// event is stored that much later at most). The fetch brings all of them in whatever sequence
// of refreshes (pp_fetch_state says how far it asked), and the align step uses only these, so
// that a GPU's alignment never depends on which other GPUs' data a fetch happened to cover.
constexpr int64_t kSamplesAfterLastEventSeconds = 60;

// A stretch aligned before the data told a GPU's window length (or GPU_UTIL's period) takes the
// length that one of the next this many stretches tells (the align step); the fold holds its
// windows until they are aligned, or the refresh is final. Later, it keeps the median spacing.
constexpr int64_t kRevisableStretches = 3;

struct RefreshSummary {
  long long events_added = 0, samples_added = 0, windows_folded = 0, history_kept = 0;
  long http_requests = 0;
  // The events the refresh left waiting (the warning's count; refresh_warnings.cpp) and when the
  // last of them ended (unix seconds): a caller refreshes again while they may still fold.
  long long events_waiting = 0;
  std::optional<double> waiting_end_time;
};

// Runs every step inside a savepoint: all of it lands, or none of it. `path` names the event
// files (nullopt: fold what pp_events and pp_samples already hold). Throws BusyError when
// another connection's write lock is met (nothing changed), pp::Error otherwise.
RefreshSummary refresh(Connection& connection, const std::optional<std::string>& path, bool final);

// What every step reads and adds to.
struct RefreshRun {
  Connection& connection;
  sqlite3* db;
  bool final;
  double now;  // unix seconds when the refresh began
  std::function<void(const std::string&)> warn;  // "pp_refresh: " + warning
  RefreshSummary summary;
  long long late_events = 0;
};

// The steps, in the order refresh() runs them.
void fetch_samples(RefreshRun& run);
void set_intervals(RefreshRun& run);
void align_samples(RefreshRun& run);
void count_late_events(RefreshRun& run);
void fold(RefreshRun& run);
void warn_about_events_before_samples(RefreshRun& run);  // (fold calls it, before it marks events folded)
void warn_about_unattributed(RefreshRun& run);
void warn_about_missing_metrics(RefreshRun& run);
void warn_about_unnamed_gpus(RefreshRun& run);
void warn_about_shared_gpus(RefreshRun& run);
void keep_history(RefreshRun& run);
void write_report_tables(RefreshRun& run);
void drop_old_data(RefreshRun& run);

}  // namespace pp
