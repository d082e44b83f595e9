#include "stats/bvls.hpp"

#include <algorithm>
#include <limits>

#include "stats/dense_factorizations.hpp"

namespace pp {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

BvlsSolution solve_bvls(const Eigen::MatrixXd& C, const Eigen::VectorXd& d, const Eigen::VectorXd& lo,
                        const Eigen::VectorXd& hi, const std::function<void()>& poll) {
  using Eigen::Index;
  const Index n = C.cols();
  BvlsSolution s;
  s.u = Eigen::VectorXd::Zero(n);
  s.state.assign(static_cast<size_t>(n), 0);
  for (Index j = 0; j < n; ++j) {  // start at a bound where there is one
    if (lo(j) > -kInfinity) {
      s.u(j) = lo(j);
      s.state[j] = -1;
    } else if (hi(j) < kInfinity) {
      s.u(j) = hi(j);
      s.state[j] = +1;
    }
  }
  if (n == 0) return s;
  const double column_norm = C.colwise().norm().maxCoeff();
  const double tolerance = 1e-11 * column_norm * d.norm();

  // z = u with the free entries replaced by the least-squares solution given the bound ones.
  auto free_solution = [&](Eigen::VectorXd& z) {
    z = s.u;
    std::vector<Index> free;
    Eigen::VectorXd rhs = d;
    for (Index j = 0; j < n; ++j) {
      if (s.state[j] == 0) {
        free.push_back(j);
      } else {
        rhs -= C.col(j) * s.u(j);
      }
    }
    if (free.empty()) return;
    if (poll) poll();
    Eigen::MatrixXd CF(C.rows(), static_cast<Index>(free.size()));
    for (size_t i = 0; i < free.size(); ++i) CF.col(static_cast<Index>(i)) = C.col(free[i]);
    // Columns have unit norm: a relative rank tolerance.
    const Eigen::VectorXd zf = pivoted_qr_solution(CF, rhs, 1e-10);
    for (size_t i = 0; i < free.size(); ++i) z(free[i]) = zf(static_cast<Index>(i));
  };
  // Moves u from a feasible point toward z (the free solution), binding each free variable
  // whose bound stops the step, until the free solution is feasible (Lawson-Hanson's inner loop).
  auto descend = [&](Eigen::VectorXd z) {
    for (Index pass = 0; pass <= n; ++pass) {
      if (pass > 0) free_solution(z);
      double alpha = 1;
      std::vector<std::pair<Index, double>> blocked;
      for (Index j = 0; j < n; ++j) {
        if (s.state[j] != 0) continue;
        double a = 2;
        if (z(j) < lo(j)) a = (s.u(j) - lo(j)) / (s.u(j) - z(j));
        if (z(j) > hi(j)) a = (hi(j) - s.u(j)) / (z(j) - s.u(j));
        if (a <= 1) {
          blocked.emplace_back(j, std::max(a, 0.0));
          alpha = std::min(alpha, std::max(a, 0.0));
        }
      }
      if (blocked.empty()) {
        for (Index j = 0; j < n; ++j)
          if (s.state[j] == 0) s.u(j) = z(j);
        return;
      }
      ++s.iterations;
      for (Index j = 0; j < n; ++j)
        if (s.state[j] == 0) s.u(j) += alpha * (z(j) - s.u(j));
      for (const auto& [j, a] : blocked) {
        if (a > alpha * (1 + 1e-12) + 1e-300) continue;
        const bool lower = z(j) < lo(j);
        s.u(j) = lower ? lo(j) : hi(j);
        s.state[j] = lower ? -1 : +1;
      }
    }
  };

  Eigen::VectorXd z(n);
  free_solution(z);
  descend(z);
  std::vector<char> rejected(static_cast<size_t>(n), 0);
  const int max_outer = static_cast<int>(3 * n + 30);
  for (int outer = 0;; ++outer) {
    if (outer >= max_outer) {
      s.converged = false;
      break;
    }
    // Kuhn-Tucker: a bound variable whose gradient points into the box should be free.
    const Eigen::VectorXd w = C.transpose() * (d - C * s.u);
    Index best = -1;
    double best_w = tolerance;
    for (Index j = 0; j < n; ++j) {
      if (rejected[j] || s.state[j] == 0 || lo(j) == hi(j)) continue;
      const double inward = s.state[j] < 0 ? w(j) : -w(j);
      if (inward > best_w) {
        best_w = inward;
        best = j;
      }
    }
    if (best < 0) break;
    const int was = s.state[best];
    s.state[best] = 0;
    free_solution(z);
    // Stark-Parker's safeguard: if rounding makes the freed variable move out of the box at
    // once, it stays bound and the next candidate is tried.
    if ((was < 0 && z(best) <= lo(best)) || (was > 0 && z(best) >= hi(best))) {
      s.state[best] = was;
      rejected[best] = 1;
      continue;
    }
    std::fill(rejected.begin(), rejected.end(), 0);
    ++s.iterations;
    descend(z);
  }
  return s;
}

}  // namespace pp
