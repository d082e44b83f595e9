// best_of_grid and refine (src/attribution/profile_peak.hpp): the peak of a profile
// log-likelihood on a grid, and its 90% interval, from a part of the grid's points, against
// reading every point.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "attribution/profile_peak.hpp"

namespace {

using pp::Peak;

// Every point read, as the alignment did before: the reference.
Peak every_point(const std::function<double(double)>& loglik, double center, double reach, double step) {
  std::vector<std::pair<double, double>> grid;
  for (double d = center - reach; d <= center + reach + step / 2; d += step) grid.emplace_back(d, loglik(d));
  Peak p;
  for (const auto& [d, l] : grid)
    if (l > p.value) p = {d, l, 0};
  if (!std::isfinite(p.value)) return p;
  double lo = p.at, hi = p.at;
  for (const auto& [d, l] : grid)
    if (2 * (p.value - l) <= pp::kChi2Half90) lo = std::min(lo, d), hi = std::max(hi, d);
  p.half90 = std::max({p.at - lo, hi - p.at, step});
  if (lo <= grid.front().first || hi >= grid.back().first) p.half90 = std::max(p.half90, reach);
  return p;
}

void expect_same(const Peak& a, const Peak& b) {
  EXPECT_EQ(a.at, b.at);
  EXPECT_EQ(a.value, b.value);
  EXPECT_EQ(a.half90, b.half90);
}

// The driver's phase as the alignment searched it before: every ms of the period.
Peak every_grid_point(const std::function<double(double)>& loglik, double period, double step) {
  Peak p;
  for (double phase = 0; phase < period; phase += step)
    if (const double l = loglik(phase); l > p.value) p = {phase, l, 0};
  return p;
}

// The alignment's refinement: +-0.75 ms around a coarse best in 25 us steps (61 points).
constexpr double kReach = 750e3, kStep = 25e3;

// Peaks of every sharpness, inside the grid, near its ends and beyond them: the same peak and
// interval as reading every point, from fewer points where the interval is narrow.
TEST(ProfilePeak, ASinglePeakIsFoundAsFromEveryPoint) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> center(-1.2e6, 1.2e6), log_width(std::log(5e3), std::log(5e6));
  size_t narrow = 0, narrow_reads = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const double c = center(rng), width = std::exp(log_width(rng)), top = 1000 * center(rng) / 1e6;
    size_t reads = 0;
    const auto loglik = [&](double d) {
      ++reads;
      return top - 0.5 * (d - c) * (d - c) / (width * width);
    };
    const Peak all = every_point(loglik, 0, kReach, kStep);
    reads = 0;
    const Peak some = pp::refine(loglik, 0, kReach, kStep);
    SCOPED_TRACE("center " + std::to_string(c) + " width " + std::to_string(width));
    expect_same(some, all);
    EXPECT_LE(reads, 61u);
    if (width < 50e3 && std::fabs(c) < 500e3) ++narrow, narrow_reads += reads;
  }
  ASSERT_GT(narrow, 50u);
  EXPECT_LT(static_cast<double>(narrow_reads) / static_cast<double>(narrow), 30);
}

// Two broad peaks: the higher one, wherever the first stride's points put the search first, and
// the interval over both where both are within the 90% drop.
TEST(ProfilePeak, OfTwoBroadPeaksTheHigherWins) {
  for (double second : {-0.5, 0.5, 2.0, 2.6, 3.0}) {
    const auto loglik = [&](double d) {
      const double a = -0.5 * std::pow((d + 400e3) / 60e3, 2), b = second - 0.5 * std::pow((d - 350e3) / 60e3, 2);
      return std::max(a, b);
    };
    SCOPED_TRACE("second peak's height " + std::to_string(second));
    expect_same(pp::refine(loglik, 0, kReach, kStep), every_point(loglik, 0, kReach, kStep));
  }
}

// A likelihood that falls off the grid (no fit there) and one with no fit anywhere.
TEST(ProfilePeak, PointsWithoutAFitAreNeverThePeak) {
  const double inf = std::numeric_limits<double>::infinity();
  const auto half = [&](double d) { return d < -100e3 ? -inf : -0.5 * std::pow((d - 200e3) / 40e3, 2); };
  expect_same(pp::refine(half, 0, kReach, kStep), every_point(half, 0, kReach, kStep));
  const auto some = [&](double d) { return std::fabs(d - 310e3) < 10e3 ? 1.0 : -inf; };  // between strides
  expect_same(pp::refine(some, 0, kReach, kStep), every_point(some, 0, kReach, kStep));
  const auto none = [&](double) { return -inf; };
  const Peak p = pp::refine(none, 0, kReach, kStep);
  EXPECT_FALSE(std::isfinite(p.value));
  expect_same(p, every_point(none, 0, kReach, kStep));
}

// A flat likelihood says nothing: the interval is the whole reach.
TEST(ProfilePeak, AFlatLikelihoodSpansTheReach) {
  const Peak p = pp::refine([](double) { return 5.0; }, 1e6, kReach, kStep);
  EXPECT_EQ(p.at, 1e6 - kReach);
  EXPECT_EQ(p.half90, kReach * 2);
}

// A phase's likelihood over a period of a sixth of a second and of a second, its peak anywhere
// (round the period's end too), with up to three rival peaks: the phase every point gives, from
// a fifth of the points and a few more.
TEST(ProfilePeak, APhaseIsFoundAsFromEveryPointOfThePeriod) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0, 1);
  for (const double period : {1e9 / 6, 1e9})
    for (int trial = 0; trial < 300; ++trial) {
      struct Bump {
        double at, width, height;
      };
      std::vector<Bump> bumps;
      const int rivals = trial % 3;
      for (int b = 0; b <= rivals; ++b)
        bumps.push_back({unit(rng) * period, 3e6 + unit(rng) * 20e6, b == 0 ? 0.0 : -5 * unit(rng)});
      size_t reads = 0;
      const auto loglik = [&](double phase) {
        ++reads;
        double best = -1e9;
        for (const Bump& b : bumps) {
          double d = std::fabs(phase - b.at);
          d = std::min(d, period - d);  // round the period
          best = std::max(best, b.height - 0.5 * (d / b.width) * (d / b.width));
        }
        return best;
      };
      const Peak all = every_grid_point(loglik, period, 1e6);
      const size_t every = reads;
      reads = 0;
      const Peak some = pp::best_of_grid(loglik, 0, period, 1e6, true);
      SCOPED_TRACE("period " + std::to_string(period) + ", trial " + std::to_string(trial));
      EXPECT_EQ(some.at, all.at);
      EXPECT_EQ(some.value, all.value);
      EXPECT_LE(reads, (every + 4) / 5 + 3 * 8);  // a fifth, and 8 around each of three leads
    }
}

// A period of a stride or less is read whole, round its end too (no point read twice, none
// outside it).
TEST(ProfilePeak, AShortPeriodIsReadWhole) {
  for (int points = 1; points <= 7; ++points) {
    const double period = points * 1e6;
    size_t reads = 0;
    const auto loglik = [&](double phase) {
      ++reads;
      return -std::fabs(phase - 2e6);
    };
    const Peak some = pp::best_of_grid(loglik, 0, period, 1e6, true);
    EXPECT_LE(reads, static_cast<size_t>(points)) << points << " points";
    EXPECT_EQ(some.at, every_grid_point(loglik, period, 1e6).at) << points << " points";
  }
}

// No point with a fit: every point is read and none is the peak, as before.
TEST(ProfilePeak, APeriodWithoutAFitHasNoPhase) {
  const double inf = std::numeric_limits<double>::infinity();
  const auto none = [&](double) { return -inf; };
  const Peak p = pp::best_of_grid(none, 0, 100e6, 1e6, true);
  EXPECT_FALSE(std::isfinite(p.value));
  EXPECT_EQ(p.at, every_grid_point(none, 100e6, 1e6).at);
  const auto narrow = [&](double phase) { return std::fabs(phase - 42e6) < 1e6 ? 1.0 : -inf; };
  EXPECT_EQ(pp::best_of_grid(narrow, 0, 100e6, 1e6, true).at, 42e6);
}

}  // namespace
