#include "stats/dense_factorizations.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>

namespace pp {

Eigen::MatrixXd qr_upper_factor(const Eigen::MatrixXd& rows) {
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(rows);
  return qr.matrixQR().topRows(rows.cols()).triangularView<Eigen::Upper>();
}

SymmetricEigen symmetric_eigen(const Eigen::MatrixXd& symmetric) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(symmetric);
  return {solver.eigenvalues(), solver.eigenvectors()};
}

Eigen::VectorXd singular_values(const Eigen::MatrixXd& m) {
  return Eigen::BDCSVD<Eigen::MatrixXd>(m).singularValues();
}

SingularValuesAndRightVectors singular_values_and_right_vectors(const Eigen::MatrixXd& m) {
  const Eigen::BDCSVD<Eigen::MatrixXd> svd(m, Eigen::ComputeThinV);
  return {svd.singularValues(), svd.matrixV()};
}

Eigen::VectorXd pivoted_qr_solution(const Eigen::MatrixXd& m, const Eigen::VectorXd& rhs,
                                    double relative_threshold) {
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr;
  qr.setThreshold(relative_threshold);
  qr.compute(m);
  return qr.solve(rhs);
}

}  // namespace pp
