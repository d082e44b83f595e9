// The running sums of pp_alignment_sums are exact integers: 128-bit sums of t^2, A t^2 and
// A^2 t^2, and 256-bit sums of a job's weighted squares, so that a difference of two prefixes
// and a job's stretches summed one by one agree to the bit.
#include <gtest/gtest.h>

#include <cmath>

#include "attribution/stretch_sums.hpp"

namespace {

TEST(StretchSums, WideSumsAreExact) {
  pp::Uint256 a, b;
  const pp::Uint128 big = (static_cast<pp::Uint128>(1) << 114) - 3;
  a.add_product(big, big);
  a.add(big);
  b.add_product(big, big + 1);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == pp::Uint256{});
  EXPECT_EQ(a.to_double(), std::ldexp(1.0, 228));
  // Past 2^256 a sum says so rather than wrap.
  pp::Uint256 top;
  top.add_product(~static_cast<pp::Uint128>(0), ~static_cast<pp::Uint128>(0));
  EXPECT_THROW(top.add_product(static_cast<pp::Uint128>(1) << 127, 4), std::exception);
}

TEST(StretchSums, AStretchAddsItsSquaresAndTheDifferenceTakesThemBack) {
  const auto one = pp::with_stretch({}, 10000, 1760000, 25000, true);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->dcgm.a2t2, static_cast<pp::Uint128>(10000) * 10000 * 1760000 * 1760000);
  EXPECT_EQ(one->driver.at2, static_cast<pp::Uint128>(10000) * 25000 * 25000);
  EXPECT_EQ(one->longest_ns, 1760000);
  EXPECT_EQ(one->kept_windows, 1);
  const auto two = pp::with_stretch(*one, 9999, 25000, 1, false);
  ASSERT_TRUE(two);
  const pp::StretchSums second = pp::sums_between(*one, *two);
  EXPECT_EQ(second.stretches, 1);
  EXPECT_EQ(second.length_ms, 9999);
  EXPECT_EQ(second.dcgm.t2, static_cast<pp::Uint128>(25000) * 25000);
  EXPECT_EQ(second.kept_windows, 0);
  // Past 2^128 the sums stop (the stretch is read one by one).
  pp::StretchSums full = *one;
  full.dcgm.a2t2 = ~static_cast<pp::Uint128>(0);
  EXPECT_FALSE(pp::with_stretch(full, 1, 1, 0, false));
  EXPECT_EQ(pp::whole_ns(1234.5), std::nullopt);
  EXPECT_EQ(pp::whole_ns(1e15 + 1), std::nullopt);
  EXPECT_EQ(pp::whole_ns(1760000), 1760000);
}

}  // namespace
