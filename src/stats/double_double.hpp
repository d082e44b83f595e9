// Double-double arithmetic: a value carried as the unevaluated sum hi + lo of two doubles, about
// 106 bits, from error-free transformations (Knuth's TwoSum, Dekker's product through a fused
// multiply-add). What MeanState's merge and WeightedSums need to keep a mean and a sum of squares
// exact well past one double's 53 bits.
#pragma once
#include <cmath>

namespace pp {

struct DoubleDouble {
  double hi;
  double lo;
};

// s + e == a + b exactly.
inline DoubleDouble two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  const double e = (a - (s - bb)) + (b - bb);
  return {s, e};
}

// p + e == a * b exactly. Built for any x86-64 (no FMA instruction), std::fma is a call into libm,
// so the error comes from Dekker's product of Veltkamp's halves, as exact and inline; operands
// whose split would overflow (past 2^995) take the fused multiply-add.
inline DoubleDouble two_prod(double a, double b) {
  const double p = a * b;
#ifndef __FMA__
  constexpr double kSplitter = 134217729.0;  // 2^27 + 1
  constexpr double kSplitLimit = 0x1p995;
  if (std::fabs(a) < kSplitLimit && std::fabs(b) < kSplitLimit) {
    const double ca = kSplitter * a, a_hi = ca - (ca - a), a_lo = a - a_hi;
    const double cb = kSplitter * b, b_hi = cb - (cb - b), b_lo = b - b_hi;
    return {p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo};
  }
#endif
  return {p, std::fma(a, b, -p)};
}

inline DoubleDouble dd_sum(DoubleDouble a, DoubleDouble b) {
  const DoubleDouble s = two_sum(a.hi, b.hi);
  return two_sum(s.hi, s.lo + (a.lo + b.lo));
}

inline DoubleDouble dd_multiply(DoubleDouble a, DoubleDouble b) {
  const DoubleDouble p = two_prod(a.hi, b.hi);
  return two_sum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}

// a / b to about 106 bits: the remainder of the first quotient is exact (fma).
inline DoubleDouble dd_divide(double a, double b) {
  const double q = a / b;
  const double r = std::fma(-q, b, a);
  return two_sum(q, r / b);
}

// a / b for double-double operands, to about 106 bits: three quotient digits, each from the
// remainder left by those before (a weight sum's low part matters to a mean: 1e16 * 5.6e-17).
inline DoubleDouble dd_divide(DoubleDouble a, DoubleDouble b);

inline bool dd_finite(DoubleDouble x) { return std::isfinite(x.hi) && std::isfinite(x.lo); }

// (a.hi + a.lo) - (b.hi + b.lo).
inline DoubleDouble dd_difference(DoubleDouble a, DoubleDouble b) {
  const DoubleDouble d = two_sum(a.hi, -b.hi);
  return two_sum(d.hi, d.lo + (a.lo - b.lo));
}

inline DoubleDouble dd_divide(DoubleDouble a, DoubleDouble b) {
  const double q1 = a.hi / b.hi;
  DoubleDouble r = dd_difference(a, dd_multiply({q1, 0.0}, b));
  const double q2 = r.hi / b.hi;
  r = dd_difference(r, dd_multiply({q2, 0.0}, b));
  const double q3 = r.hi / b.hi;
  return dd_sum(two_sum(q1, q2), {q3, 0.0});
}

}  // namespace pp
