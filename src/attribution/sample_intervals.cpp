// Refresh step 3: each series' collection interval, the length of the window a sample covers.
// Intervals are fixed once known, so every later fold uses the same windows.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "attribution/refresh.hpp"
#include "attribution/window_lengths.hpp"
#include "core/embedded_sql.hpp"
#include "core/statement.hpp"

namespace pp {
namespace {

// main.pp_refresh_series: each series (uuid, metric) of pp_samples and its last ts_ms, found by
// seeking through the primary key from one series to the next (a skip scan), so a refresh
// never reads every stored sample to learn which series there are.
void list_series(sqlite3* db) {
  run_script(db, named_sql("refresh", "series_table"));
  Statement first(db, named_sql("refresh", "first_series"));
  Statement next_metric(db, named_sql("refresh", "next_metric_of_gpu"));
  Statement next_gpu(db, named_sql("refresh", "first_series_of_next_gpu"));
  Statement add(db, named_sql("refresh", "add_series"));
  std::string uuid, metric;
  auto found = [&](Statement& seek) {
    if (!seek.step()) return false;
    uuid = seek.column_text(0);
    metric = seek.column_text(1);
    sqlite3_reset(seek.handle());
    return true;
  };
  bool more = found(first);
  while (more) {
    add.bind(":uuid", uuid);
    add.bind(":metric", metric);
    add.run();
    next_metric.bind(":uuid", uuid);
    next_metric.bind(":metric", metric);
    next_gpu.bind(":uuid", uuid);
    more = found(next_metric) || found(next_gpu);
  }
}

// The lower median (the k-th smallest, k = (n + 1) / 2) of the n > 1 gaps between a series'
// consecutive samples, read as one index range per series (window functions over the samples
// took seconds per million); nullopt with fewer than two gaps.
std::optional<int64_t> median_spacing(Statement& times, const std::string& uuid, const std::string& metric,
                                      std::vector<int64_t>& gaps) {
  times.bind(":uuid", uuid);
  times.bind(":metric", metric);
  gaps.clear();
  bool first = true;
  int64_t last = 0;
  while (times.step()) {
    const int64_t ts = times.column_int64(0);
    if (!first && ts > last) gaps.push_back(ts - last);
    last = ts;
    first = false;
  }
  if (gaps.size() < 2) return std::nullopt;
  const auto median = gaps.begin() + static_cast<std::ptrdiff_t>((gaps.size() + 1) / 2 - 1);
  std::nth_element(gaps.begin(), median, gaps.end());
  return *median;
}

}  // namespace

// The sample_interval_ms setting for every series, or else the median spacing of each series
// that has no interval yet.
void set_intervals(RefreshRun& run) {
  list_series(run.db);
  const int64_t setting_ms = run.connection.settings().get_int("sample_interval_ms");
  if (setting_ms > 0) {
    run_script(run.db, named_sql("refresh", "intervals_from_setting"), {{":interval_ms", setting_ms}});
    return;
  }
  std::vector<std::pair<std::string, std::string>> missing;
  {
    Statement list(run.db, named_sql("refresh", "series_without_interval"));
    while (list.step()) missing.emplace_back(list.column_text(0), list.column_text(1));
  }
  Statement times(run.db, named_sql("refresh", "series_times"));
  Statement add(run.db, named_sql("refresh", "add_median_interval"));
  std::vector<int64_t> gaps;
  std::set<std::string> measured;
  for (const auto& [uuid, metric] : missing) {
    const auto interval = median_spacing(times, uuid, metric, gaps);
    // Samples more than a day apart tell no window (one that long is refused where read): the
    // series waits, as one with too few samples does.
    if (!interval || static_cast<double>(*interval) > kMostWindowMs) continue;
    add.bind(":uuid", uuid);
    add.bind(":metric", metric);
    add.bind(":interval_ms", *interval);
    add.run();
    measured.insert(uuid);
  }
  // Said once, when a GPU's spacings are measured: its windows are then placed on one grid that
  // fits some of its metrics only (its stretches come out not determined, or its GPU_UTIL windows
  // the profiling metrics' length).
  Statement mixed(run.db, named_sql("refresh", "mixed_spacings"));
  for (const std::string& uuid : measured) {
    mixed.bind(":uuid", uuid);
    while (mixed.step())
      run.warn("GPU " + uuid + " has its metrics stored at other spacings (" + mixed.column_text(1) +
               "): dcgm-exporter serves them together, so two scrape jobs at other intervals stored them; the "
               "windows are placed on one grid per GPU, which fits only some of them, so its estimates may "
               "not be determined: scrape the exporter's metrics in one job at one interval");
  }
}

}  // namespace pp
