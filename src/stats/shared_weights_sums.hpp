// The least-squares sums (stats/least_squares_state.hpp) of several systems whose rows have the
// same weights, each system with its own value per row: a GPU's metrics sampled over the same
// windows. A^T A and the row counts are summed once for all of them; A^T y, y^T y and the
// largest |y| per system. state(s) is what LeastSquaresState::add_row gives from system s's rows,
// to the bit.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "stats/least_squares_state.hpp"

namespace pp {

class SharedWeightsSums {
 public:
  explicit SharedWeightsSums(size_t systems);

  size_t systems() const { return others_.size() + 1; }
  size_t unknowns() const { return first_.unknowns().size(); }
  // The index of an unknown, added (in no row yet) when it is new.
  size_t unknown(const std::string& name, const std::string& label);
  // One row: weights as LeastSquaresState::add_row takes them; values[s] is system s's value.
  void add_row(const std::vector<std::pair<size_t, double>>& weights, const double* values);
  LeastSquaresState state(size_t system) const;

 private:
  LeastSquaresState first_;  // system 0's sums, whose A^T A and row counts are every system's
  struct Values {
    std::vector<double> cross_value;  // A^T y
    double squares = 0, max_abs = 0;
  };
  std::vector<Values> others_;  // systems 1, 2, ...
};

}  // namespace pp
