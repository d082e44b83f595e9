#include "stats/student_t.hpp"

#include <cmath>
#include <stdexcept>

namespace pp {

namespace {

double normal_quantile(double p) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// P(|T| <= t) for integer dof (Abramowitz & Stegun 26.7.3 and 26.7.4, exact).
double t_central_probability(double t, int64_t dof) {
  const double theta = std::atan(t / std::sqrt(static_cast<double>(dof)));
  const double c2 = std::cos(theta) * std::cos(theta);
  if (dof % 2 == 1) {
    double sum = 0, term = std::cos(theta);
    for (int64_t k = 1; 2 * k + 1 <= dof; ++k) {
      sum += term;
      term *= c2 * (2.0 * k) / (2.0 * k + 1);
    }
    return 2 / M_PI * (theta + std::sin(theta) * sum);
  }
  double sum = 0, term = 1;
  for (int64_t k = 1; 2 * k <= dof; ++k) {
    sum += term;
    term *= c2 * (2.0 * k - 1) / (2.0 * k);
  }
  return std::sin(theta) * sum;
}

}  // namespace

double student_t_quantile(double p, int64_t dof) {
  if (!(p > 0.5 && p < 1) || dof < 1) throw std::invalid_argument("student_t_quantile: p in (0.5, 1), dof >= 1");
  if (dof > 200) {  // Cornish-Fisher expansion (A&S 26.7.5); error below 1e-9 here
    const double z = normal_quantile(p), z2 = z * z, v = static_cast<double>(dof);
    const double g1 = (z2 + 1) * z / 4;
    const double g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
    const double g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
    const double g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
    return z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v);
  }
  const double central = 2 * p - 1;
  double lo = 0, hi = 1;
  while (t_central_probability(hi, dof) < central) hi *= 2;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (t_central_probability(mid, dof) < central ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace pp
