#include "attribution/window_grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace pp {
namespace {

// The grid is fitted to the ends within this of it (at least), so that a window placed a
// fraction of a period off does not bend it ...
constexpr double kFitReachNs = 3e6;
// ... and every end within this share of a period of it is put on it: DCGM's windows lie on
// its grid, so an end off it by less than half a period is that grid point, however late the
// scrape that stored it (Prometheus' scrapes run late by several ms on a busy host).
constexpr double kSnapReachPeriods = 0.45;
constexpr double kSignificantSlopeSe = 3;
constexpr size_t kBaseline = 16;

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
  // short against a period a per mille or two off window_ns), and each end's step by it:
  // counted by window_ns, the steps of a period a few per mille off it would be one off past
  // half a period of drift.
  const size_t baseline = std::min(kBaseline, n - 1);
  std::vector<double> periods;
  for (size_t i = 0; i + baseline < n; ++i)
    if (k[i + baseline] > k[i]) periods.push_back((e[i + baseline] - e[i]) / (k[i + baseline] - k[i]));
  if (periods.empty()) return false;
  std::nth_element(periods.begin(), periods.begin() + static_cast<std::ptrdiff_t>(periods.size() / 2), periods.end());
  const double own_period = periods[periods.size() / 2];
  for (size_t i = 1; i < n; ++i) {
    k[i] = k[i - 1] + std::round((e[i] - e[i - 1]) / own_period);
    if (k[i] <= k[i - 1]) return false;  // two ends in one grid step: not a grid
  }
  // Least squares e = phase + period * k over the windows near a first grid, twice: a window
  // placed a fraction of a period off must not bend it. The first grid has window_ns's period
  // through the median end (DCGM's and Prometheus' clocks differ by some ppm), robust to the
  // scrapes' lateness; near it means within 3 ms, or as far as the nearer half of the ends where
  // they scatter more (scrapes late by tens of ms: the half is symmetric about the grid, so it
  // tilts no line, where a band around a line through all of them would keep its tilt).
  double phase = 0, period = std::fabs(own_period - window_ns) <= 0.01 * window_ns ? own_period : window_ns;
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = e[i] - period * k[i];
  const auto middle = r.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(r.begin(), middle, r.end());
  phase = *middle;
  for (size_t i = 0; i < n; ++i) r[i] = std::fabs(e[i] - phase - period * k[i]);
  std::nth_element(r.begin(), middle, r.end());
  const double reach = std::min(std::max(kFitReachNs, *middle), kSnapReachPeriods * window_ns);
  std::vector<bool> use(n);
  const auto near_line = [&] {
    for (size_t i = 0; i < n; ++i) use[i] = std::fabs(e[i] - phase - period * k[i]) <= reach;
  };
  near_line();
  for (int pass = 0; pass < 2; ++pass) {
    double sk = 0, se = 0, skk = 0, ske = 0, m = 0;
    for (size_t i = 0; i < n; ++i)
      if (use[i]) sk += k[i], se += e[i], skk += k[i] * k[i], ske += k[i] * e[i], m += 1;
    const double det = m * skk - sk * sk;
    if (m < 8 || !(det > 0)) return false;
    period = (m * ske - sk * se) / det;
    phase = (se - period * sk) / m;
    // A period that does not stand out of the scatter from window_ns is window_ns: the clocks'
    // ppm apart move a stretch's ends by less than the slope of a few noisy ends would.
    double rss = 0;
    for (size_t i = 0; i < n; ++i)
      if (use[i]) rss += (e[i] - phase - period * k[i]) * (e[i] - phase - period * k[i]);
    const double slope_se = m > 2 ? std::sqrt(rss / (m - 2) * m / det) : 0;
    if (std::fabs(period - window_ns) <= kSignificantSlopeSe * slope_se) {
      period = window_ns;
      phase = (se - period * sk) / m;
    }
    near_line();
  }
  if (std::fabs(period - window_ns) > 0.01 * window_ns) return false;
  // Each end's grid point by the fitted period: counted by window_ns, the steps of a period a
  // few per mille off it would be one off past half a period of drift, and those ends would be
  // put a period from where they are.
  for (size_t i = 0; i < n; ++i) {
    k[i] = std::round((e[i] - phase) / period);
    if (i > 0 && k[i] <= k[i - 1]) return false;
  }
  const int64_t origin = ends_ns[0];
  for (size_t i = 0; i < n; ++i)
    if (std::fabs(e[i] - phase - period * k[i]) <= kSnapReachPeriods * period)
      ends_ns[i] = origin + std::llround(phase + period * k[i]);
  return true;
}

}  // namespace pp
