// Refresh steps 5 to 7: the fold of sample windows into layer_state (sql/fold.sql, around the
// interval join of overlap_means.cpp), the paper's dedup rule into layer_history
// (sql/history.sql), and the plain result tables (sql/report.sql), the last two for the jobs
// in pp_report_pending (schema.sql).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "attribution/estimator_systems.hpp"
#include "attribution/event_store.hpp"
#include "attribution/gpu_timeline.hpp"
#include "attribution/overlap_means.hpp"
#include "attribution/refresh.hpp"
#include "core/embedded_sql.hpp"
#include "core/errors.hpp"
#include "core/interrupt.hpp"
#include "core/number_text.hpp"
#include "core/sql_relay.hpp"
#include "core/statement.hpp"

namespace pp {
namespace {

// A metric's folded samples that lie beyond its bounds (pp_metric_bounds) by more than a
// twentieth of the bounds' span (of the finite bound's size where the other is none; noise
// at a bound stays inside): a series in another unit than the bounds say (a DCGM ratio
// exported as a percentage, a relabelled series), which the overlap means would average as
// it is and the estimates hold to the bounds. Counted, and the farthest one kept to name.
struct BeyondBounds {
  int64_t samples = 0;
  int64_t gpus = 0;
  double farthest_by = 0, farthest_value = 0;
  std::string farthest_uuid;
  int64_t farthest_ts_ms = 0;

  void add(const BeyondBounds& other) {
    samples += other.samples;
    gpus += other.gpus;
    if (other.farthest_by > farthest_by) {
      farthest_by = other.farthest_by;
      farthest_value = other.farthest_value;
      farthest_uuid = other.farthest_uuid;
      farthest_ts_ms = other.farthest_ts_ms;
    }
  }
};

constexpr double kBoundsMargin = 0.05;

std::map<std::string, BeyondBounds> beyond_bounds(const std::string& uuid, const GpuTimeline& gpu,
                                                  const std::map<std::string, Bounds>& bounds) {
  std::map<std::string, BeyondBounds> out;
  for (const TimelineSeries& s : gpu.series) {
    const auto found = bounds.find(s.metric);
    if (found == bounds.end()) continue;
    const Bounds& b = found->second;
    const double span = std::isfinite(b.lower) && std::isfinite(b.upper)
                            ? b.upper - b.lower
                            : std::max(std::isfinite(b.lower) ? std::fabs(b.lower) : 0.0,
                                       std::isfinite(b.upper) ? std::fabs(b.upper) : 0.0);
    const double low = b.lower - kBoundsMargin * span, high = b.upper + kBoundsMargin * span;
    BeyondBounds beyond;
    for (const TimelineSample& sample : s.samples) {
      if (sample.null || (sample.value >= low && sample.value <= high)) continue;
      ++beyond.samples;
      const double by = sample.value < low ? b.lower - sample.value : sample.value - b.upper;
      if (by > beyond.farthest_by) {
        beyond.farthest_by = by;
        beyond.farthest_value = sample.value;
        beyond.farthest_uuid = uuid;
        beyond.farthest_ts_ms = sample.ts_ms;
      }
    }
    if (beyond.samples == 0) continue;
    beyond.gpus = 1;
    out[s.metric].add(beyond);
  }
  return out;
}

// What the fold takes of one GPU's timeline: the rows of pp_overlap_means, and each job's span
// of the calls whose durations they count (sorted by job id).
struct FoldedGpu {
  struct Row {
    std::string job_id, layer;
    int forward;
    std::string metric;
    std::optional<std::string> state;
    std::optional<int64_t> first_id;  // on '_duration' rows
  };
  std::vector<Row> rows;
  int64_t windows = 0;
  std::vector<JobSpan> spans;
  int64_t unusable_values = 0;  // GpuTimeline's
  std::string first_unusable;
  std::map<std::string, BeyondBounds> beyond_bounds;  // by metric
};

FoldedGpu folded_gpu(const GpuTimeline& gpu, OverlapMeans means) {
  FoldedGpu out;
  out.windows = means.windows;
  out.unusable_values = gpu.unusable_values;
  out.first_unusable = gpu.first_unusable;
  for (OverlapMeanRow& r : means.rows) {
    const TimelineGroup& group = gpu.groups[r.group];
    const bool durations = r.series == OverlapMeanRow::kDurations;
    out.rows.push_back({gpu.job_id(r.group), group.layer, group.forward,
                        durations ? "_duration" : gpu.series[r.series].metric, std::move(r.state),
                        durations ? std::optional<int64_t>(gpu.first_id[r.group]) : std::nullopt});
  }
  for (const TimelineJob& job : gpu.jobs)
    if (job.unfolded_events > 0)
      out.spans.push_back({job.job_id, job.unfolded_first, job.unfolded_last, job.unfolded_events, job.unfolded_longest});
  std::sort(out.spans.begin(), out.spans.end(), [](const JobSpan& a, const JobSpan& b) { return a.job_id < b.job_id; });
  return out;
}

// A GPU's windows to fold: stored times in (after_ms, through_ms] (sql/refresh.sql fold_windows).
struct FoldWindow {
  std::string uuid;
  int64_t after_ms, through_ms;
};

// Per GPU, the overlap means of its windows and each job's span of the events whose durations
// they count (those not folded yet that start by the fold point): its reads on the
// connection's thread, its decoding and sweep on a worker beside the other GPUs' reads. A
// worker's sweep stops at an interrupt that the connection's thread sees while it waits; one
// GPU alone is folded on the calling thread, its series two at a time as in pp_overlap_means.
std::vector<FoldedGpu> fold_each_gpu(sqlite3* db, const std::vector<FoldWindow>& windows,
                                     const std::map<std::string, Bounds>& bounds) {
  std::vector<FoldedGpu> folded(windows.size());
  InterruptCheck interrupted(db);
  const auto check = [&] { interrupted.check(); };
  for_each_in_parallel(
      windows.size(),
      [&](size_t i, SqlRelay& sql) {
        std::unique_ptr<TimelineFetch> fetched;
        sql.run([&] { fetched = fetch_gpu_timeline(db, windows[i].uuid, windows[i].after_ms, windows[i].through_ms); });
        const GpuTimeline gpu = fetched->build();
        fetched.reset();
        const bool alone = sql.on_owner();
        const std::function<void()> poll = alone ? std::function<void()>(check) : [&sql] {
          if (sql.stopping()) throw InterruptedError();
        };
        const size_t threads = alone ? std::max(1u, std::min(2u, std::thread::hardware_concurrency())) : 1;
        folded[i] = folded_gpu(gpu, overlap_means(gpu, threads, poll));
        folded[i].beyond_bounds = beyond_bounds(windows[i].uuid, gpu, bounds);
      },
      2, check);
  return folded;
}

// The GPUs' rows into main.pp_refresh_fold_means and main.pp_refresh_fold_spans for sql/fold.sql, in the GPUs'
// order, so that the same database gives the same sums.
void write_folded(sqlite3* db, const std::vector<FoldWindow>& windows, const std::vector<FoldedGpu>& folded) {
  run_script(db, named_sql("refresh", "fold_means_table"));
  run_script(db, named_sql("refresh", "fold_spans_table"));
  Statement add_means(db, named_sql("refresh", "add_fold_means"));
  Statement add_span(db, named_sql("refresh", "add_fold_span"));
  for (size_t i = 0; i < windows.size(); ++i) {
    for (const FoldedGpu::Row& row : folded[i].rows) {
      add_means.bind(":uuid", windows[i].uuid);
      add_means.bind(":job_id", row.job_id);
      add_means.bind(":layer", row.layer);
      add_means.bind(":forward", int64_t{row.forward});
      add_means.bind(":metric", row.metric);
      if (row.state)
        add_means.bind_blob(":state", *row.state);
      else
        add_means.bind(":state", std::optional<std::string>());
      add_means.bind(":first_id", row.first_id);
      add_means.bind(":windows", folded[i].windows);
      add_means.run();
    }
    for (const JobSpan& s : folded[i].spans) {
      add_span.bind(":job_id", s.job_id);
      add_span.bind(":uuid", windows[i].uuid);
      add_span.bind(":first_ns", s.first_ns);
      add_span.bind(":last_ns", s.last_ns);
      add_span.bind(":events", s.events);
      add_span.bind(":longest_ns", s.longest_ns);
      add_span.run();
    }
  }
}

std::string bound_text(double bound) { return std::isfinite(bound) ? number_text(bound) : "none"; }

void warn_about_bounds(RefreshRun& run, const std::string& metric, const Bounds& bounds, const BeyondBounds& b) {
  run.warn(std::to_string(b.samples) + (b.samples == 1 ? " sample of " : " samples of ") + metric + " on " +
           std::to_string(b.gpus) + (b.gpus == 1 ? " GPU" : " GPUs") + (b.samples == 1 ? " lies" : " lie") +
           " outside its bounds [" + bound_text(bounds.lower) + ", " + bound_text(bounds.upper) +
           "] in pp_metric_bounds (the farthest: " +
           number_text(b.farthest_value) + " on " + b.farthest_uuid + " at ts_ms " + std::to_string(b.farthest_ts_ms) +
           "): a series in another unit (a ratio exported as a percentage?) or bounds that do not fit it; the overlap "
           "means take the values as they are, the estimates are held to the bounds");
}

}  // namespace

void fold(RefreshRun& run) {
  const int64_t margin = run.connection.settings().get_int("attribution_margin_seconds");
  run_script(run.db, named_sql("refresh", "fold_windows"),
             {{":final", int64_t{run.final ? 1 : 0}}, {":now", run.now}, {":margin", margin},
              {":revisable", kRevisableStretches}});
  const auto impossible = static_cast<long long>(query_double(run.db, named_sql("refresh", "impossible_events"), {}, 0));
  if (impossible > 0)
    run.warn(std::to_string(impossible) + (impossible == 1 ? " event" : " events") +
             " in pp_events end before they start or lie outside 1970-2116; they are not folded");
  std::vector<FoldWindow> windows;
  {
    Statement list(run.db, named_sql("refresh", "fold_windows_list"));
    while (list.step()) windows.push_back({list.column_text(0), list.column_int64(1), list.column_int64(2)});
  }
  // (Bounds that are no numbers are the estimates' error, which names them: no check here.)
  std::map<std::string, Bounds> bounds;
  try {
    bounds = metric_bounds(run.db);
  } catch (const Error&) {
  }
  const std::vector<FoldedGpu> folded = fold_each_gpu(run.db, windows, bounds);
  int64_t unusable = 0;
  std::string first_unusable;
  std::map<std::string, BeyondBounds> beyond;
  for (const FoldedGpu& gpu : folded) {
    if (unusable == 0) first_unusable = gpu.first_unusable;
    unusable += gpu.unusable_values;
    for (const auto& [metric, b] : gpu.beyond_bounds) beyond[metric].add(b);
  }
  if (unusable > 0)
    run.warn(std::to_string(unusable) + (unusable == 1 ? " sample" : " samples") +
             " in pp_samples are not numbers, not finite, or beyond 1e150 in magnitude (the first: " + first_unusable +
             "); they are left out, like NaN");
  for (const auto& [metric, b] : beyond) warn_about_bounds(run, metric, bounds.at(metric), b);
  write_folded(run.db, windows, folded);
  warn_about_events_before_samples(run);
  run_script(run.db, embedded_sql("fold"));
  // The events whose durations the fold counted: up to each GPU's fold point, one index range
  // per GPU (a single UPDATE would look the GPU's window up for every row).
  Statement mark(run.db, named_sql("refresh", "mark_folded"));
  for (const FoldWindow& w : windows) {
    mark.bind(":uuid", w.uuid);
    mark.bind(":through_ms", w.through_ms);
    mark.run();
  }
  run.summary.windows_folded = static_cast<long long>(query_double(run.db, named_sql("refresh", "windows_folded"), {}, 0));
}

namespace {

// The jobs whose data changed since the last refresh (schema.sql's triggers keep the list), as
// stored: a job id merged in as a BLOB matches only a BLOB.
std::vector<SqlValue> pending_report_jobs(sqlite3* db) {
  std::vector<SqlValue> jobs;
  Statement list(db, "SELECT job_id FROM main.pp_report_pending ORDER BY job_id");
  while (list.step())
    jobs.push_back(list.column_type(0) == SQLITE_BLOB ? SqlValue(SqlBlob{std::string(list.column_blob(0))})
                                                       : SqlValue(list.column_text(0)));
  return jobs;
}

// A layer without a type that has values stops the report at report_layer_types' NOT NULL, in
// SQLite's words that name no row. Only a hand edit of pp_layers leaves one (every event gives
// its layer's type; pp_events refuses a row without it), so the refresh names that row instead.
void check_layer_types(sqlite3* db, const SqlValue& job) {
  Statement untyped(db,
                    "SELECT job_id, layer, forward FROM main.pp_layers AS l "
                    "WHERE job_id = :job_id AND layer_type IS NULL AND EXISTS (SELECT 1 FROM main.layer_state "
                    "  WHERE job_id = l.job_id AND layer = l.layer AND forward = l.forward) "
                    "ORDER BY layer, forward LIMIT 1");
  untyped.bind(":job_id", job);
  if (untyped.step())
    throw Error("pp_layers' layer_type of layer " + untyped.column_text(1) +
                (untyped.column_int64(2) ? " (forward)" : " (backward)") + " of job " + untyped.column_text(0) +
                " is NULL (the name of the layer's type, as its events give it)");
}

}  // namespace

// Both run for the jobs whose data changed only: the views read one job's rows for them, so a
// refresh costs the jobs it touched, not every job the database has seen.
void keep_history(RefreshRun& run) {
  const double tolerance = run.connection.settings().get_real("dedup_rel_tol");
  for (const SqlValue& job : pending_report_jobs(run.db))
    run.summary.history_kept +=
        run_script(run.db, embedded_sql("history"),
                   {{":job_id", job}, {":dedup_rel_tol", tolerance}, {":refreshed_at", run.now}});
}

void write_report_tables(RefreshRun& run) {
  for (const SqlValue& job : pending_report_jobs(run.db)) {
    check_layer_types(run.db, job);
    run_script(run.db, embedded_sql("report"), {{":job_id", job}, {":refreshed_at", run.now}});
  }
  run_script(run.db, "DELETE FROM main.pp_report_pending");
}

}  // namespace pp
