// The estimator of pp_deconvolve (stats/deconvolve.hpp); docs/reference/deconvolve.md explains the method.
//
// Outline of deconvolve():
//   1. rows -> one sparse row per sample (repeated layers merged, the '(rest)' remainder added);
//   2. R of the QR factorization of [A | y], accumulated over blocks of rows with Householder
//      QR (stats/dense_factorizations.hpp), so A is never stored dense:
//      ||A x - y||^2 = ||R x - z||^2 + r0^2 and every later step works on the p x p system,
//      with A's conditioning (never A^T A's);
//   3. columns scaled to unit norm, BVLS (stats/bvls.hpp) on the box;
//   4. uncertainty from the SVD of the scaled R: the classical covariance sigma^2 (A^T A)^-1 and
//      the heteroscedasticity-robust HC3 sandwich, the larger of the two, over all unknowns with
//      data (not only the free ones: which bounds are active is itself uncertain);
//   5. 90% intervals (two-sided inside the box, one-sided at a bound, joined with the interval
//      of the unconstrained estimate, cut at the bounds) and `identified`.
#include "stats/deconvolve.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "core/errors.hpp"
#include "core/number_text.hpp"
#include "stats/bvls.hpp"
#include "stats/dense_factorizations.hpp"
#include "stats/sample_key.hpp"
#include "stats/student_t.hpp"

namespace pp {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool same_value(double a, double b) {
  return a == b || std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
}

}  // namespace

uint32_t DeconvolveData::layer_index(std::string_view layer) {
  const std::string name(layer);
  auto found = layer_index_.find(name);
  if (found != layer_index_.end()) return found->second;
  if (name == kSystemKey)
    throw argument_error("layer_key", "'_system' is reserved (the key of the result's summary)");
  if (layers_.size() >= DeconvolveLimits::kMaxUnknowns)
    throw argument_error("layer_key", "has more than " + std::to_string(DeconvolveLimits::kMaxUnknowns) +
                                                " distinct values in one group");
  const auto index = static_cast<uint32_t>(layers_.size());
  layers_.push_back(name);
  layer_index_.emplace(name, index);
  return index;
}

void DeconvolveData::add(const std::string& sample_key, std::string_view layer, double weight,
                         std::optional<double> value) {
  check_row(weight, value);
  std::optional<uint32_t> sample;
  add_row(sample, sample_key, layer_index(layer), weight, value);
}

void DeconvolveData::add_sample(const std::string& sample_key, const std::vector<std::pair<uint32_t, double>>& rows,
                                std::optional<double> value) {
  std::optional<uint32_t> sample;
  for (const auto& [layer, weight] : rows) {
    check_row(weight, value);
    if (layer >= layers_.size()) throw std::out_of_range("DeconvolveData: no unknown " + std::to_string(layer));
    add_row(sample, sample_key, layer, weight, value);
  }
}

void DeconvolveData::check_row(double weight, std::optional<double> value) {
  if (!(weight >= 0 && weight <= 1 + DeconvolveLimits::kWeightSlack))
    throw argument_error("weight", "must be between 0 and 1 (the fraction of the sample's window)");
  if (value && !std::isfinite(*value)) throw argument_error("value", "must be finite");
}

void DeconvolveData::add_row(std::optional<uint32_t>& sample_index, const std::string& sample_key, uint32_t layer_id,
                             double weight, std::optional<double> value) {
  if (!sample_index) {
    auto [it, inserted] = sample_index_.try_emplace(sample_key, static_cast<uint32_t>(samples_.size()));
    if (inserted) {
      if (samples_.size() >= std::numeric_limits<uint32_t>::max() - 1) throw std::length_error("too many samples");
      samples_.emplace_back();
    }
    sample_index = it->second;
  }
  Sample& sample = samples_[*sample_index];
  if (value) {
    if (sample.has_value && !same_value(sample.value, *value))
      throw argument_error("value", "differs within sample " + sample_key_label(sample_key) + ": " +
                                              number_text(sample.value) + " and " + number_text(*value) +
                                              " (a sample has one value, the same on all its rows)");
    sample.value = *value;
    sample.has_value = true;
  }
  ++rows_;
  if (weight > 0) {
    sample.weight_sum += weight;
    if (sample.weight_sum > 1 + DeconvolveLimits::kSumSlack)
      throw argument_error("weight", "sums to " + number_text(sample.weight_sum) + " over the rows of sample " +
                                               sample_key_label(sample_key) +
                                               ": the weights of a sample are fractions of its window, at most 1 in all");
    entries_.push_back({*sample_index, layer_id, weight});
  }
}

void DeconvolveData::set_bounds(double lower, double upper) {
  if (std::isnan(lower) || lower == kInf) throw argument_error("lower", "must be a number (NULL: no lower bound)");
  if (std::isnan(upper) || upper == -kInf) throw argument_error("upper", "must be a number (NULL: no upper bound)");
  if (lower > upper) throw argument_error("upper", "must not be below argument 'lower'");
  if (bounds_set_) {
    if (lower != lower_) throw argument_error("lower", "must be the same on every row of a group");
    if (upper != upper_) throw argument_error("upper", "must be the same on every row of a group");
    return;
  }
  bounds_set_ = true;
  lower_ = lower;
  upper_ = upper;
}

bool identified_by(const DeconvolveUnknown& u, double scale, double widen);
bool identified_within(const DeconvolveUnknown& u, double scale, double reach98);

// Step 1 of the solver, and of DeconvolveData::state(): the samples with a value, in order of
// first appearance, as sparse rows (CSR; repeated (sample, layer) pairs merged, the remainder as
// '(rest)'), over the unknowns of the rows and of the added states, sorted by name.
struct CompactRows {
  std::vector<std::string> names, labels;  // labels: the states' ("" for the rows' own)
  std::vector<size_t> row_start{0};
  std::vector<uint32_t> cols;
  std::vector<double> weights, values;
  std::vector<int64_t> counts;         // rows in which the unknown has weight, the states' included
  std::vector<uint32_t> state_column;  // per unknown of the added states, its column

  explicit CompactRows(const DeconvolveData& data);
  size_t rows() const { return values.size(); }
};

CompactRows::CompactRows(const DeconvolveData& data) {
  std::vector<uint32_t> row_of(data.samples_.size(), UINT32_MAX);
  std::vector<uint32_t> sample_of_row;
  bool rest_needed = false;
  for (size_t s = 0; s < data.samples_.size(); ++s) {
    if (!data.samples_[s].has_value) continue;
    row_of[s] = static_cast<uint32_t>(sample_of_row.size());
    sample_of_row.push_back(static_cast<uint32_t>(s));
    if (1 - data.samples_[s].weight_sum > DeconvolveLimits::kRestThreshold) rest_needed = true;
  }
  std::vector<std::string> all = data.layers_;
  std::vector<std::string> all_labels(all.size());
  std::unordered_map<std::string, uint32_t> index = data.layer_index_;
  auto add_name = [&](const std::string& name, const std::string& label) {
    const auto [it, added] = index.try_emplace(name, static_cast<uint32_t>(all.size()));
    if (added) {
      all.push_back(name);
      all_labels.emplace_back();
    }
    if (all_labels[it->second].empty()) all_labels[it->second] = label;
    return it->second;
  };
  std::vector<uint32_t> state_index;
  for (const auto& u : data.prior_.unknowns()) state_index.push_back(add_name(u.name, u.label));
  const uint32_t rest_index = rest_needed ? add_name(DeconvolveData::kRest, "") : UINT32_MAX;
  if (all.size() > DeconvolveLimits::kMaxUnknowns + 1)
    throw argument_error("layer_key", "has more than " + std::to_string(DeconvolveLimits::kMaxUnknowns) +
                                          " distinct values in one group, with the state's");
  std::vector<uint32_t> order(all.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return all[a] < all[b]; });
  std::vector<uint32_t> column_of(all.size());
  for (size_t c = 0; c < order.size(); ++c) {
    column_of[order[c]] = static_cast<uint32_t>(c);
    names.push_back(all[order[c]]);
    labels.push_back(all_labels[order[c]]);
  }
  for (uint32_t i : state_index) state_column.push_back(column_of[i]);
  const uint32_t rest_column = rest_needed ? column_of[rest_index] : UINT32_MAX;
  const size_t m = sample_of_row.size();

  std::vector<size_t> start(m + 1, 0);
  for (const auto& e : data.entries_)
    if (row_of[e.sample] != UINT32_MAX) ++start[row_of[e.sample] + 1];
  for (size_t r = 0; r < m; ++r) start[r + 1] += start[r];
  std::vector<std::pair<uint32_t, double>> cells(start[m]);
  {
    std::vector<size_t> fill(start.begin(), start.end() - 1);
    for (const auto& e : data.entries_)
      if (row_of[e.sample] != UINT32_MAX) cells[fill[row_of[e.sample]]++] = {column_of[e.layer], e.weight};
  }
  cols.reserve(cells.size() + (rest_needed ? m : 0));
  weights.reserve(cols.capacity());
  values.reserve(m);
  counts.assign(names.size(), 0);
  std::vector<std::pair<uint32_t, double>> row;
  for (size_t r = 0; r < m; ++r) {
    row.assign(cells.begin() + static_cast<std::ptrdiff_t>(start[r]),
               cells.begin() + static_cast<std::ptrdiff_t>(start[r + 1]));
    const auto& sample = data.samples_[sample_of_row[r]];
    const double rest = 1 - sample.weight_sum;
    if (rest > DeconvolveLimits::kRestThreshold) row.emplace_back(rest_column, rest);
    std::sort(row.begin(), row.end());
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0 && row[i].first == row[i - 1].first) {
        weights.back() += row[i].second;  // a repeated (sample, layer) pair
      } else {
        cols.push_back(row[i].first);
        weights.push_back(row[i].second);
        ++counts[row[i].first];
      }
    }
    row_start.push_back(cols.size());
    values.push_back(sample.value);
  }
  for (size_t i = 0; i < state_column.size(); ++i) counts[state_column[i]] += data.prior_.unknowns()[i].rows;
}

LeastSquaresState DeconvolveData::state(const std::function<std::string(const std::string&)>& label_of) const {
  const CompactRows compact(*this);
  LeastSquaresState out;
  out.merge(prior_);
  std::vector<size_t> index(compact.names.size());
  for (size_t k = 0; k < compact.names.size(); ++k)
    index[k] = out.unknown(compact.names[k], label_of ? label_of(compact.names[k]) : compact.labels[k]);
  std::vector<std::pair<size_t, double>> row;
  for (size_t r = 0; r < compact.rows(); ++r) {
    row.clear();
    for (size_t i = compact.row_start[r]; i < compact.row_start[r + 1]; ++i)
      row.emplace_back(index[compact.cols[i]], compact.weights[i]);
    out.add_row(row, compact.values[r]);
  }
  return out;
}

class DeconvolveSolver {
 public:
  static DeconvolveResult run(const DeconvolveData& data, const std::function<void()>& poll);
};

DeconvolveResult DeconvolveSolver::run(const DeconvolveData& data, const std::function<void()>& poll) {
  using Eigen::Index;
  DeconvolveResult result;
  if (std::isfinite(data.lower_)) result.lower = data.lower_;
  if (std::isfinite(data.upper_)) result.upper = data.upper_;

  // 1. The rows, and the states added to them (whose rows are only sums).
  const CompactRows compact(data);
  const LeastSquaresState& prior = data.prior_;
  // Values far below 1 (under about 1e-77) are solved multiplied by a power of two that brings
  // the largest to [0.5, 1): the fit squares the residuals, and below about 1e-154 their squares
  // would vanish, leaving a zero sigma and intervals of no width around a wrong estimate. A power
  // of two scales exactly, and the results are scaled back. Finite bounds stay within 2^500.
  double largest = prior.max_abs_value();
  for (const double v : compact.values) largest = std::max(largest, std::fabs(v));
  int shift = 0;
  if (largest > 0 && largest < 0x1p-256) {
    shift = -std::ilogb(largest) - 1;
    for (const double b : {data.lower_, data.upper_})
      if (std::isfinite(b) && b != 0) shift = std::min(shift, 500 - std::ilogb(b));
    shift = std::max(shift, 0);
    // Bounds so far out that the values cannot be brought up beside them: below 2^-500 their
    // squares near the doubles' least (2^-1022), those of the residuals under it: they vanish,
    // and with them every interval's width (an estimate identified, and wrong).
    if (std::ldexp(largest, shift) < 0x1p-500)
      throw Error("argument 'value' is at most " + number_text(largest) + " in magnitude, too small beside the " +
                  "bounds (" + number_text(data.lower_) + ", " + number_text(data.upper_) +
                  ") for the fit, whose squares of it vanish: scale the values and bounds together, or leave out " +
                  "a bound that is not needed");
  }
  const auto scaled = [shift](double v) { return std::ldexp(v, shift); };
  const auto unscaled = [shift](double v) { return std::ldexp(v, -shift); };
  const double L = scaled(data.lower_), U = scaled(data.upper_);
  const Index p = static_cast<Index>(compact.names.size());
  result.unknowns.resize(compact.names.size());
  for (Index k = 0; k < p; ++k) {
    result.unknowns[k].name = compact.names[k];
    result.unknowns[k].n = compact.counts[k];
  }
  const size_t m = compact.rows();
  const size_t total = m + static_cast<size_t>(prior.rows());
  result.samples = static_cast<int64_t>(total);
  const std::vector<size_t>& row_start = compact.row_start;
  const std::vector<uint32_t>& cols = compact.cols;
  const std::vector<double>& weights = compact.weights;
  const Eigen::VectorXd y =
      Eigen::Map<const Eigen::VectorXd>(compact.values.data(), static_cast<Index>(m)).unaryExpr(scaled);
  const std::vector<int64_t>& counts = compact.counts;
  // The states' cross-products of [A | y] in the columns here (the value last).
  Eigen::MatrixXd prior_cross;
  if (!prior.empty()) {
    prior_cross = Eigen::MatrixXd::Zero(p + 1, p + 1);
    const auto& sc = compact.state_column;
    for (size_t i = 0; i < sc.size(); ++i) {
      prior_cross(sc[i], p) = prior_cross(p, sc[i]) = scaled(prior.cross_value(i));
      for (size_t j = 0; j < sc.size(); ++j) prior_cross(sc[i], sc[j]) = prior.cross(i, j);
    }
    prior_cross(p, p) = std::ldexp(prior.value_squares(), 2 * shift);
  }

  // The scale `identified` compares interval widths with.
  result.scale = std::isfinite(L) && std::isfinite(U) ? U - L : scaled(largest);
  // The result in the values' own unit again.
  const auto unscale = [&] {
    if (shift == 0) return;
    result.residual_rms = unscaled(result.residual_rms);
    result.scale = unscaled(result.scale);
    if (result.sigma) result.sigma = unscaled(*result.sigma);
    for (auto& u : result.unknowns)
      for (auto* v : {&u.estimate, &u.std_error, &u.lower90, &u.upper90})
        if (v->has_value()) *v = unscaled(**v);
  };

  std::vector<Index> data_columns;
  for (Index k = 0; k < p; ++k)
    if (counts[k] > 0) data_columns.push_back(k);
  const Index q = static_cast<Index>(data_columns.size());
  for (auto& u : result.unknowns) {  // until data say more: the interval is the bounds
    u.lower90 = std::isfinite(L) ? std::optional<double>(L) : std::nullopt;
    u.upper90 = std::isfinite(U) ? std::optional<double>(U) : std::nullopt;
  }
  if (total == 0 || q == 0) {
    result.dof = result.samples;
    if (total)
      result.residual_rms =
          std::sqrt((y.squaredNorm() + (prior.empty() ? 0.0 : prior_cross(p, p))) / static_cast<double>(total));
    unscale();
    return result;
  }

  // 2. R of [A | y], accumulated over blocks of rows, from the R of the states' rows: any rows
  // with their cross-products, here sqrt(eigenvalues) times the eigenvectors.
  const Index block = std::max<Index>(512, 4 * (p + 1));
  Eigen::MatrixXd R = Eigen::MatrixXd::Zero(p + 1, p + 1);
  if (!prior.empty()) {
    // Equilibrated first (unit diagonal): the values' column is often thousands of times the
    // fractions', and the small eigenvalues, which decide the fit, keep their digits only then.
    Eigen::VectorXd column_scale = prior_cross.diagonal().cwiseMax(0.0).cwiseSqrt();
    for (Index j = 0; j <= p; ++j)
      if (!(column_scale(j) > 0)) column_scale(j) = 1;
    const Eigen::MatrixXd unit = column_scale.cwiseInverse().asDiagonal() * prior_cross * column_scale.cwiseInverse().asDiagonal();
    const SymmetricEigen eigen = symmetric_eigen(unit);
    const Eigen::MatrixXd rows = eigen.values.cwiseMax(0.0).cwiseSqrt().asDiagonal() * eigen.vectors.transpose() *
                                 column_scale.asDiagonal();
    R = qr_upper_factor(rows);
  }
  {
    Eigen::MatrixXd stacked(p + 1 + block, p + 1);
    for (size_t first = 0; first < m; first += static_cast<size_t>(block)) {
      stacked.setZero();
      stacked.topRows(p + 1) = R;
      const size_t last = std::min(m, first + static_cast<size_t>(block));
      for (size_t r = first; r < last; ++r) {
        const Index row = p + 1 + static_cast<Index>(r - first);
        for (size_t i = row_start[r]; i < row_start[r + 1]; ++i) stacked(row, cols[i]) = weights[i];
        stacked(row, p) = y(static_cast<Index>(r));
      }
      R = qr_upper_factor(stacked);
    }
  }

  // 3. Unit-norm columns (of A: R's columns have the same norms), BVLS on the box.
  Eigen::VectorXd norms(q);
  Eigen::MatrixXd C(p, q);
  for (Index j = 0; j < q; ++j) {
    norms(j) = R.col(data_columns[j]).head(p).stableNorm();
    if (!(norms(j) > 0)) norms(j) = std::numeric_limits<double>::min();
    C.col(j) = R.col(data_columns[j]).head(p) / norms(j);
  }
  const Eigen::VectorXd d = R.col(p).head(p);
  Eigen::VectorXd lo(q), hi(q);
  for (Index j = 0; j < q; ++j) {
    lo(j) = std::isfinite(L) ? L * norms(j) : L;
    hi(j) = std::isfinite(U) ? U * norms(j) : U;
  }
  const BvlsSolution bvls = solve_bvls(C, d, lo, hi, poll);
  result.converged = bvls.converged;
  result.iterations = bvls.iterations;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(p);
  for (Index j = 0; j < q; ++j) {
    const Index k = data_columns[j];
    x(k) = bvls.state[j] < 0 ? L : bvls.state[j] > 0 ? U : bvls.u(j) / norms(j);
    result.unknowns[k].estimate = x(k);
    result.unknowns[k].at_bound = bvls.state[j];
    if (bvls.state[j] == 0) ++result.free;
  }

  // Residuals from the rows themselves.
  Eigen::VectorXd residual(static_cast<Index>(m));
  for (size_t r = 0; r < m; ++r) {
    double fitted = 0;
    for (size_t i = row_start[r]; i < row_start[r + 1]; ++i) fitted += weights[i] * x(cols[i]);
    residual(static_cast<Index>(r)) = y(static_cast<Index>(r)) - fitted;
  }
  double rss = residual.squaredNorm();
  if (!prior.empty()) {  // the states' rows: [x; -1]^T (cross-products) [x; -1]
    Eigen::VectorXd xv(p + 1);
    xv << x, -1.0;
    rss += std::max(0.0, xv.dot(prior_cross * xv));
  }
  result.residual_rms = std::sqrt(rss / static_cast<double>(total));
  result.dof = result.samples - result.free;
  if (result.dof > 0) {
    result.sigma = std::sqrt(rss / static_cast<double>(result.dof));
    result.t90 = student_t_quantile(0.95, result.dof);
    result.t98 = student_t_quantile(0.99, result.dof);
  }

  // 4. Conditioning and covariance from the SVD of the scaled design.
  {
    Eigen::MatrixXd unscaled(p, q);
    for (Index j = 0; j < q; ++j) unscaled.col(j) = R.col(data_columns[j]).head(p);
    const Eigen::VectorXd sv = singular_values(unscaled);
    if (sv(q - 1) > 0) result.condition = sv(0) / sv(q - 1);
  }
  const SingularValuesAndRightVectors svd = singular_values_and_right_vectors(C);
  const Eigen::VectorXd& sv = svd.values;
  const Eigen::MatrixXd& V = svd.right;
  if (sv(q - 1) > 0) result.condition_scaled = sv(0) / sv(q - 1);
  // Directions with singular values at rounding level cannot be estimated at all: their
  // participants are collinear. The others form the pseudo-inverse G = (C^T C)^+.
  const double rank_tolerance = 1e-12 * sv(0);
  std::vector<bool> collinear(static_cast<size_t>(q), false);
  Eigen::MatrixXd Vs = Eigen::MatrixXd::Zero(q, q);
  for (Index i = 0; i < q; ++i) {
    if (sv(i) > rank_tolerance) {
      Vs.col(i) = V.col(i) / sv(i);
    } else {
      for (Index j = 0; j < q; ++j)
        if (std::fabs(V(j, i)) > 1e-6) collinear[j] = true;
    }
  }
  const Eigen::MatrixXd G = Vs * Vs.transpose();
  for (Index j = 0; j < q; ++j)
    if (G(j, j) > DeconvolveLimits::kCollinearVif) collinear[j] = true;

  Eigen::VectorXd variance = Eigen::VectorXd::Constant(q, kInf);
  if (result.sigma) {
    const double sigma2 = *result.sigma * *result.sigma;
    // HC3: sum over samples of e^2 / (1 - h)^2 a a^T, a the scaled row, h its leverage.
    std::vector<Index> scaled_index(static_cast<size_t>(p), -1);
    for (Index j = 0; j < q; ++j) scaled_index[data_columns[j]] = j;
    Eigen::MatrixXd meat = Eigen::MatrixXd::Zero(q, q);
    std::vector<Index> idx;
    std::vector<double> a;
    for (size_t r = 0; r < m; ++r) {
      idx.clear();
      a.clear();
      for (size_t i = row_start[r]; i < row_start[r + 1]; ++i) {
        const Index j = scaled_index[cols[i]];
        idx.push_back(j);
        a.push_back(weights[i] / norms(j));
      }
      double h = 0;
      for (size_t s = 0; s < idx.size(); ++s)
        for (size_t t = 0; t < idx.size(); ++t) h += a[s] * a[t] * G(idx[s], idx[t]);
      const double e = residual(static_cast<Index>(r));
      if (e == 0 || 1 - h < 1e-10) continue;
      const double w = e * e / ((1 - h) * (1 - h));
      for (size_t s = 0; s < idx.size(); ++s)
        for (size_t t = 0; t < idx.size(); ++t) meat(idx[s], idx[t]) += w * a[s] * a[t];
    }
    // Rows kept only as sums have no residual of their own: they enter the sandwich with the
    // residual variance of the whole system (the classical covariance's assumption).
    if (!prior.empty())
      for (Index j = 0; j < q; ++j)
        for (Index k = 0; k < q; ++k)
          meat(j, k) += sigma2 * prior_cross(data_columns[j], data_columns[k]) / (norms(j) * norms(k));
    const Eigen::MatrixXd GM = G * meat;
    const Eigen::VectorXd hc3 = GM.cwiseProduct(G.transpose()).rowwise().sum();
    for (Index j = 0; j < q; ++j) variance(j) = std::max(sigma2 * G(j, j), hc3(j));
  }

  // 5. Intervals and identification. Under the model the unconstrained least-squares estimate
  // (G C^T d, the pseudo-inverse solution) is unbiased and its t interval has the nominal
  // coverage; the bounded estimate is what is reported, but where active bounds pull it away
  // from the unconstrained one, the interval is the hull of both intervals, so it keeps that
  // coverage. Then it is cut at the bounds, which hold the truth by assumption.
  const Eigen::VectorXd unconstrained = G * (C.transpose() * d);
  for (Index j = 0; j < q; ++j) {
    DeconvolveUnknown& u = result.unknowns[data_columns[j]];
    if (collinear[j] || !result.sigma || !std::isfinite(variance(j))) continue;  // interval: the bounds
    const double se = std::sqrt(std::max(variance(j), 0.0)) / norms(j);
    const double half = result.t90 * se;
    const double est = *u.estimate;
    u.std_error = se;
    // Around the bounded estimate: two-sided, or one-sided from the bound it sits on.
    double low = u.at_bound < 0 ? L : u.at_bound > 0 ? U - half : est - half;
    double high = u.at_bound < 0 ? L + half : u.at_bound > 0 ? U : est + half;
    const double free_estimate = unconstrained(j) / norms(j);
    if (std::isfinite(free_estimate)) {
      low = std::min(low, free_estimate - half);
      high = std::max(high, free_estimate + half);
    }
    low = std::max(low, L);
    high = std::min(high, U);
    u.lower90 = std::isfinite(low) ? std::optional<double>(low) : std::nullopt;
    u.upper90 = std::isfinite(high) ? std::optional<double>(high) : std::nullopt;
    u.identified = identified_by(u, result.scale, result.t98 - result.t90);
  }
  unscale();
  return result;
}

DeconvolveResult deconvolve(const DeconvolveData& data, const std::function<void()>& poll) {
  return DeconvolveSolver::run(data, poll);
}

// `identified`: the interval, widened from 90% to 98% (by `widen`), reaches no further from the
// estimate than the precision asked for. Judged at 98%, not 90%: an estimate at the edge of the
// rule whose 90% interval misses the truth (one time in ten) would otherwise be 5% off, and over
// the hundreds of estimates of a benchmark even 95% left one identified value 6% off.
bool identified_by(const DeconvolveUnknown& u, double scale, double widen) {
  if (!u.estimate || !u.lower90 || !u.upper90) return false;
  const double est = *u.estimate;
  return identified_within(u, scale, std::max(est - *u.lower90, *u.upper90 - est) + (u.std_error ? widen * *u.std_error : 0));
}

bool identified_within(const DeconvolveUnknown& u, double scale, double reach98) {
  if (u.n < DeconvolveLimits::kMinSamples || !u.estimate || !u.lower90 || !u.upper90) return false;
  return reach98 <= std::max(DeconvolveLimits::kMaxRelativeHalfWidth * std::fabs(*u.estimate),
                             DeconvolveLimits::kMinHalfWidth * scale);
}

DeconvolveResult deconvolve_hull(const DeconvolveResult& central, const std::vector<DeconvolveResult>& variants) {
  DeconvolveResult out = central;
  const double widen98 = out.t90 > 0 ? out.t98 / out.t90 : 1;
  for (DeconvolveUnknown& u : out.unknowns) {
    std::vector<const DeconvolveUnknown*> systems{&u};
    for (const DeconvolveResult& v : variants) {
      const auto it = std::find_if(v.unknowns.begin(), v.unknowns.end(),
                                   [&](const DeconvolveUnknown& w) { return w.name == u.name; });
      systems.push_back(it == v.unknowns.end() ? nullptr : &*it);
    }
    // Per side, each system's interval end is its estimate + the noise's half-width (t90 x its
    // stderr) + how far active bounds pulled its estimate from the unconstrained one. The
    // variants add how far they move the estimate: an error independent of the noise, so the
    // two add in quadrature; the pull adds as it is. The end lies between the central
    // interval's and the farthest of all the intervals' (which hold the bounds); without a
    // stderr to split by, it is the farthest.
    bool split = true;
    double reach98 = 0;
    // A system without the unknown (moved, its windows miss all its calls: an instant gauge's
    // reads, say) says nothing of it: its interval is the bounds, as before data say more, and
    // it is not identified.
    const bool unseen = std::find(systems.begin(), systems.end(), nullptr) != systems.end();
    const auto end = [&](std::optional<double> DeconvolveUnknown::*bound, int side) -> std::optional<double> {
      if (!(u.*bound)) return std::nullopt;
      const double own = *(u.*bound);
      double farthest = own, noise = 0, pull = 0, moved = 0;
      for (const DeconvolveUnknown* w : systems) {
        if (!w) return side > 0 ? out.upper : out.lower;  // (a system without it: see `unseen`)
        if (!(w->*bound)) return std::nullopt;
        farthest = side > 0 ? std::max(farthest, *(w->*bound)) : std::min(farthest, *(w->*bound));
        if (!w->estimate || !w->std_error || !u.estimate) {
          split = false;
          continue;
        }
        const double half = out.t90 * *w->std_error;
        noise = std::max(noise, half);
        pull = std::max(pull, side * (*(w->*bound) - *w->estimate) - half);
        moved = std::max(moved, side * (*w->estimate - *u.estimate));
      }
      if (!split) return farthest;
      // `identified` is judged at 98%: the noise's half-width and the timing's move widened alike.
      reach98 = std::max(reach98, pull + std::hypot(widen98 * noise, widen98 * moved));
      const double at = *u.estimate + side * (pull + std::hypot(noise, moved));
      return std::clamp(at, std::min(own, farthest), std::max(own, farthest));
    };
    u.lower90 = end(&DeconvolveUnknown::lower90, -1);
    u.upper90 = end(&DeconvolveUnknown::upper90, +1);
    u.identified = u.identified && !unseen &&
                   (split ? identified_within(u, out.scale, reach98) : identified_by(u, out.scale, out.t98 - out.t90));
  }
  return out;
}

}  // namespace pp
