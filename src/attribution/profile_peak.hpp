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
// Where the likelihood has one peak over the grid (best_of_grid: at most kGridLeads), that gives
// what reading every point gives (unit/profile_peak_test.cpp): refine from some 25 of 61 points.
// What the points read first cannot see is missed: a peak narrower than a stride that none of
// them reaches, below another they do reach, or a stretch with a fit between points without one
// (where every point read first has none, every point is read).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace pp {

constexpr double kChi2Half90 = 2.706;  // 2 x log-likelihood drop of a 90% profile interval (1 dof)
constexpr size_t kRefineStride = 5;

struct Peak {
  double at = 0, value = -std::numeric_limits<double>::infinity(), half90 = 0;
};

// A grid's points and the likelihood of those read so far (each read is a fit).
template <class F>
class GridReads {
 public:
  GridReads(F& loglik, std::vector<double> at)
      : loglik_(loglik), at_(std::move(at)), value_(at_.size(), -std::numeric_limits<double>::infinity()),
        known_(at_.size(), 0) {}
  size_t size() const { return at_.size(); }
  double at(size_t k) const { return at_[k]; }
  bool known(size_t k) const { return known_[k] != 0; }
  double value(size_t k) const { return value_[k]; }
  double read(size_t k) {
    if (!known_[k]) {
      value_[k] = loglik_(at_[k]);
      known_[k] = 1;
    }
    return value_[k];
  }
  void read_all() {
    for (size_t k = 0; k < size(); ++k) read(k);
  }
  // The best point read (the first of equals, as a loop over every point keeps it), and its index.
  Peak best(size_t& index) const {
    Peak p;
    for (size_t k = 0; k < size(); ++k)
      if (known_[k] && value_[k] > p.value) p = {at_[k], value_[k], 0}, index = k;
    return p;
  }

 private:
  F& loglik_;
  std::vector<double> at_, value_;
  std::vector<char> known_;
};

// The first best point of the grid lo, lo + step, ... below end (summed, as a loop would), as
// reading every point finds it: every kRefineStride-th point is read, then every point within a
// stride of the best kGridLeads of those that top their neighbours (round the end too where the
// grid wraps: a phase). A driver's period of a sixth of a second to a second is a grid of 167
// to 1000 points.
constexpr size_t kGridLeads = 3;

template <class F>
Peak best_of_grid(F&& loglik, double lo, double end, double step, bool wraps) {
  std::vector<double> at;
  for (double d = lo; d < end; d += step) at.push_back(d);
  GridReads<F> grid(loglik, std::move(at));
  const size_t n = grid.size();
  size_t index = 0;
  if (n <= kRefineStride) {  // a stride or less: every point
    grid.read_all();
    return grid.best(index);
  }
  std::vector<size_t> read_first;
  for (size_t k = 0; k < n; k += kRefineStride) {
    grid.read(k);
    read_first.push_back(k);
  }
  // The leads: points read first that no neighbour read first tops (one per rise of the
  // likelihood, so that a broad rival's many points do not crowd out a narrow peak).
  std::vector<size_t> leads;
  const size_t m = read_first.size();
  for (size_t i = 0; i < m; ++i) {
    const double v = grid.value(read_first[i]);
    if (!std::isfinite(v)) continue;
    const bool has_before = i > 0 || (wraps && m > 1), has_after = i + 1 < m || (wraps && m > 1);
    if (has_before && grid.value(read_first[i > 0 ? i - 1 : m - 1]) > v) continue;
    if (has_after && grid.value(read_first[i + 1 < m ? i + 1 : 0]) > v) continue;
    leads.push_back(read_first[i]);
  }
  if (leads.empty()) {  // nothing to look around: every point
    grid.read_all();
    return grid.best(index);
  }
  std::stable_sort(leads.begin(), leads.end(), [&](size_t a, size_t b) { return grid.value(a) > grid.value(b); });
  leads.resize(std::min(leads.size(), kGridLeads));
  for (size_t lead : leads)
    for (size_t off = 1; off < kRefineStride; ++off) {
      if (lead + off < n)
        grid.read(lead + off);
      else if (wraps)
        grid.read((lead + off) % n);
      if (lead >= off)
        grid.read(lead - off);
      else if (wraps)
        grid.read(lead + n - off);
    }
  return grid.best(index);
}

// The grid: center - reach, then step by step (summed, as a loop would) up to center + reach.
template <class F>
Peak refine(F&& loglik, double center, double reach, double step) {
  std::vector<double> at;
  for (double d = center - reach; d <= center + reach + step / 2; d += step) at.push_back(d);
  GridReads<F> grid(loglik, std::move(at));
  const size_t n = grid.size();
  if (n == 0) return {};
  for (size_t k = 0; k < n; k += kRefineStride) grid.read(k);
  grid.read(n - 1);
  size_t peak = 0;
  Peak p = grid.best(peak);
  if (!std::isfinite(p.value)) {  // nothing to turn around: every point
    grid.read_all();
    p = grid.best(peak);
    if (!std::isfinite(p.value)) return p;
  }
  const auto within = [&](double v) { return 2 * (p.value - v) <= kChi2Half90; };
  for (;;) {
    const size_t from = peak >= kRefineStride - 1 ? peak - (kRefineStride - 1) : 0;
    for (size_t k = from; k < std::min(n, peak + kRefineStride); ++k) grid.read(k);
    p = grid.best(peak);
    size_t lo = peak, hi = peak;
    for (size_t k = 0; k < n; ++k)
      if (grid.known(k) && within(grid.value(k))) lo = std::min(lo, k), hi = std::max(hi, k);
    while (lo > 0 && !grid.known(lo - 1) && within(grid.read(lo - 1))) --lo;
    while (hi + 1 < n && !grid.known(hi + 1) && within(grid.read(hi + 1))) ++hi;
    size_t better = peak;
    if (grid.best(better).value > p.value) {  // a better point beyond an edge: around it again
      peak = better;
      continue;
    }
    p.half90 = std::max({p.at - grid.at(lo), grid.at(hi) - p.at, step});
    if (lo == 0 || hi == n - 1) p.half90 = std::max(p.half90, reach);
    return p;
  }
}

}  // namespace pp
