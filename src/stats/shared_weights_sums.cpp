// SharedWeightsSums (stats/shared_weights_sums.hpp): one LeastSquaresState, and the value sums of
// the other systems beside it.
#include "stats/shared_weights_sums.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pp {

SharedWeightsSums::SharedWeightsSums(size_t systems) {
  if (systems == 0) throw std::invalid_argument("SharedWeightsSums: at least one system");
  others_.resize(systems - 1);
}

size_t SharedWeightsSums::unknown(const std::string& name, const std::string& label) {
  const size_t index = first_.unknown(name, label);
  for (Values& v : others_) v.cross_value.resize(first_.unknowns().size(), 0.0);
  return index;
}

void SharedWeightsSums::add_row(const std::vector<std::pair<size_t, double>>& weights, const double* values) {
  first_.add_row(weights, values[0]);
  for (size_t s = 0; s < others_.size(); ++s) {
    Values& v = others_[s];
    const double value = values[s + 1];
    // (the sums LeastSquaresState::add_row makes, in its order)
    for (const auto& [j, b] : weights) v.cross_value[j] += b * value;
    v.squares += value * value;
    v.max_abs = std::max(v.max_abs, std::fabs(value));
  }
}

LeastSquaresState SharedWeightsSums::state(size_t system) const {
  if (system >= systems()) throw std::out_of_range("SharedWeightsSums: no system " + std::to_string(system));
  if (system == 0) return first_;
  const Values& v = others_[system - 1];
  return first_.with_values(v.cross_value, v.squares, v.max_abs);
}

}  // namespace pp
