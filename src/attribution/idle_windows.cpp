#include "attribution/idle_windows.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "attribution/window_grid.hpp"

namespace pp {
namespace {

// A stored time takes the median lateness of the windows before it nearest its phase: a few, so
// that a window the stretch before moved by a period, or a scrape late by ms, does not decide.
constexpr size_t kNearestPhases = 5;
constexpr int64_t kIdleNsPerMs = 1000000;

double phase_of(double t_ns, double period_ns) {
  const double p = std::fmod(t_ns, period_ns);
  return p < 0 ? p + period_ns : p;
}

}  // namespace

std::vector<int64_t> idle_window_ends(const std::vector<WindowRecord>& before, const std::vector<int64_t>& ts_ms,
                                      double window_ns, double drift_ppm) {
  if (before.empty() || !(window_ns > 0)) return {};
  std::vector<int64_t> ends;
  std::vector<std::pair<double, double>> near;  // (phase distance, lateness carried to the stored time), ns
  // (Times in ns from the first window's stored time, and latenesses as differences of whole ns:
  // doubles at epoch ns hold only multiples of 256 ns.)
  const int64_t origin_ms = before.front().ts_ms;
  const auto since_origin_ns = [&](int64_t ms) { return static_cast<double>(ms - origin_ms) * 1e6; };
  for (const int64_t ts : ts_ms) {
    const double t = since_origin_ns(ts), phase = phase_of(t, window_ns);
    near.clear();
    for (const WindowRecord& w : before) {
      const double stored = since_origin_ns(w.ts_ms);
      const double apart = std::fabs(phase_of(stored, window_ns) - phase);
      const double lateness = static_cast<double>(w.ts_ms * kIdleNsPerMs - w.end_ns);
      near.emplace_back(std::min(apart, window_ns - apart), lateness + drift_ppm * 1e-6 * (t - stored));
    }
    const size_t k = std::min(kNearestPhases, near.size());
    std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(k), near.end());
    std::vector<double> lateness;
    for (size_t i = 0; i < k; ++i) lateness.push_back(near[i].second);
    std::nth_element(lateness.begin(), lateness.begin() + static_cast<std::ptrdiff_t>(k / 2), lateness.end());
    ends.push_back(ts * kIdleNsPerMs - std::llround(lateness[k / 2]));
  }
  // On DCGM's grid: the one the windows before lie on, continued (fitted to them and these), else
  // the one these lie on alone; a stretch too short for either keeps its scrapes' jitter (a ms).
  std::vector<int64_t> continued;
  for (const WindowRecord& w : before) continued.push_back(w.end_ns);
  continued.insert(continued.end(), ends.begin(), ends.end());
  if (snap_to_grid(continued, window_ns))
    std::copy(continued.end() - static_cast<std::ptrdiff_t>(ends.size()), continued.end(), ends.begin());
  else
    snap_to_grid(ends, window_ns);
  return ends;
}

}  // namespace pp
