#include "attribution/scrape_phases.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

namespace pp {
namespace {

// Phases closer than this are one group: a scrape's lateness (|N(0, 1 ms)| as a rule, truncated
// to the ms) spreads its group by a few ms, while scrape intervals that are no multiple of the
// period put the groups tens of ms apart.
constexpr int64_t kSamePhaseNs = 5000000;
constexpr double kPhasesAlikeMargin = 10;  // log-likelihood units: two lattices that fit alike (alignment.cpp's margin)
constexpr double kSamePlaceNs = 3e6;       // two placements of a window this close are the same
// A scrape interval within this share of a period of a whole number of periods is one: its
// scrapes walk through DCGM's grid by at most 1 ms each (a 110 ms scrape walks by 10).
constexpr double kWholePeriodsShare = 0.01;

int64_t modulo(int64_t a, int64_t m) { return ((a % m) + m) % m; }

// Whether the stored times' median spacing (the scrape interval: a scrape's lateness moves the
// gaps both ways) is a whole number of periods. Every scrape then falls at one phase of DCGM's
// grid, and phases apart are the lateness of scrapes late by tens of ms (half-normal: a tail
// that thins out past the group of those on time, with gaps in it), not phases of their own.
// The interval is the stretch's span over its steps (each gap counted in median gaps): the
// median gap alone is whole ms, too coarse to tell 100 ms from 101 or 109 from 110.
bool at_whole_periods(const std::vector<int64_t>& ts_ns, double period_ns) {
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < ts_ns.size(); ++i) gaps.push_back(ts_ns[i] - ts_ns[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  const auto median_gap = static_cast<double>(gaps[gaps.size() / 2]);
  if (!(median_gap > 0)) return false;
  const auto span = static_cast<double>(ts_ns.back() - ts_ns.front());
  double steps = 0;
  for (const int64_t gap : gaps) steps += std::max(1.0, std::round(static_cast<double>(gap) / median_gap));
  const double periods = span / steps / period_ns;
  return std::round(periods) >= 1 && std::fabs(periods - std::round(periods)) < kWholePeriodsShare;
}

// Where each stored time's window ends under an estimate, its stored times being ts_ns.
std::vector<double> placed_ends(const OffsetEstimate& e, const std::vector<int64_t>& ts_ns, double period_ns) {
  std::vector<double> ends(ts_ns.size());
  for (size_t i = 0; i < ts_ns.size(); ++i)
    ends[i] = static_cast<double>(ts_ns[i]) - e.offset_ns - (e.shift.empty() ? 0 : e.shift[i]) * period_ns;
  return ends;
}

}  // namespace

std::vector<int64_t> phase_thresholds(const std::vector<int64_t>& ts_ns, double period_ns) {
  const auto period = static_cast<int64_t>(std::llround(period_ns));
  if (period <= 2 * kSamePhaseNs || ts_ns.size() < 8 || at_whole_periods(ts_ns, period_ns)) return {};
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

// estimate_offset over the stored times as they are, or, where they fall at several phases of
// the window's period (a scrape interval that is no multiple of it: scrape_phases.hpp), over
// them put on the lattice of each threshold: the best fit, with its stored times in `lattice`
// (empty: as they are). Two lattices that fit alike and place the windows apart leave the
// offset open: which phases' windows are a period later is not known.
OffsetEstimate estimate_over_phases(const AlignmentTimeline& timeline, const AlignmentSamples& samples, double window_ns,
                                    const std::vector<OffsetRange>& ranges, double step_ns,
                                    std::vector<int64_t>& lattice) {
  lattice.clear();
  const std::vector<int64_t> thresholds = phase_thresholds(samples.ts_ns, window_ns);
  if (thresholds.empty()) return estimate_offset(timeline, samples, window_ns, window_ns, ranges, step_ns);
  std::vector<OffsetEstimate> fits;
  std::vector<std::vector<int64_t>> times;
  AlignmentSamples moved = samples;
  for (int64_t threshold : thresholds) {
    moved.ts_ns = onto_lattice(samples.ts_ns, window_ns, threshold);
    fits.push_back(estimate_offset(timeline, moved, window_ns, window_ns, ranges, step_ns));
    times.push_back(moved.ts_ns);
  }
  size_t best = 0;
  for (size_t i = 1; i < fits.size(); ++i)
    if (fits[i].found && (!fits[best].found || fits[i].log_likelihood > fits[best].log_likelihood)) best = i;
  if (!fits[best].found) return std::move(fits[best]);
  const std::vector<double> ends = placed_ends(fits[best], times[best], window_ns);
  for (size_t i = 0; i < fits.size(); ++i) {
    if (i == best || !fits[i].found || fits[best].log_likelihood - fits[i].log_likelihood >= kPhasesAlikeMargin) continue;
    const std::vector<double> other = placed_ends(fits[i], times[i], window_ns);
    size_t apart = 0;
    for (size_t k = 0; k < ends.size(); ++k) apart += std::fabs(ends[k] - other[k]) > kSamePlaceNs;
    if (apart > ends.size() / 20) fits[best].unique = false;
  }
  lattice = std::move(times[best]);
  return std::move(fits[best]);
}

}  // namespace pp
