// snap_to_grid (src/attribution/window_grid.hpp): windows placed from stored times that carry the
// scrapes' lateness are put back on the straight grid DCGM polls on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "attribution/window_grid.hpp"

namespace window_grid_test {

constexpr int64_t kMs = 1000000;
constexpr int64_t kPeriod = 100 * kMs;
constexpr int64_t kPhase = 1714557600000 * kMs + 37 * kMs + 250000;  // DCGM's grid: its own phase, in ns

// The true ends of 300 windows, and the ends an offset places from stored times that ran late by
// up to `late_ms` (uniform) and were cut to whole ms, as Prometheus stores them.
struct Placed {
  std::vector<int64_t> truth, ends;
};

Placed late_scrapes(double late_ms, unsigned seed, double period_ppm = 0) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> late(0, late_ms * kMs);
  Placed p;
  for (int k = 0; k < 300; ++k) {
    const int64_t end = kPhase + k * kPeriod + static_cast<int64_t>(k * kPeriod * period_ppm * 1e-6);
    const int64_t stored = (end + 20 * kMs + static_cast<int64_t>(late(random))) / kMs * kMs;
    p.truth.push_back(end);
    p.ends.push_back(stored - 20 * kMs - static_cast<int64_t>(late_ms / 2 * kMs));  // the offset: their middle
  }
  return p;
}

// How far the placed ends scatter about the true ones: 0 when all lie on one grid (the grid's
// phase is the offset's, whose error the alignment's timing_ns carries, not this).
int64_t scatter(const Placed& p) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < p.ends.size(); ++i) {
    lo = std::min<int64_t>(lo, p.ends[i] - p.truth[i]);
    hi = std::max<int64_t>(hi, p.ends[i] - p.truth[i]);
  }
  return hi - lo;
}

TEST(WindowGrid, ScrapesLateByUpToAFewMsLandOnTheGrid) {
  Placed p = late_scrapes(2, 1);
  ASSERT_TRUE(pp::snap_to_grid(p.ends, kPeriod));
  EXPECT_LT(scatter(p), kMs / 10);  // every window on one grid
}

// Scrapes late by up to 10 ms (a busy Prometheus host): most ends are further than the 3 ms the
// grid is fitted to, and each is still its grid point, not left where its scrape put it.
TEST(WindowGrid, ScrapesLateByTensOfMsLandOnTheGridToo) {
  for (const double late_ms : {10.0, 40.0}) {
    Placed p = late_scrapes(late_ms, 2);
    ASSERT_GT(scatter(p), 8 * kMs);
    ASSERT_TRUE(pp::snap_to_grid(p.ends, kPeriod)) << late_ms;
    EXPECT_LT(scatter(p), kMs / 10) << late_ms;
  }
}

// DCGM's clock runs apart from Prometheus' (300 ppm; 0.1-0.8%, a window setting that is not
// quite DCGM's period, whose ends drift past half a period over the stretch): the grid follows it.
TEST(WindowGrid, AGridWhosePeriodIsNotQuiteTheWindowIsFollowed) {
  for (const double ppm : {300.0, -1000.0, 5000.0, -5000.0, 8000.0}) {
    Placed p = late_scrapes(2, 5, ppm);
    ASSERT_TRUE(pp::snap_to_grid(p.ends, kPeriod)) << ppm;
    EXPECT_LT(scatter(p), kMs / 2) << ppm;  // the drift itself: 9 to 240 ms over the stretch
  }
}

// An end half a period off cannot be told from the next grid point: left where it is.
TEST(WindowGrid, AnEndHalfAPeriodOffIsLeftWhereItIs) {
  Placed p = late_scrapes(1, 3);
  p.ends[150] += kPeriod / 2 - 2 * kMs;  // 48 ms off, between two grid points
  const int64_t placed = p.ends[150];
  ASSERT_TRUE(pp::snap_to_grid(p.ends, kPeriod));
  EXPECT_EQ(p.ends[150], placed);
  p.ends.erase(p.ends.begin() + 150);
  p.truth.erase(p.truth.begin() + 150);
  EXPECT_LT(scatter(p), kMs / 10);  // the others on the grid
}

TEST(WindowGrid, EndsThatAreNoGridAreLeftAlone) {
  Placed p = late_scrapes(1, 4);
  const std::vector<int64_t> before = p.ends;
  EXPECT_FALSE(pp::snap_to_grid(p.ends, 1.5 * kPeriod));  // a period 50% off the window's
  EXPECT_EQ(p.ends, before);
  p.ends[10] = p.ends[9] + kMs;  // two ends in one grid step
  EXPECT_FALSE(pp::snap_to_grid(p.ends, kPeriod));
}

}  // namespace window_grid_test
