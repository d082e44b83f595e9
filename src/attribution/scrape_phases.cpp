#include "attribution/scrape_phases.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace pp {
namespace {

// Phases closer than this are one group: a scrape's lateness (|N(0, 1 ms)| as a rule, truncated
// to the ms) spreads its group by a few ms, while scrape intervals that are no multiple of the
// period put the groups tens of ms apart.
constexpr int64_t kSamePhaseNs = 5000000;

int64_t modulo(int64_t a, int64_t m) { return ((a % m) + m) % m; }

}  // namespace

std::vector<int64_t> phase_thresholds(const std::vector<int64_t>& ts_ns, double period_ns) {
  const auto period = static_cast<int64_t>(std::llround(period_ns));
  if (period <= 2 * kSamePhaseNs || ts_ns.size() < 8) return {};
  std::vector<int64_t> phase;
  for (int64_t t : ts_ns) phase.push_back(modulo(t, period));
  std::sort(phase.begin(), phase.end());
  // Groups of phases each within kSamePhaseNs of the next, in order of phase.
  struct Group {
    int64_t first, last;
    size_t count;
  };
  std::vector<Group> groups;
  for (int64_t p : phase) {
    if (groups.empty() || p - groups.back().last > kSamePhaseNs)
      groups.push_back({p, p, 1});
    else
      groups.back().last = p, ++groups.back().count;
  }
  // The circle closes: a group across phase 0 is one.
  if (groups.size() > 1 && groups.front().first + period - groups.back().last <= kSamePhaseNs) {
    groups.front().first = groups.back().first - period;
    groups.front().count += groups.back().count;
    groups.pop_back();
  }
  const size_t least = std::max<size_t>(3, ts_ns.size() / 20);
  groups.erase(std::remove_if(groups.begin(), groups.end(), [&](const Group& g) { return g.count < least; }),
               groups.end());
  if (groups.size() < 2) return {};
  std::vector<int64_t> thresholds;
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& a = groups[i];
    const Group& b = groups[(i + 1) % groups.size()];
    const int64_t arc = modulo(b.first - a.last, period);
    thresholds.push_back(modulo(a.last + arc / 2, period));
  }
  return thresholds;
}

std::vector<int64_t> onto_lattice(const std::vector<int64_t>& ts_ns, double period_ns, int64_t threshold_ns) {
  const auto period = static_cast<int64_t>(std::llround(period_ns));
  std::vector<int64_t> out(ts_ns.size());
  for (size_t i = 0; i < ts_ns.size(); ++i) out[i] = ts_ns[i] - modulo(ts_ns[i] - threshold_ns, period);
  return out;
}

}  // namespace pp
