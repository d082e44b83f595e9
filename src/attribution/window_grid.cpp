#include "attribution/window_grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace pp {
namespace {

// The median of v, which it reorders.
double median_in_place(std::vector<double>& v) {
  const auto middle = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), middle, v.end());
  return *middle;
}

// Every end within this share of a period of the grid is put on it: DCGM's windows lie on its
// grid, so an end off it by less than half a period is that grid point, however late the scrape
// that stored it (Prometheus' scrapes run late by several ms on a busy host).
constexpr double kSnapReachPeriods = 0.45;
// A period must stand this many standard errors from window_ns to be taken over it.
constexpr double kSignificantSlopeSe = 3;
constexpr size_t kBaseline = 16;
// A pair's slope further than this many standard deviations (from their median absolute
// deviation) from the others' median is a window placed off, not lateness.
constexpr double kOutlierSpreads = 5;
constexpr double kMadToSd = 1.4826;
constexpr double kStoredResolutionNs = 1e6;

double median_of(std::vector<double> v) { return median_in_place(v); }

// Each end's step on a grid `period` apart: the nearest to it from phase_at(i, k), which sees the
// steps before i. Of two ends at one step the first is one late by over half a period (the
// scrapes' lateness is one-sided) where the step before it is free; else false, or where
// `strict` is not set the second is taken one step on (a count to be made again).
template <class Phase>
bool count_steps(const std::vector<double>& e, double period, Phase&& phase_at, bool strict, std::vector<double>& k) {
  for (size_t i = 0; i < e.size(); ++i) {
    k[i] = std::round((e[i] - phase_at(i, k)) / period);
    if (i == 0 || k[i] > k[i - 1]) continue;
    if (k[i] == k[i - 1] && (i == 1 || k[i - 2] < k[i] - 1)) {
      k[i - 1] = k[i] - 1;
    } else if (strict) {
      return false;
    } else {
      k[i] = k[i - 1] + 1;
    }
  }
  return true;
}

}  // namespace

bool snap_to_grid(std::vector<int64_t>& ends_ns, double window_ns) {
  const size_t n = ends_ns.size();
  if (n < 8 || !(window_ns > 0)) return false;
  std::vector<double> k(n), e(n);
  for (size_t i = 0; i < n; ++i) {
    e[i] = static_cast<double>(ends_ns[i] - ends_ns[0]);
    k[i] = std::round(e[i] / window_ns);
  }
  // The ends' own period, from spans of kBaseline steps (long against the scrapes' lateness,
  // short against a period a per mille or two off window_ns), and each end's step by it, from
  // the median phase of the kBaseline ends before it: counted by window_ns, the steps of a
  // period a few per mille off it would be one off past half a period of drift, and counted
  // from the end before alone, one end late by half a period would put every step after it
  // one off. A step counted here only has to be near right: the grid's period below is robust
  // to a few that are not, and every step is counted again by it.
  const size_t baseline = std::min(kBaseline, n - 1);
  std::vector<double> periods;
  for (size_t i = 0; i + baseline < n; ++i)
    if (k[i + baseline] > k[i]) periods.push_back((e[i + baseline] - e[i]) / (k[i + baseline] - k[i]));
  if (periods.empty()) return false;
  const double own_period = median_of(periods);
  std::vector<double> before;  // (one buffer for every end: the search snaps hundreds of times a stretch)
  before.reserve(baseline);
  const auto local_phase = [&](size_t i, const std::vector<double>& steps) {
    if (i == 0) return 0.0;
    before.clear();
    for (size_t j = i > baseline ? i - baseline : 0; j < i; ++j) before.push_back(e[j] - own_period * steps[j]);
    return median_in_place(before);
  };
  count_steps(e, own_period, local_phase, false, k);
  // The grid's period: the mean slope of pairs half the stretch apart (disjoint but for the
  // middle end of an odd count), but for pairs far out of the others' spread (a window placed a
  // fraction of a period off). The scrapes' lateness is one-sided (never early), so a
  // least-squares line through the ends nearest it follows its own tilt; the difference of two
  // ends' independent lateness is symmetric, so the pairs' slopes are not pulled, and their
  // spread says how well their mean is known. A period that does not stand out of that from
  // window_ns is window_ns: the clocks' ppm apart move a stretch's ends by less than the slope
  // of a few noisy ends would.
  const size_t half = n / 2;
  std::vector<double> slopes, spread;
  for (size_t i = 0; i + half < n; ++i) slopes.push_back((e[i + half] - e[i]) / (k[i + half] - k[i]));
  const double middle = median_of(slopes);
  for (const double s : slopes) spread.push_back(std::fabs(s - middle));
  // (Stored times in whole ms: the spread of ends late by less is that ms, not the lateness.)
  const double reach = kOutlierSpreads * std::max(kMadToSd * median_of(spread), kStoredResolutionNs / static_cast<double>(half));
  // (Sums of the slopes' differences from their median: squares of periods of a second, 1e17
  // ns squared, would leave their variance to rounding.)
  double sum = 0, sum2 = 0, m = 0;
  for (const double s : slopes)
    if (std::fabs(s - middle) <= reach) sum += s - middle, sum2 += (s - middle) * (s - middle), m += 1;
  const double mean_off = sum / m;
  double period = middle + mean_off;
  const double slope_se = m > 1 ? std::sqrt(std::max(0.0, sum2 - m * mean_off * mean_off) / (m - 1) / m) : 0;
  if (std::fabs(period - window_ns) <= kSignificantSlopeSe * slope_se) period = window_ns;
  if (std::fabs(period - window_ns) > 0.01 * window_ns) return false;
  // The grid through the ends' mean, but for ends a fraction of a period off (windows placed
  // off, not late): the stored times keep the offset on average. Each end's grid point by it;
  // two ends at one are no grid.
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = e[i] - period * k[i];
  const double middle_end = median_of(r);
  double phase = 0, near = 0;
  for (const double x : r)
    if (std::fabs(x - middle_end) <= kSnapReachPeriods * period) phase += x, near += 1;
  phase /= near;
  if (!count_steps(e, period, [&](size_t, const std::vector<double>&) { return phase; }, true, k)) return false;
  // An end left where it is (over 0.45 of a period off its point, as one whose step was moved
  // back above may be) must still lie between its neighbours' points: else the ends are no grid.
  const int64_t origin = ends_ns[0];
  std::vector<int64_t> snapped(n);
  for (size_t i = 0; i < n; ++i) {
    snapped[i] = std::fabs(e[i] - phase - period * k[i]) <= kSnapReachPeriods * period
                     ? origin + std::llround(phase + period * k[i])
                     : ends_ns[i];
    if (i > 0 && snapped[i] <= snapped[i - 1]) return false;
  }
  ends_ns = std::move(snapped);
  return true;
}

bool GridSnaps::snap_as(const Snapped& s, std::vector<int64_t>& ends_ns, double window_ns) {
  const size_t n = ends_ns.size();
  if (n == 0 || s.ends.size() != n || !(s.window_ns == window_ns)) return false;
  int64_t by = 0, d = 0;
  if (__builtin_sub_overflow(ends_ns[0], s.ends[0], &by)) return false;
  for (size_t i = 1; i < n; ++i)
    if (__builtin_sub_overflow(ends_ns[i], s.ends[i], &d) || d != by) return false;
  if (!s.on_grid) return true;
  std::vector<int64_t> moved(n);
  for (size_t i = 0; i < n; ++i)
    if (__builtin_add_overflow(s.snapped[i], by, &moved[i])) return false;
  ends_ns = std::move(moved);
  return true;
}

bool GridSnaps::operator()(std::vector<int64_t>& ends_ns, double window_ns) {
  for (size_t k = 0; k < kept_.size(); ++k)
    if (snap_as(kept_[k], ends_ns, window_ns)) {
      std::rotate(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(k),
                  kept_.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      return kept_.front().on_grid;
    }
  std::rotate(kept_.rbegin(), kept_.rbegin() + 1, kept_.rend());  // the least recently used goes
  Snapped& s = kept_.front();
  s.window_ns = window_ns;
  s.ends = ends_ns;
  s.on_grid = snap_to_grid(ends_ns, window_ns);
  s.snapped = s.on_grid ? ends_ns : std::vector<int64_t>();
  return s.on_grid;
}

double spread_about_grid(const std::vector<int64_t>& ends_ns, double window_ns) {
  if (ends_ns.empty() || !(window_ns > 0)) return 0;
  std::vector<double> phase;
  for (const int64_t end : ends_ns) {
    const double from_first = static_cast<double>(end - ends_ns[0]);
    phase.push_back(from_first - window_ns * std::floor(from_first / window_ns));
  }
  std::sort(phase.begin(), phase.end());
  // The widest gap between neighbouring phases, round the circle too, is what the arc leaves out.
  double widest = phase.front() + window_ns - phase.back();
  for (size_t i = 1; i < phase.size(); ++i) widest = std::max(widest, phase[i] - phase[i - 1]);
  return window_ns - widest;
}

}  // namespace pp
