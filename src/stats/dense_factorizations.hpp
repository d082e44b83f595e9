// The dense factorizations of the estimators (pp_deconvolve, BVLS), behind plain functions.
//
// Eigen's SVD, QR and symmetric eigensolver are templates, compiled wherever they are used, and
// they were a third of the engine's compile time (under the sanitizers, the longest compile of
// the build). Behind these functions they compile once, in dense_factorizations.cpp, beside the
// other files; the sanitized build checks that file with ASan but not UBSan (CMakeLists.txt):
// it holds Eigen's code and none of ours, while the code that builds the matrices and reads the
// results is checked by both.
#pragma once
#include <Eigen/Core>

namespace pp {

// R of the Householder QR factorization of `rows` (at least as many rows as columns): the
// upper triangle of its first rows.cols() rows, so that R^T R = rows^T rows.
Eigen::MatrixXd qr_upper_factor(const Eigen::MatrixXd& rows);

// Eigenvalues (ascending) and their unit eigenvectors (columns) of a symmetric matrix.
struct SymmetricEigen {
  Eigen::VectorXd values;
  Eigen::MatrixXd vectors;
};
SymmetricEigen symmetric_eigen(const Eigen::MatrixXd& symmetric);

// The singular values of m (descending), alone or with the right singular vectors V (thin:
// m.cols() x min(m.rows(), m.cols())), by divide and conquer (Eigen's BDCSVD).
Eigen::VectorXd singular_values(const Eigen::MatrixXd& m);
struct SingularValuesAndRightVectors {
  Eigen::VectorXd values;
  Eigen::MatrixXd right;
};
SingularValuesAndRightVectors singular_values_and_right_vectors(const Eigen::MatrixXd& m);

// The minimum-norm-residual solution of m x = rhs by column-pivoting Householder QR, treating
// pivots below `relative_threshold` times the largest as zero (a rank-deficient m gets a basic
// solution, its dependent columns' entries 0).
Eigen::VectorXd pivoted_qr_solution(const Eigen::MatrixXd& m, const Eigen::VectorXd& rhs,
                                    double relative_threshold);

}  // namespace pp
