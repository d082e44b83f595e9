#include "stats/mean_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "core/errors.hpp"
#include "stats/double_double.hpp"

namespace pp {

static_assert(std::is_trivial_v<MeanState> && std::is_standard_layout_v<MeanState>,
              "zero-filled memory must be a valid, empty MeanState");

void throw_state_overflow(const char* what) {
  throw Error(std::string("the state would overflow: ") + what + "; split the data into smaller groups");
}

MeanState MeanState::of(double x, double w) {
  MeanState s{};
  s.count = 1;
  s.weight = w;
  s.mean = x;
  s.min = s.max = x;
  s.min_known = s.max_known = true;
  return s;
}

void MeanState::add(double x, double w) { merge(of(x, w)); }

void MeanState::remove(double x, double w) { unmerge(of(x, w)); }

void MeanState::clamp_mean() {
  if (min_known && mean + mean_low < min) {
    mean = min;
    mean_low = 0;
  }
  if (max_known && mean + mean_low > max) {
    mean = max;
    mean_low = 0;
  }
}

void MeanState::merge(const MeanState& other) {
  if (other.empty()) return;
  if (empty()) {
    *this = other;
    return;
  }
  // Chan et al.: W = Wa + Wb, mean = ma + d * Wb / W, M2 = M2a + M2b + d^2 * Wa * Wb / W with
  // d = mb - ma. d * Wb / W is taken in double-double arithmetic, so the mean is exact enough
  // that unmerge can take any part out again (see unmerge).
  int64_t total_count = 0;
  if (__builtin_add_overflow(count, other.count, &total_count))
    throw_state_overflow("more than 2^63 - 1 observations");
  // The weights are summed in double-double, so that a weight far larger than the rest (1e16
  // beside 1.5) can be taken out again leaving the rest's sum exact.
  const DoubleDouble total_weight = dd_sum({weight, weight_low}, {other.weight, other.weight_low});
  const double total = total_weight.hi;
  if (!dd_finite(total_weight)) throw_state_overflow("the sum of weights passes the largest double (1.8e308)");
  const DoubleDouble exact_d = dd_difference({other.mean, other.mean_low}, {mean, mean_low});
  if (!dd_finite(exact_d))
    throw_state_overflow("the difference between the two means passes the largest double (1.8e308)");
  const double d = exact_d.hi + exact_d.lo;
  const DoubleDouble other_share = dd_divide(DoubleDouble{other.weight, other.weight_low}, total_weight);
  const DoubleDouble merged_mean = dd_sum({mean, mean_low}, dd_multiply(exact_d, other_share));
  double merged_m2 = m2 + other.m2 + d * d * weight * (other.weight / total);
  // d^2 alone may pass the doubles' range where the term, with small weights, does not.
  if (!std::isfinite(merged_m2)) merged_m2 = m2 + other.m2 + d * (d * (weight * (other.weight / total)));
  if (!dd_finite(merged_mean)) throw_state_overflow("the mean passes the largest double (1.8e308)");
  if (!std::isfinite(merged_m2))
    throw_state_overflow("the sum of squared deviations from the mean passes the largest double (1.8e308)");
  mean = merged_mean.hi;
  mean_low = merged_mean.lo;
  m2 = merged_m2;
  weight_error += other.weight_error + kDoubleDoubleRounding * total;
  weight = total_weight.hi;
  weight_low = total_weight.lo;
  count = total_count;
  min = std::min(min, other.min);
  max = std::max(max, other.max);
  min_known = min_known && other.min_known;
  max_known = max_known && other.max_known;
  // (Adding only sums terms of one sign: the rounding is a share of M2, never a loss of it.)
  m2_error += other.m2_error;
  m2_lost = m2_lost || other.m2_lost;
  clamp_mean();
}

void MeanState::unmerge(const MeanState& part) {
  if (part.empty()) return;
  if (part.count > count) throw std::logic_error("removing more observations than were added");
  const int64_t rest_count = count - part.count;
  if (rest_count == 0) {
    *this = MeanState{};
    return;
  }
  const DoubleDouble rest = dd_difference({weight, weight_low}, {part.weight, part.weight_low});
  const double rest_weight = rest.hi + rest.lo;
  // (The bound also covers what earlier sums lost: a weight of 1e-40 added to 1e40 + 1 is
  // gone from the sum, and taking 1e40 and then 1 out would leave a weight of rounding alone.)
  const double rest_weight_error =
      weight_error + part.weight_error + kDoubleDoubleRounding * (std::fabs(weight) + std::fabs(part.weight));
  if (!(rest_weight > 0) || !std::isfinite(rest_weight) || !std::isfinite(part.weight / rest_weight) ||
      !(rest_weight_error <= kWeightLostShare * rest_weight))
    throw Error(
        "the weights in the window frame span too far for a row to be taken out of their sum (more than about 1e25 "
        "between the largest and the weight left): the weight left would be mostly rounding, and the mean of the "
        "rest wrong; use a frame that removes no row (ROWS UNBOUNDED PRECEDING) or weights of closer magnitudes");
  // The inverse of merge, solved for the remaining part A of the whole T = A + B:
  //   mean_A = mean_T - d * W_B / W_A, in double-double, so that taking 1e20 out of
  //   (1e20, 1, 1) leaves a mean of 1 (in plain doubles it left 0.5);
  //   M2_A = M2_T - M2_B - d^2 * W_T * W_B / W_A, where d = mean_B - mean_T. This difference
  //   can cancel: after removing values far from the rest, the stddev keeps about
  //   16 - 2 * log10(spread removed / spread left) digits (docs/reference/mean.md).
  const DoubleDouble exact_d = dd_difference({part.mean, part.mean_low}, {mean, mean_low});
  const double d = exact_d.hi + exact_d.lo;
  const double ratio = part.weight / rest_weight;
  const DoubleDouble part_to_rest = dd_divide(DoubleDouble{part.weight, part.weight_low}, rest);
  const DoubleDouble rest_mean = dd_sum({mean, mean_low}, dd_multiply({-exact_d.hi, -exact_d.lo}, part_to_rest));
  double rest_m2 = m2 - part.m2 - d * d * weight * ratio;
  if (!std::isfinite(rest_m2)) rest_m2 = m2 - part.m2 - d * (d * (weight * ratio));  // as in merge
  if (!dd_finite(rest_mean)) throw_state_overflow("the mean of the rest passes the largest double (1.8e308)");
  mean = rest_mean.hi;
  mean_low = rest_mean.lo;
  m2 = rest_count == 1 || !std::isfinite(rest_m2) ? 0.0 : std::max(rest_m2, 0.0);
  if (rest_count == 1) {  // one observation's M2 is 0 exactly, whatever the subtraction gave
    m2_error = 0;
    m2_lost = false;
  } else {
    // The subtraction's error: a few roundings of its largest terms (d, d^2, the weights'
    // ratio, the two differences), besides the errors both sides carried.
    const double removed = std::fabs(d * (d * (weight * ratio)));
    m2_error += part.m2_error + 8 * std::numeric_limits<double>::epsilon() * (m2 + part.m2 + removed);
    m2_lost = m2_lost || part.m2_lost || !std::isfinite(rest_m2) || !(m2_error <= kM2LostShare * m2);
  }
  weight = rest.hi;
  weight_low = rest.lo;
  weight_error = rest_weight_error;
  count = rest_count;
  // An extremum survives only if the removed values were all strictly inside it.
  min_known = min_known && part.min_known && part.min > min;
  max_known = max_known && part.max_known && part.max < max;
  clamp_mean();
}

std::optional<double> MeanState::value() const {
  if (empty()) return std::nullopt;
  return mean + mean_low;
}

std::optional<double> MeanState::stddev() const {
  if (empty() || !(weight > 1.0) || m2_lost) return std::nullopt;
  return std::sqrt(m2 / (weight - 1.0));
}

std::optional<double> MeanState::minimum() const {
  if (empty() || !min_known) return std::nullopt;
  return min;
}

std::optional<double> MeanState::maximum() const {
  if (empty() || !max_known) return std::nullopt;
  return max;
}

namespace {

constexpr unsigned char kMagic0 = 'p';
constexpr unsigned char kMagic1 = 'm';
constexpr unsigned char kMinKnown = 1;
constexpr unsigned char kMaxKnown = 2;
constexpr unsigned char kM2Lost = 4;

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_double(std::string& out, double d) {
  uint64_t bits = 0;
  std::memcpy(&bits, &d, sizeof bits);
  put_u64(out, bits);
}

uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

double get_double(const unsigned char* p) {
  const uint64_t bits = get_u64(p);
  double d = 0;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

}  // namespace

std::string encode_mean_state(const MeanState& s) {
  std::string out;
  out.reserve(kMeanStateBytes);
  const bool empty = s.empty();
  const bool min_known = !empty && s.min_known;
  const bool max_known = !empty && s.max_known;
  const bool m2_lost = !empty && s.m2_lost;
  out.push_back(static_cast<char>(kMagic0));
  out.push_back(static_cast<char>(kMagic1));
  // (A state whose M2 is known stays version 1, which every reader of the format reads.)
  out.push_back(static_cast<char>(m2_lost ? kMeanStateM2LostVersion : kMeanStateVersion));
  out.push_back(
      static_cast<char>((min_known ? kMinKnown : 0) | (max_known ? kMaxKnown : 0) | (m2_lost ? kM2Lost : 0)));
  put_u64(out, static_cast<uint64_t>(empty ? 0 : s.count));
  put_double(out, empty ? 0.0 : s.weight);
  put_double(out, empty ? 0.0 : s.mean);
  put_double(out, empty ? 0.0 : s.mean_low);
  put_double(out, empty || m2_lost ? 0.0 : s.m2);
  put_double(out, min_known ? s.min : 0.0);
  put_double(out, max_known ? s.max : 0.0);
  return out;
}

std::optional<MeanState> decode_mean_state(const void* bytes, size_t size) {
  if (!bytes || size != kMeanStateBytes) return std::nullopt;
  const auto* p = static_cast<const unsigned char*>(bytes);
  if (p[0] != kMagic0 || p[1] != kMagic1) return std::nullopt;
  const unsigned char flags = p[3];
  // Version 2 is version 1 with M2 lost: its flag set, its M2 0.
  if (p[2] == kMeanStateVersion) {
    if (flags & ~(kMinKnown | kMaxKnown)) return std::nullopt;
  } else if (p[2] == kMeanStateM2LostVersion) {
    if ((flags & ~(kMinKnown | kMaxKnown | kM2Lost)) || !(flags & kM2Lost)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  MeanState s{};
  s.count = static_cast<int64_t>(get_u64(p + 4));
  s.weight = get_double(p + 12);
  s.mean = get_double(p + 20);
  s.mean_low = get_double(p + 28);
  s.m2 = get_double(p + 36);
  s.min = get_double(p + 44);
  s.max = get_double(p + 52);
  s.min_known = flags & kMinKnown;
  s.max_known = flags & kMaxKnown;
  s.m2_lost = flags & kM2Lost;
  for (double d : {s.weight, s.mean, s.mean_low, s.m2, s.min, s.max})
    if (!std::isfinite(d)) return std::nullopt;
  if (s.count < 0) return std::nullopt;
  if (s.count == 0) {  // the empty state has one form: every field zero
    if (flags || s.weight != 0 || s.mean != 0 || s.mean_low != 0 || s.m2 != 0 || s.min != 0 || s.max != 0)
      return std::nullopt;
    return s;
  }
  if (!(s.weight > 0) || s.m2 < 0) return std::nullopt;
  if (s.m2_lost && (s.m2 != 0 || s.count < 2)) return std::nullopt;
  if (std::fabs(s.mean_low) > std::fabs(s.mean) * 0x1p-52) return std::nullopt;
  if (!s.min_known && s.min != 0) return std::nullopt;
  if (!s.max_known && s.max != 0) return std::nullopt;
  if (s.min_known && s.max_known && s.min > s.max) return std::nullopt;
  return s;
}

}  // namespace pp
