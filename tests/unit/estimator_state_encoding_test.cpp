// The estimator state's encoding (stats/least_squares_state.hpp) refuses what no rows give: a
// blob that is not a whole state, and counts or sums that a damaged or forged database file holds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "core/errors.hpp"
#include "stats/least_squares_state.hpp"

namespace {

// What decoding a blob as an estimator state says: "accepted", or its error.
std::string decode_message(const std::string& bytes) {
  try {
    pp::LeastSquaresState::decode(bytes);
  } catch (const pp::Error& e) {
    return e.what();
  }
  return "accepted";
}

// A blob that is not a whole state is refused with what is wrong with it.
TEST(DeconvolveState, DecodeRefusesWhatIsNotAState) {
  pp::LeastSquaresState state;
  state.unknown("a", "A");
  state.add_row({{0, 0.5}}, 1.0);
  const std::string blob = state.encode();
  EXPECT_EQ(decode_message(blob.substr(0, blob.size() - 1)), "estimator state: the blob ends early (truncated or not a state)");
  EXPECT_EQ(decode_message(blob + "x"), "estimator state: bytes after the end of the state");
  EXPECT_EQ(decode_message("{\"json\": 1}"), "estimator state: not a state (no 'PPLS' mark)");
  EXPECT_EQ(decode_message(""), "estimator state: the blob ends early (truncated or not a state)");
}

TEST(DeconvolveState, DecodeRefusesCountsAndSumsThatNoRowsGive) {
  // A state of one unknown 'a' (label 'A'): header (mark, version, unknowns, rows, max |y|, y^2)
  // at 0-35; 'a', 'A' as lengths and bytes at 36-45; its rows at 46, A^T y at 54; A^T A at 62.
  pp::LeastSquaresState state;
  state.unknown("a", "A");
  state.add_row({{0, 0.5}}, 1.0);
  const std::string blob = state.encode();
  ASSERT_EQ(blob.size(), 70u);
  auto with = [&](size_t at, auto value) {
    std::string out = blob;
    std::memcpy(out.data() + at, &value, sizeof value);
    return out;
  };
  EXPECT_EQ(decode_message(blob), "accepted");
  EXPECT_EQ(decode_message(with(12, int64_t{-1})), "estimator state: a row count of -1 (0 to 2^53)");
  EXPECT_EQ(decode_message(with(46, std::numeric_limits<int64_t>::max())),
            "estimator state: unknown 'a' has a row count of 9223372036854775807 (0 to 2^53)");
  EXPECT_EQ(decode_message(with(62, std::nan(""))), "estimator state: a sum that is not finite");
  EXPECT_EQ(decode_message(with(28, -1.0)), "estimator state: the values' sums are not finite and non-negative");
  // Sums that each look like numbers but that no rows give together: an unknown in more rows
  // than its state, a negative A_k^T A_k, an A_k^T y beyond what y^T y allows, a y^T y beyond
  // the rows times the largest value squared. Each moved the estimates unsaid.
  EXPECT_EQ(decode_message(with(46, int64_t{2})), "estimator state: unknown 'a' is in 2 rows of a state of 1");
  const std::string no_rows_give =
      "estimator state: unknown 'a' has sums no rows give (a negative sum of squares, or one beyond what the values' "
      "squares allow)";
  EXPECT_EQ(decode_message(with(62, -0.25)), no_rows_give);
  EXPECT_EQ(decode_message(with(28, 0.0)), no_rows_give);
  EXPECT_EQ(decode_message(with(54, 0.6)), no_rows_give);  // 0.6^2 > 0.25 x 1
  EXPECT_EQ(decode_message(with(20, 0.5)),
            "estimator state: its values' squares sum to more than its rows of its largest value give");
  // As many unknowns as the count says would take more bytes than the blob has: no room is made.
  EXPECT_EQ(decode_message(with(8, uint32_t{0xFFFFFFFF})), "estimator state: the blob ends early (truncated or not a state)");

  // Merged, counts stay within 2^53 (the solver adds them up): states from a file are checked.
  pp::LeastSquaresState many = pp::LeastSquaresState::decode(with(12, int64_t{1} << 53));
  try {
    many.merge(state);
    ADD_FAILURE() << "merged past 2^53 rows";
  } catch (const pp::Error& e) {
    EXPECT_STREQ(e.what(), "estimator states: merged, they would count more than 2^53 rows");
  }
}

}  // namespace
