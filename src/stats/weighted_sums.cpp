#include "stats/weighted_sums.hpp"

#include <algorithm>
#include <cmath>

namespace pp {

MeanState WeightedSums::state(double units_per_weight) const {
  MeanState s{};
  if (count_ == 0) return s;
  // The units as a double-double: past 2^53 (104 days of ns) one double would round them.
  const double units = static_cast<double>(units_);
  const double units_low = static_cast<double>(
      static_cast<int64_t>(static_cast<uint64_t>(units_) - static_cast<uint64_t>(units)));
  // mean = shift + sum / units; M2 = (sum_sq - sum^2 / units) / units_per_weight. The quotient
  // to double-double: its first part's remainder is exact.
  const double first = sum_.hi / units;
  const DoubleDouble taken = two_prod(first, units);
  const DoubleDouble remainder = dd_difference(sum_, {taken.hi, taken.lo + first * units_low});
  const DoubleDouble offset = two_sum(first, remainder.hi / units);
  const DoubleDouble mean = dd_sum({shift_, 0.0}, offset);
  const DoubleDouble spread = dd_difference(sum_sq_, dd_multiply(sum_, offset));
  if (!dd_finite(mean) || !dd_finite(spread) || !std::isfinite(units / units_per_weight))
    throw_state_overflow("a sum passes the largest double (1.8e308)");
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
