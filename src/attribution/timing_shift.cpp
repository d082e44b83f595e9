#include "attribution/timing_shift.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace pp {

int64_t windows_start_ns(const StretchTiming& s) {
  int64_t start;
  return __builtin_sub_overflow(s.first_end_ns, s.reach_ns, &start) ? INT64_MIN : start;
}

int64_t stretch_reach_ns(const GpuTimeline& gpu, const std::vector<bool>& from_data, const StretchTiming& stretch) {
  int64_t reach = 0;
  for (size_t si = 0; si < gpu.series.size(); ++si) {
    const TimelineSeries& s = gpu.series[si];
    const std::optional<double>& kept =
        s.kind == TimelineSeries::kDriverWindow ? stretch.util_window_ns : stretch.window_ns;
    const int64_t series_reach = s.kind == TimelineSeries::kInstant ? kInstantSpreadNs / 2
                                 : kept && from_data[si]            ? std::llround(*kept)
                                                                    : std::llround(s.window_ns);
    reach = std::max(reach, series_reach);
  }
  return reach;
}

namespace {

constexpr int64_t kTimingNsPerMs = 1000000;

// How far the estimator's timing shift moves windows: the uncertainty of the offset over a
// job's stretches (those within the window's horizon, timing_horizon_ms). Each stretch's offset
// is estimated from its own samples, so their errors are independent and their mean is known
// sqrt(n) times better than one of them (each weighing as much of the job's span as it covers);
// a stretch whose timing is unknown (half a window) still dominates. DCGM's grid and the
// driver's apart.
struct TimingShift {
  double dcgm_ns = 0, driver_ns = 0;
};

// How much of a job's span [span_first, span_last] (ns) a stretch's windows cover: the share of
// the job's windows whose placement its offset decides. In integers: at epoch ns (some 1.7e18)
// a double holds only multiples of 256 ns, which moved each weight by a few hundred ns and a
// job's rounded shift by 1 ns in some 1 in 2,000 jobs.
uint64_t overlap_ns(const StretchTiming& s, int64_t span_first, int64_t span_last) {
  const int64_t from = std::max(windows_start_ns(s), span_first);
  const int64_t to = std::min(s.last_end_ns, span_last);
  if (to <= from) return 0;
  return static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
}

// The stretches' timings combined as independent errors, each weighing as much of the job's span
// as its windows cover (none: every stretch alike): an offset error moves only its own
// stretch's windows, so a short stretch (a job's last may hold half as many windows as the
// others) moves few of the job's windows. Summed exactly where every timing is whole, as the
// align step writes them, so that a job's stretches summed one by one (read_stretches) and from
// the running sums of pp_alignment_sums (StretchReader) give the same shift to the bit; in
// doubles where a timing edited by hand is not (every stretch is read one by one then).
struct TimingSums {
  bool whole = true;
  Uint256 weighted[2];  // per grid (DCGM's, the driver's): sum (w t)^2
  Uint128 weight = 0;   // sum w
  Uint256 alike[2];     // sum t^2
  int64_t count = 0;
  double weighted_double[2] = {0, 0}, weight_double = 0, alike_double[2] = {0, 0};

  void add(const StretchTiming& s, std::optional<std::pair<int64_t, int64_t>> span) {
    const uint64_t w = span ? overlap_ns(s, span->first, span->second) : 1;
    const double t[2] = {s.dcgm_ns, s.driver_ns};
    for (int grid = 0; grid < 2; ++grid) {
      if (const std::optional<int64_t> whole_t = whole_ns(t[grid])) {
        const auto wt = static_cast<Uint128>(w) * static_cast<Uint128>(*whole_t);
        weighted[grid].add_product(wt, wt);
        alike[grid].add_product(static_cast<Uint128>(*whole_t), static_cast<Uint128>(*whole_t));
      } else {
        whole = false;
      }
      const auto wd = static_cast<double>(w);
      weighted_double[grid] += wd * wd * t[grid] * t[grid];
      alike_double[grid] += t[grid] * t[grid];
    }
    weight += w;
    weight_double += static_cast<double>(w);
    ++count;
  }

  // Stretches wholly inside the span, each of weight A ms + reach_ns (A: its length): from
  // their sums, (A 1e6 + R)^2 t^2 = 1e12 A^2 t^2 + 2e6 R A t^2 + R^2 t^2.
  void add_inside(const StretchSums& inside, int64_t reach_ns) {
    const auto r = static_cast<Uint128>(reach_ns);
    const GridSums* grids[2] = {&inside.dcgm, &inside.driver};
    for (int grid = 0; grid < 2; ++grid) {
      weighted[grid].add_product(grids[grid]->a2t2, static_cast<Uint128>(kTimingNsPerMs) * kTimingNsPerMs);
      weighted[grid].add_product(grids[grid]->at2, 2 * kTimingNsPerMs * r);
      weighted[grid].add_product(grids[grid]->t2, r * r);
      alike[grid].add(grids[grid]->t2);
    }
    weight += static_cast<Uint128>(inside.length_ms) * kTimingNsPerMs + static_cast<Uint128>(inside.stretches) * r;
    count += inside.stretches;
  }

  // Never below a fraction of how far DCGM's own polls stray from the straight grid the windows
  // are put on (its scheduler's lateness, up to some 0.2 ms): no stored time shows that, and at
  // low noise a 0.1 ms layer's value moves with it (8% at zero noise). Nor does it shrink with
  // the stretches: shrinking as 0.1 ms x sqrt(3 / n), it let a 6-hour realistic recording mark a
  // 0.2 ms layer identified and 6% off after an hour.
  TimingShift combined(bool by_span) const {
    // (A span that none of its stretches' windows reach, e.g. one of reversed ends: every
    // stretch alike.)
    const bool weighted_by_span = by_span && (whole ? weight > 0 : weight_double > 0);
    if (!weighted_by_span && count == 0) return {kPollWanderNs, kPollWanderNs};
    double t[2];
    for (int grid = 0; grid < 2; ++grid) {
      if (weighted_by_span)
        t[grid] = whole ? std::sqrt(weighted[grid].to_double()) / to_double(weight)
                        : std::sqrt(weighted_double[grid]) / weight_double;
      else
        t[grid] = whole ? std::sqrt(alike[grid].to_double()) / static_cast<double>(count)
                        : std::sqrt(alike_double[grid]) / static_cast<double>(count);
    }
    return {std::max(t[0], kPollWanderNs), std::max(t[1], kPollWanderNs)};
  }
};

// The reach of a stretch that keeps no window of its own.
int64_t default_reach_ns(const GpuTimeline& gpu) {
  return stretch_reach_ns(gpu, std::vector<bool>(gpu.series.size(), false), StretchTiming{});
}

// The GPU's stretches as place_timing takes them, by number, from what is known of them.
class StretchIndex {
 public:
  StretchIndex(const KnownStretches& known, const GpuTimeline& gpu) : known_(known), gpu_(gpu) {
    const auto by_last_end = [](const StretchTiming& a, const StretchTiming& b) { return a.last_end_ns < b.last_end_ns; };
    ends_in_order_ = std::is_sorted(known.stretches.begin(), known.stretches.end(), by_last_end);
  }
  size_t size() const { return known_.first + known_.stretches.size(); }
  const StretchTiming& at(size_t i) const { return known_.stretches[i - known_.first]; }

  // The stretches that hold a window of the job's span [first, last] (a window reaching its
  // stretch's reach_ns back from its end), as numbers [from, to). The first is found by
  // bisection where the stretches' last ends are in order, as the align step writes them; else
  // (pp_alignment edited by hand) by a scan, so that every read finds the same one.
  std::pair<size_t, size_t> of_job(uint32_t job) const {
    const int64_t first = gpu_.jobs[job].first, last = gpu_.jobs[job].last;
    const KnownStretches::JobStart* start = job_start(job);
    size_t from, to;
    if (start) {
      from = start->first;
      // Its edge; the stretches inside the span up to `first` end before it ends (StretchReader).
      to = from;
      for (const StretchTiming& s : start->edge) {
        if (windows_start_ns(s) >= last) return {from, to};
        ++to;
      }
      // (The first inside begins in the span: past the span's end where its ends are reversed.)
      if (to < known_.first && first >= last) return {from, to};
      to = known_.first;
    } else {
      const auto ends_before = [&](const StretchTiming& s) { return s.last_end_ns <= first; };
      const auto& s = known_.stretches;
      from = known_.first + static_cast<size_t>((ends_in_order_ ? std::partition_point(s.begin(), s.end(), ends_before)
                                                                : std::find_if_not(s.begin(), s.end(), ends_before)) -
                                                s.begin());
      to = from;
    }
    while (to < size() && windows_start_ns(at(to)) < last) ++to;
    return {from, to};
  }

  // The sums of the stretches [from, to) (from: of_job's for the job; 0 for none).
  TimingSums sums(size_t from, size_t to, std::optional<uint32_t> job) const {
    TimingSums sums;
    std::optional<std::pair<int64_t, int64_t>> span;
    if (job) span = std::pair(gpu_.jobs[*job].first, gpu_.jobs[*job].last);
    size_t next = from;
    if (const KnownStretches::JobStart* start = job ? job_start(*job) : nullptr) {
      for (const StretchTiming& s : start->edge) {
        if (next == to) return sums;
        sums.add(s, span);
        ++next;
      }
      if (next < known_.first && to >= known_.first) {
        sums.add_inside(sums_between(start->before_inside, known_.before), default_reach_ns(gpu_));
        next = known_.first;
      }
    } else if (next == 0 && to >= known_.first && known_.first > 0) {
      // (Every stretch alike from the first: the GPU's, for a window of no job's span.)
      sums.add_inside(known_.before, 0);
      next = known_.first;
    }
    if (next < known_.first && next < to) throw std::logic_error("place_timing: stretches not read");
    for (; next < to; ++next) sums.add(at(next), span);
    return sums;
  }

 private:
  const KnownStretches::JobStart* job_start(uint32_t job) const {
    if (known_.job_starts.empty()) return nullptr;
    const KnownStretches::JobStart& start = known_.job_starts[job];
    if (start.kind == KnownStretches::JobStart::kNotRead)
      throw std::logic_error("place_timing: a job's stretches not read");
    return start.kind == KnownStretches::JobStart::kBefore ? &start : nullptr;
  }

  const KnownStretches& known_;
  const GpuTimeline& gpu_;
  bool ends_in_order_;
};

}  // namespace

void place_timing(GpuTimeline& gpu, KnownStretches& known, const std::vector<bool>& from_data,
                  int64_t farthest_move_ns, int timing_shift, bool for_shifts, int64_t horizon_ms) {
  if (!timing_shift && !for_shifts) return;
  // Each stretch's reach (not which windows this read holds, so that every read gives a job the
  // same stretches).
  for (StretchTiming& stretch : known.stretches) stretch.reach_ns = stretch_reach_ns(gpu, from_data, stretch);
  for (KnownStretches::JobStart& start : known.job_starts)
    for (StretchTiming& stretch : start.edge) stretch.reach_ns = stretch_reach_ns(gpu, from_data, stretch);
  const StretchIndex stretches(known, gpu);
  // Per job, its stretches [first, last): those that hold a window of its span (read as the
  // sweep first meets the job: a read of the newest windows knows only the jobs they reach).
  std::vector<std::optional<std::pair<size_t, size_t>>> job_stretches(gpu.jobs.size());
  std::vector<uint32_t> by_first(gpu.jobs.size());
  for (uint32_t j = 0; j < gpu.jobs.size(); ++j) by_first[j] = j;
  std::sort(by_first.begin(), by_first.end(),
            [&](uint32_t a, uint32_t b) { return gpu.jobs[a].first < gpu.jobs[b].first; });
  // The farthest a move can take a sample: the largest timing of the stretches in its horizon
  // (by the number of stretches there, from known.first on).
  std::vector<int64_t> farthest_before(
      known.stretches.size() + 1,
      std::max(static_cast<int64_t>(std::llround(kPollWanderNs)), known.before.longest_ns) + 1);
  for (size_t i = 0; i < known.stretches.size(); ++i)
    farthest_before[i + 1] = std::max(
        farthest_before[i],
        static_cast<int64_t>(std::llround(std::max(known.stretches[i].dcgm_ns, known.stretches[i].driver_ns))) + 1);
  // By stretches [first, last) and job (kNoJob: every stretch alike).
  constexpr uint32_t kNoJob = UINT32_MAX;
  std::map<std::tuple<size_t, size_t, uint32_t>, TimingShift> combined;
  const auto timing = [&](size_t first, size_t last, uint32_t job) {
    auto [it, added] = combined.try_emplace({first, last, job});
    if (added) {
      const std::optional<uint32_t> of_job = job == kNoJob ? std::nullopt : std::optional(job);
      it->second = stretches.sums(first, last, of_job).combined(job != kNoJob);
    }
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
      // The stretches within the horizon: those that begin before the sample's stored time plus
      // it (every one before known.first does).
      const size_t known_count =
          known.first + static_cast<size_t>(std::partition_point(known.stretches.begin(), known.stretches.end(),
                                                                 [&](const StretchTiming& t) {
                                                                   return t.from_ms < sample.ts_ms ||
                                                                          t.from_ms - sample.ts_ms < horizon_ms;
                                                                 }) -
                                            known.stretches.begin());
      const int64_t move = farthest_before[known_count - known.first];
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
          if (!job_stretches[j]) job_stretches[j] = stretches.of_job(j);
          const size_t first = job_stretches[j]->first, last = std::min(job_stretches[j]->second, known_count);
          shift = std::max(shift, pick(first < last ? timing(first, last, j) : timing(0, known_count, kNoJob)));
        }
      sample.shift_ns = std::llround(in_a_span ? shift : pick(timing(0, known_count, kNoJob)));
    }
  }
  if (timing_shift) move_windows(gpu, timing_shift);
}

}  // namespace pp
