// The sufficient statistics of a least-squares system y ~ A x over named unknowns, as the
// estimator keeps them for the windows it no longer stores:
//   the cross-products [A | y]^T [A | y] (the normal equations and the sum of squared values),
//   the rows, per unknown the rows in which it has weight, and the largest |y|.
// Adding rows and merging states are sums, so a system kept in parts (refreshes, GPUs,
// databases) solves exactly like one holding every row: DeconvolveData::add_state() puts a state
// under the rows of pp_deconvolve's solver. docs/reference/attribution.md documents the encoding,
// so that another engine can merge states too.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pp {

class LeastSquaresState {
 public:
  // Unknowns in the order they were added; label: free text the caller keeps with the unknown
  // (the estimator keeps its layer type).
  struct Unknown {
    std::string name, label;
    int64_t rows = 0;  // rows in which it has weight > 0
  };

  const std::vector<Unknown>& unknowns() const { return unknowns_; }
  int64_t rows() const { return rows_; }
  double max_abs_value() const { return max_abs_value_; }
  bool empty() const { return rows_ == 0; }
  // The cross-products: of the columns of unknowns i and j, of unknown i's column with y, of y.
  double cross(size_t i, size_t j) const { return cross_[packed(i, j)]; }
  double cross_value(size_t i) const { return cross_value_[i]; }
  double value_squares() const { return value_squares_; }
  // The index of an unknown, or unknowns().size() when it has none.
  size_t find(const std::string& name) const;

  // One row: (unknown index, weight) pairs with distinct indices, and its value.
  void add_row(const std::vector<std::pair<size_t, double>>& weights, double value);
  // The index of an unknown, added (in no row yet) when it is new.
  size_t unknown(const std::string& name, const std::string& label);
  // Adds another state's rows; rename maps each of its unknowns' names to the name here (names
  // that map to one are summed as one unknown).
  void merge(const LeastSquaresState& other, const std::function<std::string(const std::string&)>& rename = nullptr);

  // The same rows with other values (A^T A and the row counts kept): A^T y per unknown, y^T y and
  // the largest |y| as given (stats/shared_weights_sums.hpp).
  LeastSquaresState with_values(std::vector<double> cross_value, double value_squares, double max_abs_value) const;

  // The documented binary encoding, and back (throws pp::Error on a blob that is not one).
  std::string encode() const;
  static LeastSquaresState decode(std::string_view blob);

 private:
  // The upper triangle column by column, (0,0), (0,1), (1,1), (0,2), ...: a new unknown appends.
  static size_t packed(size_t i, size_t j) { return i <= j ? j * (j + 1) / 2 + i : i * (i + 1) / 2 + j; }
  std::vector<Unknown> unknowns_;
  std::unordered_map<std::string, size_t> index_;
  int64_t rows_ = 0;
  double max_abs_value_ = 0;
  std::vector<double> cross_;        // A^T A, packed
  std::vector<double> cross_value_;  // A^T y
  double value_squares_ = 0;         // y^T y
};

}  // namespace pp
