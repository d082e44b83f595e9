#include "attribution/window_fit.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <optional>

namespace pp {
namespace {

constexpr double kWindowFitNaN = std::numeric_limits<double>::quiet_NaN();

// A's rows by their nonzero entries, each row's in column order.
struct SparseRows {
  std::vector<size_t> start;  // row r: entries start[r] .. start[r + 1]
  std::vector<Eigen::Index> column;
  std::vector<double> value;

  explicit SparseRows(const Eigen::MatrixXd& A) {
    start.reserve(static_cast<size_t>(A.rows()) + 1);
    start.push_back(0);
    for (Eigen::Index r = 0; r < A.rows(); ++r) {
      for (Eigen::Index c = 0; c < A.cols(); ++c)
        if (A(r, c) != 0) {
          column.push_back(c);
          value.push_back(A(r, c));
        }
      start.push_back(column.size());
    }
  }
  double dot(Eigen::Index r, const Eigen::VectorXd& x) const {
    double sum = 0;
    for (size_t k = start[static_cast<size_t>(r)]; k < start[static_cast<size_t>(r) + 1]; ++k)
      sum += value[k] * x(column[k]);
    return sum;
  }
};

}  // namespace

WindowFit fit_windows(const Eigen::MatrixXd& A, const std::vector<std::vector<double>>& values, Eigen::Index layer_columns) {
  WindowFit f;
  const Eigen::Index p = A.cols();
  f.any_layer = layer_columns > 0 && (A.leftCols(layer_columns).array() > 0).any();
  // Where a window overlaps few of the GPU's layers (long steps, a model of many layers), the fit
  // (hundreds per search) sums over each row's nonzero mixes only; rows mostly full (a DLRM
  // step's layers all run in each 100 ms window) take Eigen's blocked matrix products, quicker
  // there than a row at a time.
  std::optional<SparseRows> sparse;
  if (2 * (A.array() != 0).count() <= A.size()) sparse.emplace(A);
  const auto add_outer_product = [&](Eigen::MatrixXd& lower, Eigen::Index r) {
    const size_t first = sparse->start[static_cast<size_t>(r)], last = sparse->start[static_cast<size_t>(r) + 1];
    for (size_t j = first; j < last; ++j)
      for (size_t i = j; i < last; ++i) lower(sparse->column[i], sparse->column[j]) += sparse->value[j] * sparse->value[i];
  };
  const auto add_row_times = [&](Eigen::VectorXd& b, Eigen::Index r, double v) {
    for (size_t k = sparse->start[static_cast<size_t>(r)]; k < sparse->start[static_cast<size_t>(r) + 1]; ++k)
      b(sparse->column[k]) += sparse->value[k] * v;
  };
  double total = 0;
  bool fitted = false;  // some metric had more windows with a value than unknowns
  // The metrics of a GPU usually have values in the same windows: their normal equations then
  // share one matrix, and it is built and factorised once (the search fits hundreds of offsets).
  std::vector<Eigen::Index> factored_rows;
  Eigen::LDLT<Eigen::MatrixXd> factored;
  Eigen::MatrixXd dense_rows;  // the dense path's rows of A with a value, gathered once per set
  for (const auto& y : values) {
    std::vector<Eigen::Index> rows;
    for (size_t i = 0; i < y.size(); ++i)
      if (std::isfinite(y[i])) rows.push_back(static_cast<Eigen::Index>(i));
    const Eigen::Index n = static_cast<Eigen::Index>(rows.size());
    if (n <= p) {
      f.x.emplace_back(Eigen::VectorXd::Zero(p));
      f.variance.push_back(kWindowFitNaN);
      continue;
    }
    const bool every_row = n == A.rows();
    if (factored_rows.empty() || rows != factored_rows) {
      Eigen::MatrixXd M = Eigen::MatrixXd::Zero(p, p);
      if (sparse) {
        for (Eigen::Index r : rows) add_outer_product(M, r);
      } else if (every_row) {
        M.selfadjointView<Eigen::Lower>().rankUpdate(A.transpose());
      } else {
        dense_rows = A(rows, Eigen::all);
        M.selfadjointView<Eigen::Lower>().rankUpdate(dense_rows.transpose());
      }
      M = M.selfadjointView<Eigen::Lower>();
      // A column no window touches (or a tiny one) must not make the system singular.
      const double ridge = 1e-10 * std::max(1.0, M.diagonal().maxCoeff());
      M.diagonal().array() += ridge;
      factored.compute(M);
      factored_rows = rows;
    }
    Eigen::VectorXd b = Eigen::VectorXd::Zero(p);
    double yy = 0, rss = 0;
    Eigen::VectorXd x;
    if (sparse) {
      for (Eigen::Index r : rows) {
        const double v = y[static_cast<size_t>(r)];
        add_row_times(b, r, v);
        yy += v * v;
      }
      x = factored.solve(b);
      for (Eigen::Index r : rows) {
        const double e = y[static_cast<size_t>(r)] - sparse->dot(r, x);
        rss += e * e;
      }
    } else {
      Eigen::VectorXd v(n);
      for (Eigen::Index k = 0; k < n; ++k) v(k) = y[static_cast<size_t>(rows[static_cast<size_t>(k)])];
      const Eigen::MatrixXd& R = every_row ? A : dense_rows;
      b.noalias() = R.transpose() * v;
      yy = v.squaredNorm();
      x = factored.solve(b);
      rss = (v - R * x).squaredNorm();
    }
    const double scale = std::max(yy / static_cast<double>(n), 1e-300);
    rss = std::max(rss, 1e-15 * scale * static_cast<double>(n));  // an exact fit is not infinitely likely
    total += -0.5 * static_cast<double>(n) * std::log(rss / static_cast<double>(n));
    f.x.push_back(x);
    f.variance.push_back(rss / static_cast<double>(n - p));
    fitted = true;
  }
  if (fitted) f.log_likelihood = total;
  return f;
}

}  // namespace pp
