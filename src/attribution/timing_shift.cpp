#include "attribution/timing_shift.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "core/errors.hpp"
#include "core/number_text.hpp"
#include "core/statement.hpp"
#include "core/stored_numbers.hpp"
#include "events/event_fields.hpp"

namespace pp {
namespace {

constexpr int64_t kTimingNsPerMs = 1000000;
constexpr double kMostTimingNs = 1e15;  // a timing or window length of pp_alignment, at most

// How far the estimator's timing shift moves windows: the uncertainty of the offset over a
// job's stretches (those within the window's horizon, timing_horizon_ms). Each stretch's offset
// is estimated from its own samples, so their errors are independent and their mean is known
// sqrt(n) times better than one of them (each weighing as much of the job's span as it covers);
// a stretch whose timing is unknown (half a window) still dominates. DCGM's grid and the
// driver's apart.
struct TimingShift {
  double dcgm_ns = 0, driver_ns = 0;
};

// Where a stretch's windows begin: its first window's end less its reach (saturated: a reach
// beyond any time reaches every span).
int64_t windows_start_ns(const StretchTiming& s) {
  int64_t start;
  return __builtin_sub_overflow(s.first_end_ns, s.reach_ns, &start) ? INT64_MIN : start;
}

// How much of a job's span [span_first, span_last] (ns) a stretch's windows cover: the share of
// the job's windows whose placement its offset decides. In integers: at epoch ns (some 1.7e18)
// a double holds only multiples of 256 ns, which moved each weight by a few hundred ns and a
// job's rounded shift by 1 ns in some 1 in 2,000 jobs.
double overlap_ns(const StretchTiming& s, int64_t span_first, int64_t span_last) {
  const int64_t from = std::max(windows_start_ns(s), span_first);
  const int64_t to = std::min(s.last_end_ns, span_last);
  if (to <= from) return 0;
  return static_cast<double>(static_cast<uint64_t>(to) - static_cast<uint64_t>(from));  // below 2^64: exact
}

// The stretches' timings combined as independent errors, never below the floor (read_stretches).
// Each weighs as much of the job's span as its windows cover (span: the job's first and last ns;
// none: every stretch alike): an offset error moves only its own stretch's windows, so a short
// stretch (a job's last may hold half as many windows as the others) moves few of the job's
// windows.
TimingShift combined_timing(std::vector<StretchTiming>::const_iterator first,
                            std::vector<StretchTiming>::const_iterator last,
                            std::optional<std::pair<int64_t, int64_t>> span) {
  double dcgm = 0, driver = 0, total = 0;
  for (auto it = first; it != last; ++it) {
    const double w = span ? overlap_ns(*it, span->first, span->second) : 1.0;
    dcgm += w * w * it->dcgm_ns * it->dcgm_ns;
    driver += w * w * it->driver_ns * it->driver_ns;
    total += w;
  }
  // (A span that none of its stretches' windows reach, e.g. one of reversed ends: every stretch alike.)
  if (span && !(total > 0)) return combined_timing(first, last, std::nullopt);
  if (total == 0) return {kPollWanderNs, kPollWanderNs};
  // Never below a fraction of how far DCGM's own polls stray from the straight grid the windows
  // are put on (its scheduler's lateness, up to some 0.2 ms): no stored time shows that, and at
  // low noise a 0.1 ms layer's value moves with it (8% at zero noise). Nor does it shrink with
  // the stretches: shrinking as 0.1 ms x sqrt(3 / n), it let a 6-hour realistic recording mark a
  // 0.2 ms layer identified and 6% off after an hour.
  return {std::max(std::sqrt(dcgm) / total, kPollWanderNs), std::max(std::sqrt(driver) / total, kPollWanderNs)};
}

// The stretches that hold a window of the span [first, last] (a window reaching its stretch's
// reach_ns back from its end), as indices [from, to) into stretches. The first is found by
// bisection where the stretches' last ends are in order, as the align step writes them; else
// (pp_alignment edited by hand) by a scan, so that every read finds the same one.
std::pair<size_t, size_t> stretches_of_span(const std::vector<StretchTiming>& stretches, bool ends_in_order,
                                            int64_t first, int64_t last) {
  const auto ends_before = [&](const StretchTiming& s) { return s.last_end_ns <= first; };
  const auto from = ends_in_order ? std::partition_point(stretches.begin(), stretches.end(), ends_before)
                                  : std::find_if_not(stretches.begin(), stretches.end(), ends_before);
  auto to = from;
  while (to != stretches.end() && windows_start_ns(*to) < last) ++to;
  return {static_cast<size_t>(from - stretches.begin()), static_cast<size_t>(to - stretches.begin())};
}

}  // namespace

std::vector<StretchTiming> read_stretches(sqlite3* db, const std::string& uuid) {
  Statement read(db, "SELECT from_ms, through_ms, offset_ns, timing_ns, coalesce(util_timing_ns, 0) AS util_timing_ns, "
                     "window_ms, util_window_ms FROM main.pp_alignment WHERE uuid = :uuid AND status <> 'no layers' "
                     "ORDER BY from_ms");
  read.bind(":uuid", uuid);
  // Every value is refused where no alignment writes it (a table edited by hand): text or a
  // BLOB read as 0, and windows moved by an infinite or out-of-range shift (whose rounding is
  // undefined) left every read without a row.
  StoredRow row(read, "pp_alignment");
  const std::string of_gpu = "of GPU " + uuid;  // (how an error names a row: row_name)
  // A length in ns (column in ms: scaled).
  const auto checked_ns = [&](int column, double ns_per_unit) {
    constexpr const char* kWanted = "a length of 0 to 1e15 ns, some 11 days";
    const std::optional<double> value = stored_double(read, column);
    if (!value || !(*value >= 0 && *value * ns_per_unit <= kMostTimingNs))
      throw row.refused(column, value ? number_text(*value) : row.shown(column), kWanted);
    return *value * ns_per_unit;
  };
  const auto length_ns = [&](int column) {
    return read.column_null(column) ? std::nullopt
                                    : std::optional<double>(checked_ns(column, static_cast<double>(kTimingNsPerMs)));
  };
  // A window end in ns (the column's stored time less the offset), refused outside the times a
  // call can have (kMaxEventNs), where no alignment writes it.
  const auto end_ns = [&](int64_t ms, const char* name, int64_t from, int64_t offset) {
    int64_t ns;
    if (__builtin_mul_overflow(ms, kTimingNsPerMs, &ns) || __builtin_sub_overflow(ns, offset, &ns) || ns < 0 ||
        ns > kMaxEventNs)
      throw Error(std::string("pp_alignment's ") + name + " of GPU " + uuid + " at from_ms " +
                  std::to_string(from) + " is " + std::to_string(ms) + " (with offset_ns " +
                  std::to_string(offset) + ", a window end outside 1970-2116)");
    return ns;
  };
  std::vector<StretchTiming> stretches;
  while (read.step()) {
    row.name_row(of_gpu);
    const int64_t from = row.whole(0, "a time in unix ms");
    row.name_row(of_gpu, "from_ms", from);
    const int64_t through = row.whole(1, "a time in unix ms");
    const int64_t offset = row.whole(2, "a whole number of ns");
    stretches.push_back({from, end_ns(from, "from_ms", from, offset), end_ns(through, "through_ms", from, offset),
                         checked_ns(3, 1), checked_ns(4, 1), length_ns(5), length_ns(6)});
  }
  return stretches;
}

void place_timing(GpuTimeline& gpu, std::vector<StretchTiming>& stretches, const std::vector<bool>& from_data,
                  int64_t farthest_move_ns, int timing_shift, bool for_shifts, int64_t horizon_ms) {
  if (!timing_shift && !for_shifts) return;
  // Each stretch's reach: the longest of its windows, each series' as the sweep takes it (not
  // which windows this read holds, so that every read gives a job the same stretches).
  for (StretchTiming& stretch : stretches) {
    stretch.reach_ns = 0;
    for (size_t si = 0; si < gpu.series.size(); ++si) {
      const TimelineSeries& s = gpu.series[si];
      const std::optional<double>& kept =
          s.kind == TimelineSeries::kDriverWindow ? stretch.util_window_ns : stretch.window_ns;
      const int64_t reach = s.kind == TimelineSeries::kInstant ? kInstantSpreadNs / 2
                            : kept && from_data[si]            ? std::llround(*kept)
                                                               : std::llround(s.window_ns);
      stretch.reach_ns = std::max(stretch.reach_ns, reach);
    }
  }
  // Per job, its stretches [first, last): those that hold a window of its span.
  std::vector<std::pair<size_t, size_t>> job_stretches;
  std::vector<uint32_t> by_first(gpu.jobs.size());
  const bool ends_in_order = std::is_sorted(stretches.begin(), stretches.end(), [](const StretchTiming& a, const StretchTiming& b) {
    return a.last_end_ns < b.last_end_ns;
  });
  for (uint32_t j = 0; j < gpu.jobs.size(); ++j) {
    job_stretches.push_back(stretches_of_span(stretches, ends_in_order, gpu.jobs[j].first, gpu.jobs[j].last));
    by_first[j] = j;
  }
  std::sort(by_first.begin(), by_first.end(),
            [&](uint32_t a, uint32_t b) { return gpu.jobs[a].first < gpu.jobs[b].first; });
  // The farthest a move can take a sample: the largest timing of the stretches in its horizon.
  std::vector<int64_t> farthest_before(stretches.size() + 1, static_cast<int64_t>(std::llround(kPollWanderNs)) + 1);
  for (size_t i = 0; i < stretches.size(); ++i)
    farthest_before[i + 1] =
        std::max(farthest_before[i],
                 static_cast<int64_t>(std::llround(std::max(stretches[i].dcgm_ns, stretches[i].driver_ns))) + 1);
  // By stretches [first, last) and job (kNoJob: every stretch alike).
  constexpr uint32_t kNoJob = UINT32_MAX;
  std::map<std::tuple<size_t, size_t, uint32_t>, TimingShift> combined;
  const auto timing = [&](size_t first, size_t last, uint32_t job) {
    auto [it, added] = combined.try_emplace({first, last, job});
    if (added)
      it->second = combined_timing(stretches.begin() + static_cast<std::ptrdiff_t>(first),
                                   stretches.begin() + static_cast<std::ptrdiff_t>(last),
                                   job == kNoJob ? std::nullopt
                                                 : std::optional(std::pair(gpu.jobs[job].first, gpu.jobs[job].last)));
    return it->second;
  };
  for (TimelineSeries& s : gpu.series) {
    const SampleReach covers = reach_of(s);
    const bool instant = s.kind == TimelineSeries::kInstant;
    // A sweep in end order: jobs enter as their span starts before what a sample covers ends
    // and leave once it ends before what any later sample covers starts, each as far as a
    // move can take the sample (one moved into a job's span moves as that job's windows do).
    std::vector<uint32_t> active;
    size_t next = 0;
    for (TimelineSample& sample : s.samples) {
      // The stretches within the horizon: those that begin before the sample's stored time plus it.
      const size_t known = static_cast<size_t>(
          std::partition_point(stretches.begin(), stretches.end(),
                               [&](const StretchTiming& t) {
                                 return t.from_ms < sample.ts_ms || t.from_ms - sample.ts_ms < horizon_ms;
                               }) -
          stretches.begin());
      const int64_t move = farthest_before[known];
      const int64_t before = instant ? covers.before : std::llround(s.window_of(sample));
      const int64_t from = sample.end_ns - before - move;
      const int64_t to = sample.end_ns + covers.after + farthest_move_ns;
      const int64_t earliest = sample.end_ns - covers.before - farthest_move_ns;
      while (next < by_first.size() && gpu.jobs[by_first[next]].first < to) active.push_back(by_first[next++]);
      active.erase(
          std::remove_if(active.begin(), active.end(), [&](uint32_t j) { return gpu.jobs[j].last <= earliest; }),
          active.end());
      const auto pick = [&](const TimingShift& t) { return sample.driver_grid ? t.driver_ns : t.dcgm_ns; };
      bool in_a_span = false;
      double shift = 0;
      for (uint32_t j : active)
        if (gpu.jobs[j].last > from && gpu.jobs[j].first < sample.end_ns + covers.after + move) {
          in_a_span = true;
          const size_t first = job_stretches[j].first, last = std::min(job_stretches[j].second, known);
          shift = std::max(shift, pick(first < last ? timing(first, last, j) : timing(0, known, kNoJob)));
        }
      sample.shift_ns = std::llround(in_a_span ? shift : pick(timing(0, known, kNoJob)));
    }
  }
  if (timing_shift) move_windows(gpu, timing_shift);
}

}  // namespace pp
