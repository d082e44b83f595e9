// GPU_UTIL's driver grid. NVML reports utilization as an average over the driver's own period
// ("between 1 second and 1/6 second, depending on the product") on the driver's own grid, not
// over DCGM's windows: given the DCGM window ends the alignment placed (alignment.hpp), the
// period and the grid's phase are estimated the same way as the offset, by the profile
// log-likelihood of the windows they give.
#pragma once
#include <cstdint>
#include <vector>

#include "attribution/alignment.hpp"

namespace pp {

// The driver's grid for a metric averaged over its own period: for each candidate period, the
// phase (grid points at phase + k * period) whose windows (u - period, u], u the newest grid
// point at or before each DCGM window end, fit best.
struct GridEstimate {
  bool found = false;
  double period_ns = 0, phase_ns = 0, half90_ns = 0;
  double log_likelihood = 0;
};
GridEstimate estimate_driver_grid(const AlignmentTimeline& timeline, const std::vector<int64_t>& dcgm_ends_ns,
                                  const std::vector<double>& values, const std::vector<double>& periods_ns,
                                  double step_ns);

// The end of the driver window that holds DCGM window end g: the newest grid point <= g.
int64_t driver_window_end(int64_t g_ns, double period_ns, double phase_ns);

}  // namespace pp
