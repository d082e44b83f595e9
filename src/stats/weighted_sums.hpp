// Weighted sums: the pp_mean state of many (value, weight) observations, added one at a time at
// a fraction of the cost of merging a MeanState per observation. The fold's sweep adds each
// window's value to every layer whose calls it overlaps, millions of additions an hour per GPU.
//
//   WeightedSums sums;
//   sums.add(0.62, 40'000'000, 3);  // a window's value, overlapped 40 ms by 3 calls of a layer
//   sums.add(0.58, 100'000'000, 1);
//   MeanState state = sums.state(1e9);  // weights in seconds: 0.14, mean 0.5914..., M2, min, max
//
// Weights are whole units (the fold's nanoseconds), summed exactly. Values are taken relative to
// the first one added, each difference exactly, and the weighted sums of the differences and of
// their squares are kept in double-double (stats/double_double.hpp): the mean is as exact as
// MeanState's merge gives it, whatever the first value, M2 at least as exact, and equal values
// give M2 = 0 exactly. The squares are summed in units, so values whose spread passes about
// 1e150 are an overflow error (MeanState's merge reaches 1e154).
#pragma once
#include <algorithm>
#include <cstdint>

#include "stats/double_double.hpp"
#include "stats/mean_state.hpp"

namespace pp {

class WeightedSums {
 public:
  bool empty() const { return count_ == 0; }

  // Adds `count` observations of the finite value x, of `units` weight units in all (units > 0).
  // Throws pp::Error, leaving the sums as they were, when the count or the weight would pass
  // 2^63 - 1. (Inline: the fold's sweep calls it for every window and layer.)
  void add(double x, int64_t units, int64_t count) {
    int64_t total_count = 0, total_units = 0;  // checked before anything changes
    if (__builtin_add_overflow(count_, count, &total_count))
      throw_state_overflow("more than 2^63 - 1 observations");
    if (__builtin_add_overflow(units_, units, &total_units))
      throw_state_overflow("a weight sum past 2^63 - 1 units");
    if (count_ == 0) {
      shift_ = min_ = max_ = x;
    } else {
      min_ = std::min(min_, x);
      max_ = std::max(max_, x);
    }
    count_ = total_count;
    units_ = total_units;
    const DoubleDouble d = two_sum(x, -shift_);  // exact: a first value far off costs nothing
    const double u = static_cast<double>(units);
    DoubleDouble weighted = two_prod(u, d.hi);
    if (d.lo != 0) weighted = two_sum(weighted.hi, weighted.lo + u * d.lo);  // (0 within 2x of it)
    sum_ = dd_sum(sum_, weighted);
    sum_sq_ = dd_sum(sum_sq_, dd_multiply(weighted, d));
  }

  // The state of what was added, each weight being units / units_per_weight. Throws pp::Error
  // when a sum is not finite (values spread past about 1e150).
  MeanState state(double units_per_weight) const;

 private:
  int64_t count_ = 0;
  int64_t units_ = 0;
  double shift_ = 0;      // the first value added
  DoubleDouble sum_{};    // sum of units * (x - shift)
  DoubleDouble sum_sq_{}; // sum of units * (x - shift)^2
  double min_ = 0;
  double max_ = 0;
};

}  // namespace pp
