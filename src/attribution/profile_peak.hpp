// The peak of a profile log-likelihood on a grid, and its 90% interval: how the alignment
// (alignment.cpp) places an offset or a phase.
//
//   const Peak coarse = best_of_grid([&](double phase) { return fit_at(phase).log_likelihood; },
//                                    0, period, 1e6, true);  // every ms of a period
//   const Peak p = refine([&](double d) { return fit_at(d).log_likelihood; }, coarse_best, 750e3, 25e3);
//   p.at;      // the grid point of highest likelihood (the first, on a tie)
//   p.half90;  // how far the points within the 90% drop reach from it (at least a step; the
//              // whole reach where they touch the grid's ends)
//
// Each point is a fit, the alignment's cost: both read every kRefineStride-th point first, then
// point by point around the best of those (refine: and outwards from the interval's edges).
// Wherever the likelihood turns or crosses the 90% drop at most once within a stride, that gives
// what reading every point gives (unit/profile_peak_test.cpp): refine from some 25 of 61 points.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace pp {

constexpr double kChi2Half90 = 2.706;  // 2 x log-likelihood drop of a 90% profile interval (1 dof)
constexpr size_t kRefineStride = 5;

struct Peak {
  double at = 0, value = -std::numeric_limits<double>::infinity(), half90 = 0;
};

// The first best point of the grid lo, lo + step, ... below end (summed, as a loop would), as
// reading every point finds it: every kRefineStride-th point is read, then every point within a
// stride of the best kGridLeads of those that top their neighbours (round the end too where the
// grid wraps: a phase). A
// driver's period of a sixth of a second to a second is a grid of 167 to 1000 points.
constexpr size_t kGridLeads = 3;

template <class F>
Peak best_of_grid(F&& loglik, double lo, double end, double step, bool wraps) {
  std::vector<double> at;
  for (double d = lo; d < end; d += step) at.push_back(d);
  const size_t n = at.size();
  std::vector<double> value(n, -std::numeric_limits<double>::infinity());
  std::vector<char> known(n, 0);
  const auto read = [&](size_t k) {
    if (!known[k]) {
      value[k] = loglik(at[k]);
      known[k] = 1;
    }
  };
  const auto best = [&] {
    Peak p;
    for (size_t k = 0; k < n; ++k)
      if (known[k] && value[k] > p.value) p = {at[k], value[k], 0};
    return p;
  };
  std::vector<size_t> read_first;
  for (size_t k = 0; k < n; k += kRefineStride) {
    read(k);
    read_first.push_back(k);
  }
  // The leads: points read first that no neighbour read first tops (one per rise of the
  // likelihood, so that a broad rival's many points do not crowd out a narrow peak).
  std::vector<size_t> leads;
  const size_t m = read_first.size();
  for (size_t i = 0; i < m; ++i) {
    const double v = value[read_first[i]];
    if (!std::isfinite(v)) continue;
    const bool has_before = i > 0 || (wraps && m > 1), has_after = i + 1 < m || (wraps && m > 1);
    if (has_before && value[read_first[i > 0 ? i - 1 : m - 1]] > v) continue;
    if (has_after && value[read_first[i + 1 < m ? i + 1 : 0]] > v) continue;
    leads.push_back(read_first[i]);
  }
  if (leads.empty()) {  // nothing to look around: every point
    for (size_t k = 0; k < n; ++k) read(k);
    return best();
  }
  std::stable_sort(leads.begin(), leads.end(), [&](size_t a, size_t b) { return value[a] > value[b]; });
  leads.resize(std::min(leads.size(), kGridLeads));
  for (size_t lead : leads)
    for (size_t off = 1; off < kRefineStride; ++off) {
      if (lead + off < n) read(lead + off);
      else if (wraps) read((lead + off) % n);
      if (lead >= off) read(lead - off);
      else if (wraps) read(lead + n - off);
    }
  return best();
}

// The grid: center - reach, then step by step (summed, as a loop would) up to center + reach.
template <class F>
Peak refine(F&& loglik, double center, double reach, double step) {
  std::vector<double> at;
  for (double d = center - reach; d <= center + reach + step / 2; d += step) at.push_back(d);
  const size_t n = at.size();
  if (n == 0) return {};
  std::vector<double> value(n, -std::numeric_limits<double>::infinity());
  std::vector<char> known(n, 0);
  const auto read = [&](size_t k) {
    if (!known[k]) {
      value[k] = loglik(at[k]);
      known[k] = 1;
    }
    return value[k];
  };
  size_t peak_k = 0;
  const auto best = [&] {
    Peak p;
    for (size_t k = 0; k < n; ++k)
      if (known[k] && value[k] > p.value) p = {at[k], value[k], 0}, peak_k = k;
    return p;
  };
  for (size_t k = 0; k < n; k += kRefineStride) read(k);
  read(n - 1);
  Peak p = best();
  if (!std::isfinite(p.value)) {  // nothing to turn around: every point
    for (size_t k = 0; k < n; ++k) read(k);
    p = best();
    if (!std::isfinite(p.value)) return p;
  }
  const auto within = [&](double v) { return 2 * (p.value - v) <= kChi2Half90; };
  for (;;) {
    const size_t from = peak_k >= kRefineStride - 1 ? peak_k - (kRefineStride - 1) : 0;
    for (size_t k = from; k < std::min(n, peak_k + kRefineStride); ++k) read(k);
    p = best();
    size_t lo = peak_k, hi = peak_k;
    for (size_t k = 0; k < n; ++k)
      if (known[k] && within(value[k])) lo = std::min(lo, k), hi = std::max(hi, k);
    while (lo > 0 && !known[lo - 1] && within(read(lo - 1))) --lo;
    while (hi + 1 < n && !known[hi + 1] && within(read(hi + 1))) ++hi;
    if (best().value > p.value) continue;  // a better point beyond an edge: around it again
    p.half90 = std::max({p.at - at[lo], at[hi] - p.at, step});
    if (lo == 0 || hi == n - 1) p.half90 = std::max(p.half90, reach);
    return p;
  }
}

}  // namespace pp
