#include "attribution/window_grid.hpp"

#include <cmath>

namespace pp {
namespace {

constexpr double kGridReachNs = 3e6;  // an end further than this from the grid is left where it is

}  // namespace

bool snap_to_grid(std::vector<int64_t>& ends_ns, double window_ns) {
  const size_t n = ends_ns.size();
  if (n < 8 || !(window_ns > 0)) return false;
  std::vector<double> k(n), e(n);
  for (size_t i = 0; i < n; ++i) {
    e[i] = static_cast<double>(ends_ns[i] - ends_ns[0]);
    k[i] = std::round(e[i] / window_ns);
    if (i > 0 && k[i] <= k[i - 1]) return false;  // two ends in one grid step: not a grid
  }
  // Least squares e = phase + period * k over the windows kept (first all, then those near the
  // line: a window placed a fraction of a period off must not bend it).
  std::vector<bool> use(n, true);
  double phase = 0, period = window_ns;
  for (int pass = 0; pass < 2; ++pass) {
    double sk = 0, se = 0, skk = 0, ske = 0, m = 0;
    for (size_t i = 0; i < n; ++i)
      if (use[i]) sk += k[i], se += e[i], skk += k[i] * k[i], ske += k[i] * e[i], m += 1;
    const double det = m * skk - sk * sk;
    if (m < 8 || !(det > 0)) return false;
    period = (m * ske - sk * se) / det;
    phase = (se - period * sk) / m;
    for (size_t i = 0; i < n; ++i) use[i] = std::fabs(e[i] - phase - period * k[i]) <= kGridReachNs;
  }
  if (std::fabs(period - window_ns) > 0.01 * window_ns) return false;
  const int64_t origin = ends_ns[0];
  for (size_t i = 0; i < n; ++i)
    if (use[i]) ends_ns[i] = origin + std::llround(phase + period * k[i]);
  return true;
}

}  // namespace pp
