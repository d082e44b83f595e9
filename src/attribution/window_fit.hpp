// Least-squares fits of each metric of one GPU on its windows' mixes: the fit the alignment's
// searches make hundreds of times (alignment.cpp), one row of A per sample window and one column
// per unknown of the timeline (window_mixes.hpp), plus the rest.
//
//   const WindowFit f = fit_windows(window_fractions(timeline, ends_ns, 100e6), values, timeline.unknowns);
//   f.log_likelihood;  // the profile log-likelihood, summed over the metrics
//   f.x[m], f.variance[m];  // metric m's coefficients and residual variance (NaN: too few samples)
#pragma once
#include <Eigen/Core>
#include <limits>
#include <vector>

namespace pp {

struct WindowFit {
  // -infinity where no metric has more windows with a value than A has columns: such a fit is
  // exact at every offset alike, and tells none from another.
  double log_likelihood = -std::numeric_limits<double>::infinity();
  std::vector<Eigen::VectorXd> x;
  std::vector<double> variance;
  bool any_layer = false;  // some window holds some of the first layer_columns columns
};

// values[m][i]: metric m's value of window i (NaN where it has none); A's first layer_columns
// columns are layers.
WindowFit fit_windows(const Eigen::MatrixXd& A, const std::vector<std::vector<double>>& values,
                      Eigen::Index layer_columns);

}  // namespace pp
