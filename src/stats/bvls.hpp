// Bounded-variable least squares: min ||C u - d|| subject to lo <= u <= hi (entries may be
// infinite), by Stark and Parker's BVLS (an active-set method generalizing Lawson-Hanson NNLS to
// two-sided bounds), each subproblem solved by column-pivoting QR on the free columns
// (stats/dense_factorizations.hpp).
// For a small dense system: the estimator hands it the p x p triangle of its QR factorization.
#pragma once
#include <Eigen/Core>
#include <functional>
#include <vector>

namespace pp {

struct BvlsSolution {
  Eigen::VectorXd u;
  std::vector<int> state;  // -1 at lower, +1 at upper, 0 free
  bool converged = true;
  int iterations = 0;
};

// `poll`, where given, runs before each subproblem is factored: it may throw to stop the solve
// (an interrupt: a system of a thousand unknowns takes minutes).
BvlsSolution solve_bvls(const Eigen::MatrixXd& C, const Eigen::VectorXd& d, const Eigen::VectorXd& lo,
                        const Eigen::VectorXd& hi, const std::function<void()>& poll = {});

}  // namespace pp
