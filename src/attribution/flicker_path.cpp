#include "attribution/flicker_path.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pp {
namespace {

constexpr double kCopyOfFarPenalty = 25;  // chi-square units: a copied window taken as the far one
constexpr double kMaybeCopyCost = 5;      // chi-square units: an idle sample taken as a copy of the one before
// Chi-square units: a sample placed off the window its stored time says. Too small to outweigh
// any value, it settles ties: windows whose values cannot tell (an idle GPU's) stay where
// their stored times put them, rather than where the path's tie-break happens to leave them.
constexpr double kOffStoredCost = 1e-3;

}  // namespace

bool at_period(const std::vector<int64_t>& ts, double period) {
  if (ts.size() < 2) return false;
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < ts.size(); ++i) gaps.push_back(ts[i] - ts[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  return std::fabs(static_cast<double>(gaps[gaps.size() / 2]) - period) < 0.1 * period;
}

AlignmentSamples without(const AlignmentSamples& s, const std::vector<char>& drop) {
  AlignmentSamples out;
  out.values.resize(s.values.size());
  for (size_t i = 0; i < s.ts_ns.size(); ++i) {
    if (drop[i]) continue;
    out.ts_ns.push_back(s.ts_ns[i]);
    for (size_t m = 0; m < s.values.size(); ++m) out.values[m].push_back(s.values[m][i]);
    if (!s.copy_after.empty()) out.copy_after.push_back(s.copy_after[i]);
  }
  return out;
}

std::vector<int> without(const std::vector<int>& shift, const std::vector<char>& drop) {
  std::vector<int> out;
  for (size_t i = 0; i < shift.size(); ++i)
    if (!drop[i]) out.push_back(shift[i]);
  return out;
}

Flicker flicker_path(const AlignmentSamples& s, const std::vector<char>& maybe_copy,
                     const std::array<std::vector<double>, 2>& misfit, int lo, double period) {
  const std::vector<int64_t>& ts = s.ts_ns;
  const size_t n = ts.size();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  struct Step {
    double cost = kInf;
    size_t before = 0;  // the sample placed before this one: i - 1, or i - 2 past a copy
    int state = 0;      // its state
  };
  std::vector<std::array<Step, 2>> best(n);
  const auto own = [&](size_t i, int state) {
    return misfit[static_cast<size_t>(state)][i] + (state == 1 && s.copy_after[i] ? kCopyOfFarPenalty : 0) +
           (lo + state != 0 ? kOffStoredCost : 0);
  };
  // Ends ts - offset - shift * period must grow by more than half a period.
  const auto in_order = [&](size_t a, int state_a, size_t b, int state_b) {
    return static_cast<double>(ts[b] - ts[a]) - (state_b - state_a) * period > period / 2;
  };
  for (int state = 0; state < 2; ++state) best[0][static_cast<size_t>(state)].cost = own(0, state);
  for (size_t i = 1; i < n; ++i)
    for (int state = 0; state < 2; ++state) {
      Step& here = best[i][static_cast<size_t>(state)];
      for (int before = 0; before < 2; ++before) {
        if (in_order(i - 1, before, i, state)) {
          const double c = best[i - 1][static_cast<size_t>(before)].cost + own(i, state);
          if (c < here.cost) here = {c, i - 1, before};
        }
        // Sample i - 1 a copy of i - 2, which is then near (as before a copy).
        if (i >= 2 && maybe_copy[i - 1] && in_order(i - 2, before, i, state)) {
          const double c = best[i - 2][static_cast<size_t>(before)].cost + (before == 1 ? kCopyOfFarPenalty : 0) +
                            kMaybeCopyCost + own(i, state);
          if (c < here.cost) here = {c, i - 2, before};
        }
      }
    }
  // The end: the last sample, or the one before it with the last its copy.
  size_t at = n - 1;
  int state = best[at][0].cost <= best[at][1].cost ? 0 : 1;
  double total = best[at][static_cast<size_t>(state)].cost;
  if (n >= 2 && maybe_copy[n - 1])
    for (int st = 0; st < 2; ++st) {
      const double c = best[n - 2][static_cast<size_t>(st)].cost + (st == 1 ? kCopyOfFarPenalty : 0) + kMaybeCopyCost;
      if (c < total) total = c, at = n - 2, state = st;
    }
  if (!std::isfinite(total)) return {};
  Flicker f;
  f.shift.assign(n, lo);
  f.copy.assign(n, 0);
  for (size_t i = at + 1; i < n; ++i) f.copy[i] = 1;
  for (;;) {
    f.shift[at] = lo + state;
    if (at == 0) break;
    const Step& step = best[at][static_cast<size_t>(state)];
    for (size_t i = step.before + 1; i < at; ++i) f.copy[i] = 1;
    at = step.before;
    state = step.state;
  }
  // A copy is in its original's window.
  for (size_t i = 1; i < n; ++i)
    if (f.copy[i]) f.shift[i] = f.shift[i - 1] + 1;
  return f;
}

}  // namespace pp
