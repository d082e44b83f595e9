// SharedWeightsSums (src/stats/shared_weights_sums.hpp): several least-squares systems whose
// rows share their weights, each with its own values (a GPU's metrics over the same windows).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "stats/least_squares_state.hpp"
#include "stats/shared_weights_sums.hpp"

namespace {

// Two thousand rows over up to 12 unknowns met as the rows go (a window's layers), with three
// metrics' values: each metric's state is the one its own rows give, to the bit.
TEST(SharedWeightsSums, EachSystemGetsTheStateOfItsOwnRows) {
  std::mt19937_64 rng(1204);
  std::uniform_real_distribution<double> unit(0, 1);
  pp::SharedWeightsSums together(3);
  pp::LeastSquaresState alone[3];
  std::vector<std::pair<size_t, double>> row;
  for (int r = 0; r < 2000; ++r) {
    row.clear();
    for (int k = 0; k < 12; ++k) {
      if (unit(rng) < 0.5) continue;
      const std::string name = "layer" + std::to_string(k) + "|1";
      const size_t index = together.unknown(name, "Linear");
      for (auto& state : alone) ASSERT_EQ(state.unknown(name, "Linear"), index);
      row.emplace_back(index, unit(rng) / 12);
    }
    std::sort(row.begin(), row.end());
    const double mix = unit(rng);
    const double values[3] = {100 * mix, -250 * mix + 3, 1e-3 * unit(rng)};
    together.add_row(row, values);
    for (size_t s = 0; s < 3; ++s) alone[s].add_row(row, values[s]);
  }
  for (size_t s = 0; s < 3; ++s) EXPECT_EQ(together.state(s).encode(), alone[s].encode()) << "system " << s;
  EXPECT_EQ(together.state(0).rows(), 2000);
  EXPECT_EQ(together.systems(), 3u);
}

TEST(SharedWeightsSums, AskingForASystemItDoesNotHaveIsAnError) {
  pp::SharedWeightsSums two(2);
  EXPECT_THROW(two.state(2), std::out_of_range);
  EXPECT_THROW(pp::SharedWeightsSums(0), std::invalid_argument);
  // A state's values replaced: one A^T y entry per unknown, or an error.
  pp::LeastSquaresState state;
  state.unknown("a|1", "Linear");
  EXPECT_THROW(state.with_values({1.0, 2.0}, 5, 2), std::invalid_argument);
  EXPECT_EQ(state.with_values({1.5}, 5, 2).cross_value(0), 1.5);
}

}  // namespace
