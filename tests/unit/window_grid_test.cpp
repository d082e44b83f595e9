// snap_to_grid (src/attribution/window_grid.hpp): windows placed from stored times that carry the
// scrapes' lateness are put back on the straight grid DCGM polls on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// As Prometheus stores them on a busy host: each scrape late by a half-normal amount of scale
// `late_ms` (never early), stored at its ideal tick where that is 1 ms or less (its timestamp
// tolerance), cut to whole ms; the ends of `windows` windows on a grid `period_ppm` off the window.
Placed half_normal_late_scrapes(double late_ms, unsigned seed, int windows, double period_ppm = 0) {
  std::mt19937 random(seed);
  std::normal_distribution<double> late(0, late_ms * kMs);
  Placed p;
  for (int k = 0; k < windows; ++k) {
    const int64_t end = kPhase + k * kPeriod + static_cast<int64_t>(k * kPeriod * period_ppm * 1e-6);
    const int64_t tick = end + 20 * kMs;
    const auto lateness = static_cast<int64_t>(std::fabs(late(random)));
    const int64_t stored = (lateness <= kMs ? tick : tick + lateness) / kMs * kMs;
    p.truth.push_back(end);
    p.ends.push_back(stored - 20 * kMs);
  }
  return p;
}

// The share of ends further than `tolerance` from their true ones, about the grid's phase (the
// median difference: the phase is the offset's, whose error the alignment's timing_ns carries).
double share_off(const Placed& p, int64_t tolerance) {
  std::vector<int64_t> d;
  for (size_t i = 0; i < p.ends.size(); ++i) d.push_back(p.ends[i] - p.truth[i]);
  std::vector<int64_t> sorted = d;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const int64_t phase = sorted[sorted.size() / 2];
  size_t off = 0;
  for (const int64_t x : d) off += std::llabs(x - phase) > tolerance;
  return static_cast<double>(off) / static_cast<double>(d.size());
}

TEST(WindowGrid, ScrapesLateByUpToAFewMsLandOnTheGrid) {
  Placed p = late_scrapes(2, 1);
  ASSERT_TRUE(pp::snap_to_grid(p.ends, kPeriod));
  EXPECT_LT(scatter(p), kMs / 10);  // every window on one grid
}

// Scrapes late by up to 10 ms (a busy Prometheus host): most ends are further than the 3 ms the
// grid was once fitted to, and each is still its grid point, not left where its scrape put it.
// The grid's period is window_ns unless another stands out of the ends' scatter by three
// standard errors, which by chance it does in some 0.3-0.6% of stretches: a few seeds of fifty
// may tilt.
TEST(WindowGrid, ScrapesLateByTensOfMsLandOnTheGridToo) {
  for (const double late_ms : {10.0, 40.0}) {
    int off = 0;
    for (unsigned seed = 1; seed <= 50; ++seed) {
      Placed p = late_scrapes(late_ms, seed);
      ASSERT_GT(scatter(p), 8 * kMs);
      ASSERT_TRUE(pp::snap_to_grid(p.ends, kPeriod)) << late_ms << " seed " << seed;
      off += scatter(p) >= kMs / 10;
    }
    EXPECT_LE(off, 1) << late_ms;
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

// Scrapes late by a half-normal 10 or 20 ms over a stretch of 100 windows on a grid of the
// window's own period: the lateness is one-sided, so a line through the ends nearest it tilts
// with the ones it keeps, and the ends at a stretch's two sides would land ms off. In nearly all
// seeds the ends land within 1 ms of the true grid (a period that stands out of the scatter by
// chance, at three standard errors, tilts a few).
TEST(WindowGrid, HalfNormalLatenessTiltsNoGrid) {
  for (const double late_ms : {10.0, 20.0}) {
    int tilted = 0, failed = 0;
    constexpr int kSeeds = 200;
    for (unsigned seed = 1; seed <= kSeeds; ++seed) {
      Placed p = half_normal_late_scrapes(late_ms, seed, 100);
      if (!pp::snap_to_grid(p.ends, kPeriod)) {
        ++failed;
        continue;
      }
      tilted += share_off(p, kMs) > 0.01;  // an end left late by over 0.45 of a period may be off
    }
    EXPECT_LE(failed, kSeeds / 50) << late_ms;
    EXPECT_LE(tilted, kSeeds / 25) << late_ms;
  }
}

// A grid whose period is 1000 or 3000 ppm off the window (DCGM's clock against Prometheus',
// with the drift taken out of the stored times), under the same lateness: followed, to the
// precision the lateness leaves the period (some 50 ppm over 300 windows, 250 over 100: 0.7 and
// 1.2 ms at a stretch's two sides), where window_ns would put them 15 to 45 ms off.
TEST(WindowGrid, ARealTiltUnderHalfNormalLatenessIsFollowed) {
  for (const int windows : {300, 100})
    for (const double ppm : {1000.0, -1000.0, 3000.0, -3000.0}) {
      if (windows == 100 && std::fabs(ppm) < 3000) continue;  // 1000 ppm: 4 standard errors, missed at times
      int off = 0;
      constexpr int kSeeds = 50;
      for (unsigned seed = 1; seed <= kSeeds; ++seed) {
        Placed p = half_normal_late_scrapes(10, seed, windows, ppm);
        ASSERT_TRUE(pp::snap_to_grid(p.ends, kPeriod)) << ppm << " seed " << seed;
        off += share_off(p, (windows == 300 ? 3 : 4) * kMs) > 0.01;  // over three standard errors
      }
      EXPECT_LE(off, 1) << windows << " windows, " << ppm << " ppm";
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
  // Ends scattered by up to a period (an exporter whose latency scatters so): the second is
  // taken for the first one late, but left where it is, and the grid point of the first would
  // lie after it. The ends keep their order or are left alone.
  std::vector<int64_t> scattered;
  for (const int64_t ms : {0, 10, 188, 269, 367, 500, 697, 716, 923, 1185}) scattered.push_back(kPhase + ms * kMs);
  const std::vector<int64_t> as_given = scattered;
  if (pp::snap_to_grid(scattered, kPeriod)) {
    EXPECT_TRUE(std::is_sorted(scattered.begin(), scattered.end()));
    EXPECT_EQ(std::adjacent_find(scattered.begin(), scattered.end()), scattered.end());
  } else {
    EXPECT_EQ(scattered, as_given);
  }
}

// A search's snaps (GridSnaps) are snap_to_grid's: of ends moved as a whole from a set it snapped
// before, of ends moved otherwise, and of ends that are no grid.
TEST(WindowGrid, ASearchSnapsAsSnapToGridDoes) {
  const Placed p = late_scrapes(3, 6);
  pp::GridSnaps snaps;
  const auto expect_as_snap_to_grid = [&](std::vector<int64_t> ends, double period, const char* what) {
    std::vector<int64_t> own = ends;
    const bool on_grid = pp::snap_to_grid(own, period);
    EXPECT_EQ(snaps(ends, period), on_grid) << what;
    EXPECT_EQ(ends, own) << what;
  };
  const auto moved = [&](int64_t by) {
    std::vector<int64_t> ends = p.ends;
    for (int64_t& e : ends) e += by;
    return ends;
  };
  expect_as_snap_to_grid(p.ends, kPeriod, "as placed");
  expect_as_snap_to_grid(moved(250000), kPeriod, "moved a quarter ms");
  expect_as_snap_to_grid(moved(-3 * kMs - 17), kPeriod, "moved back 3 ms and 17 ns");
  std::vector<int64_t> one_off = moved(250000);
  one_off[150] += kPeriod / 2 - 2 * kMs;  // not moved with the others: left where it is
  expect_as_snap_to_grid(one_off, kPeriod, "one end moved on its own");
  expect_as_snap_to_grid(moved(5 * kMs), 1.5 * kPeriod, "a period 50% off the window's");
  expect_as_snap_to_grid(moved(6 * kMs), 1.5 * kPeriod, "that again, moved");
  expect_as_snap_to_grid(moved(7 * kMs), kPeriod, "the first, moved again");
}

// Ends on no grid keep their lateness: they spread over the shortest arc of the period that
// holds every end's phase, round the period's end too.
TEST(WindowGrid, EndsOnNoGridSpreadOverTheShortestArcOfTheirPhases) {
  const Placed p = late_scrapes(30, 5);  // late by up to 30 ms: an arc of nearly 30 ms
  const double spread = pp::spread_about_grid(p.ends, kPeriod);
  EXPECT_GT(spread, 28 * kMs);
  EXPECT_LE(spread, 30 * kMs);
  // Phases 95, 98, 3 and 10 ms of a 100 ms period: 15 ms apart round its end, not 93.
  const int64_t t0 = kPhase - 37250000;  // a whole number of periods
  const std::vector<int64_t> ends = {t0 + 95 * kMs, t0 + kPeriod + 98 * kMs, t0 + 3 * kPeriod + 3 * kMs,
                                     t0 + 4 * kPeriod + 10 * kMs};
  EXPECT_NEAR(pp::spread_about_grid(ends, kPeriod), 15 * kMs, 1);
}

}  // namespace window_grid_test
