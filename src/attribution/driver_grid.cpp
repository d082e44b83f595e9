#include "attribution/driver_grid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attribution/profile_peak.hpp"
#include "attribution/window_fit.hpp"
#include "attribution/window_mixes.hpp"

namespace pp {

int64_t driver_window_end(int64_t g_ns, double period_ns, double phase_ns) {
  const double k = std::floor((static_cast<double>(g_ns) - phase_ns) / period_ns);
  return static_cast<int64_t>(std::llround(phase_ns + k * period_ns));
}

GridEstimate estimate_driver_grid(const AlignmentTimeline& timeline, const std::vector<int64_t>& dcgm_ends_ns,
                                  const std::vector<double>& values, const std::vector<double>& periods_ns,
                                  double step_ns) {
  GridEstimate best;
  // As for the offset (windows_to_fit): with too few windows every phase fits alike, and the
  // search read every point of its grid (a fifth where the fits differ) to find none.
  const auto with_value = static_cast<size_t>(std::count_if(values.begin(), values.end(), [](double v) { return std::isfinite(v); }));
  if (timeline.events.empty() || with_value < windows_to_fit(timeline)) return best;
  const std::vector<std::vector<double>> y = {values};
  WindowMixes mix(timeline);
  for (double period : periods_ns) {
    auto loglik = [&](double phase) {
      std::vector<int64_t> ends(dcgm_ends_ns.size());
      for (size_t i = 0; i < ends.size(); ++i) ends[i] = driver_window_end(dcgm_ends_ns[i], period, phase);
      const WindowFit f = fit_windows(mix(ends, period), y, timeline.unknowns);
      return f.any_layer ? f.log_likelihood : -std::numeric_limits<double>::infinity();
    };
    const Peak coarse = best_of_grid(loglik, 0, period, step_ns, true);
    if (!std::isfinite(coarse.value)) continue;
    const Peak p = refine(loglik, coarse.at, 1.5 * step_ns, step_ns / 20);
    if (p.value > best.log_likelihood || !best.found) {
      best.found = true;
      best.period_ns = period;
      best.phase_ns = std::fmod(std::fmod(p.at, period) + period, period);
      best.half90_ns = p.half90;
      best.log_likelihood = p.value;
    }
  }
  return best;
}

}  // namespace pp
