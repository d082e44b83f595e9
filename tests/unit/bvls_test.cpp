// The bounded solver and Student's t of the estimator, on their own (no SQLite).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <Eigen/QR>

#include "stats/bvls.hpp"
#include "stats/student_t.hpp"

namespace {

// BVLS against brute force: for every assignment of each variable to lower / free / upper,
// the least-squares solution of the free ones; the best feasible one is the optimum.
TEST(DeconvolveBvls, MatchesBruteForceOnSmallBoxes) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + trial % 5, rows = n + 1 + trial % 4;
    Eigen::MatrixXd C(rows, n);
    Eigen::VectorXd d(rows), lo(n), hi(n);
    for (int i = 0; i < rows; ++i) {
      d(i) = 2 * normal(rng);
      for (int j = 0; j < n; ++j) C(i, j) = normal(rng);
    }
    for (int j = 0; j < n; ++j) {
      lo(j) = trial % 3 == 0 ? -INFINITY : -0.5 + 0.3 * normal(rng);
      hi(j) = trial % 7 == 0 ? INFINITY : lo(j) + 0.1 + std::fabs(normal(rng));
      if (!std::isfinite(hi(j)) && !std::isfinite(lo(j))) hi(j) = 1;
    }
    const pp::BvlsSolution s = pp::solve_bvls(C, d, lo, hi);
    ASSERT_TRUE(s.converged);
    for (int j = 0; j < n; ++j) {
      EXPECT_GE(s.u(j), lo(j));
      EXPECT_LE(s.u(j), hi(j));
    }
    double best = INFINITY;
    int assignments = 1;
    for (int j = 0; j < n; ++j) assignments *= 3;
    for (int a = 0; a < assignments; ++a) {
      Eigen::VectorXd u = Eigen::VectorXd::Zero(n);
      std::vector<int> free;
      bool possible = true;
      for (int j = 0, code = a; j < n; ++j, code /= 3) {
        if (code % 3 == 0) {
          u(j) = lo(j);
        } else if (code % 3 == 2) {
          u(j) = hi(j);
        } else {
          free.push_back(j);
        }
        possible = possible && std::isfinite(u(j));
      }
      if (!possible) continue;
      if (!free.empty()) {
        Eigen::MatrixXd F(rows, static_cast<int>(free.size()));
        Eigen::VectorXd rhs = d - C * u;
        for (size_t i = 0; i < free.size(); ++i) F.col(static_cast<int>(i)) = C.col(free[i]);
        const Eigen::VectorXd z = F.colPivHouseholderQr().solve(rhs);
        for (size_t i = 0; i < free.size(); ++i) u(free[i]) = z(static_cast<int>(i));
      }
      bool feasible = true;
      for (int j = 0; j < n; ++j) feasible = feasible && u(j) >= lo(j) - 1e-12 && u(j) <= hi(j) + 1e-12;
      if (feasible) best = std::min(best, (C * u - d).squaredNorm());
    }
    EXPECT_NEAR((C * s.u - d).squaredNorm(), best, 1e-9 * (1 + best)) << "trial " << trial;
  }
}

TEST(DeconvolveStudentT, KnownQuantiles) {
  EXPECT_NEAR(pp::student_t_quantile(0.95, 1), 6.313752, 1e-6);
  EXPECT_NEAR(pp::student_t_quantile(0.95, 2), 2.919986, 1e-6);
  EXPECT_NEAR(pp::student_t_quantile(0.95, 5), 2.015048, 1e-6);
  EXPECT_NEAR(pp::student_t_quantile(0.95, 10), 1.812461, 1e-6);
  EXPECT_NEAR(pp::student_t_quantile(0.95, 30), 1.697261, 1e-6);
  EXPECT_NEAR(pp::student_t_quantile(0.95, 200), 1.652508, 1e-6);
  EXPECT_NEAR(pp::student_t_quantile(0.95, 201), 1.652470, 1e-6);  // the Cornish-Fisher side
  EXPECT_NEAR(pp::student_t_quantile(0.95, 1000), 1.646379, 1e-6);
  EXPECT_NEAR(pp::student_t_quantile(0.95, 100000000), 1.644854, 1e-6);
  EXPECT_NEAR(pp::student_t_quantile(0.975, 3), 3.182446, 1e-6);
}

}  // namespace
