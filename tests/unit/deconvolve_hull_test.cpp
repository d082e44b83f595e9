// deconvolve_hull (src/stats/deconvolve.hpp): one system solved with its windows where the
// alignment puts them and moved by the timing's uncertainty either way, as one result: how the
// variants widen each interval, and when they leave it the metric's bounds.
#include <gtest/gtest.h>

#include <cmath>

#include "stats/deconvolve.hpp"

namespace {

using pp::DeconvolveResult;
using pp::DeconvolveUnknown;

// A result with one unknown: estimate, its standard error and a symmetric 90% interval.
DeconvolveResult one_unknown(double estimate, double std_error, double t90 = 1.645) {
  DeconvolveResult r;
  r.t90 = t90;
  r.t98 = 2.326;
  r.scale = 1;
  DeconvolveUnknown u;
  u.name = "A";
  u.n = 1000;
  u.estimate = estimate;
  u.std_error = std_error;
  u.lower90 = estimate - t90 * std_error;
  u.upper90 = estimate + t90 * std_error;
  u.identified = true;
  r.unknowns.push_back(u);
  return r;
}

TEST(DeconvolveHull, TimingAndNoiseAddInQuadrature) {
  // The windows moved by their timing uncertainty move the estimate by 0.003 either way; the
  // noise alone gives +-0.004: the interval is +-0.005, not the hull's +-0.007.
  const DeconvolveResult central = one_unknown(0.2, 0.004 / 1.645);
  const DeconvolveResult hull =
      pp::deconvolve_hull(central, {one_unknown(0.197, 0.004 / 1.645), one_unknown(0.203, 0.004 / 1.645)});
  const DeconvolveUnknown& u = hull.unknowns[0];
  EXPECT_DOUBLE_EQ(*u.estimate, 0.2);
  EXPECT_NEAR(*u.lower90, 0.195, 1e-12);
  EXPECT_NEAR(*u.upper90, 0.205, 1e-12);
  // Judged at 98%, both parts widened by 2.326 / 1.645: 0.0071, within 5% of 0.2 (0.01).
  EXPECT_TRUE(u.identified);
  // Moved by 0.009: 0.0139 at 98%, past the rule: not identified.
  const DeconvolveResult far =
      pp::deconvolve_hull(central, {one_unknown(0.191, 0.004 / 1.645), one_unknown(0.209, 0.004 / 1.645)});
  EXPECT_NEAR(*far.unknowns[0].upper90, 0.2 + std::hypot(0.004, 0.009), 1e-12);
  EXPECT_FALSE(far.unknowns[0].identified);
}

TEST(DeconvolveHull, APullByTheBoundsAddsAsItIs) {
  // Active bounds pulled the estimate 0.002 above the unconstrained one, so the interval reaches
  // that much further down; the timing's move adds to the noise in quadrature only.
  DeconvolveResult central = one_unknown(0.2, 0.004 / 1.645);
  *central.unknowns[0].lower90 -= 0.002;
  const DeconvolveResult hull =
      pp::deconvolve_hull(central, {one_unknown(0.197, 0.004 / 1.645), one_unknown(0.203, 0.004 / 1.645)});
  EXPECT_NEAR(*hull.unknowns[0].lower90, 0.2 - 0.002 - 0.005, 1e-12);
  EXPECT_NEAR(*hull.unknowns[0].upper90, 0.205, 1e-12);
}

TEST(DeconvolveHull, AVariantThatCanSayLittleKeepsTheIntervalWide) {
  // Moved, the system no longer separates the unknown: same estimate, interval 0..1 (its
  // bounds). The interval stays 0..1 and nothing is identified.
  DeconvolveResult vague = one_unknown(0.2, 0.001);
  vague.unknowns[0].lower90 = 0;
  vague.unknowns[0].upper90 = 1;
  const DeconvolveResult hull = pp::deconvolve_hull(one_unknown(0.2, 0.001), {vague});
  EXPECT_DOUBLE_EQ(*hull.unknowns[0].lower90, 0);
  EXPECT_DOUBLE_EQ(*hull.unknowns[0].upper90, 1);
  EXPECT_FALSE(hull.unknowns[0].identified);
}

TEST(DeconvolveHull, AVariantWithoutTheUnknownLeavesItTheBounds) {
  // Moved, the windows miss every call of the unknown (an instant gauge read once in it): that
  // system says nothing of it, so the interval is the bounds (0 and none above), not NULL on both
  // sides, and it is not identified.
  DeconvolveResult central = one_unknown(0.2, 0.001);
  central.lower = 0;
  DeconvolveResult moved = central;
  moved.unknowns.clear();
  const DeconvolveResult hull = pp::deconvolve_hull(central, {moved});
  ASSERT_TRUE(hull.unknowns[0].lower90);
  EXPECT_DOUBLE_EQ(*hull.unknowns[0].lower90, 0);
  EXPECT_FALSE(hull.unknowns[0].upper90);
  EXPECT_FALSE(hull.unknowns[0].identified);
  // With both bounds, both ends are them.
  central.upper = 1;
  const DeconvolveResult bounded = pp::deconvolve_hull(central, {moved});
  EXPECT_DOUBLE_EQ(*bounded.unknowns[0].lower90, 0);
  EXPECT_DOUBLE_EQ(*bounded.unknowns[0].upper90, 1);
  EXPECT_FALSE(bounded.unknowns[0].identified);
}

TEST(DeconvolveHull, AVariantWithoutAnIntervalLeavesNone) {
  DeconvolveResult unbounded = one_unknown(0.2, 0.001);
  unbounded.unknowns[0].upper90.reset();
  const DeconvolveResult hull = pp::deconvolve_hull(one_unknown(0.2, 0.001), {unbounded});
  EXPECT_TRUE(hull.unknowns[0].lower90);
  EXPECT_FALSE(hull.unknowns[0].upper90);
  EXPECT_FALSE(hull.unknowns[0].identified);
}

}  // namespace
