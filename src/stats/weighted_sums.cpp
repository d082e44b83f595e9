#include "stats/weighted_sums.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.hpp"

namespace pp {
namespace {

[[noreturn]] void sums_overflow(const char* what) {
  throw Error(std::string("the state would overflow: ") + what + "; split the data into smaller groups");
}

}  // namespace

void WeightedSums::add(double x, int64_t units, int64_t count) {
  int64_t total_count = 0, total_units = 0;  // checked before anything changes
  if (__builtin_add_overflow(count_, count, &total_count)) sums_overflow("more than 2^63 - 1 observations");
  if (__builtin_add_overflow(units_, units, &total_units)) sums_overflow("a weight sum past 2^63 - 1 units");
  if (count_ == 0) {
    shift_ = min_ = max_ = x;
  } else {
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
  }
  count_ = total_count;
  units_ = total_units;
  const double d = x - shift_;
  const DoubleDouble weighted = two_prod(static_cast<double>(units), d);
  sum_ = dd_sum(sum_, weighted);
  sum_sq_ = dd_sum(sum_sq_, dd_multiply(weighted, {d, 0.0}));
}

MeanState WeightedSums::state(double units_per_weight) const {
  MeanState s{};
  if (count_ == 0) return s;
  const double units = static_cast<double>(units_);
  // mean = shift + sum / units; M2 = (sum_sq - sum^2 / units) / units_per_weight.
  const DoubleDouble quotient = dd_divide(sum_.hi, units);
  const DoubleDouble offset = dd_sum(quotient, {sum_.lo / units, 0.0});
  const DoubleDouble mean = dd_sum({shift_, 0.0}, offset);
  const DoubleDouble spread = dd_difference(sum_sq_, dd_multiply(sum_, offset));
  if (!dd_finite(mean) || !dd_finite(spread) || !std::isfinite(units / units_per_weight))
    sums_overflow("a sum passes the largest double (1.8e308)");
  s.count = count_;
  s.weight = units / units_per_weight;
  s.mean = mean.hi;
  s.mean_low = mean.lo;
  s.m2 = std::max(0.0, (spread.hi + spread.lo) / units_per_weight);
  s.min = min_;
  s.max = max_;
  s.min_known = s.max_known = true;
  s.clamp_mean();
  return s;
}

}  // namespace pp
