// phase_thresholds (src/attribution/scrape_phases.hpp): which stored times fall at phases of
// DCGM's grid of their own (a scrape interval that is no whole number of periods), and which are
// one phase made wide by the scrapes' lateness.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "attribution/scrape_phases.hpp"

namespace scrape_phases_test {

constexpr int64_t kMs = 1000000;
constexpr double kPeriod = 100 * kMs;
constexpr int64_t kT0 = 1714557600000 * kMs + 84 * kMs;  // the scrapes' ideal ticks: their own phase

// The stored times of a stretch of `count` scrapes every interval_ms, each late by a
// half-normal amount of scale late_ms (never early), stored at its ideal tick where that is
// 1 ms or less (Prometheus' timestamp tolerance), cut to whole ms.
std::vector<int64_t> stored_times(double interval_ms, double late_ms, unsigned seed, int count = 101) {
  std::mt19937 random(seed);
  std::normal_distribution<double> late(0, late_ms);
  std::vector<int64_t> ts;
  for (int n = 0; n < count; ++n) {
    const double tick = static_cast<double>(kT0) + n * interval_ms * kMs;
    const double lateness = std::fabs(late(random));
    ts.push_back(lateness <= 1 ? static_cast<int64_t>(tick) : static_cast<int64_t>(std::floor((tick + lateness * kMs) / kMs)) * kMs);
  }
  return ts;
}

// Scraped at DCGM's period on a busy host (late by tens of ms), the stored times spread over
// half a period, a thinning tail with gaps of several ms after those on time: still one phase,
// every scrape's. Taken as two, a lattice put the tail's windows a period later, and the fit
// of the rest settled a period and some ms from the offset.
TEST(ScrapePhases, ScrapesAtThePeriodAreOnePhaseHoweverLate) {
  for (unsigned seed = 1; seed <= 40; ++seed)
    for (double interval_ms : {100.0, 200.0, 1000.0}) {
      SCOPED_TRACE(std::to_string(seed) + " " + std::to_string(interval_ms));
      EXPECT_TRUE(pp::phase_thresholds(stored_times(interval_ms, 20, seed), kPeriod).empty());
    }
}

// Scraped every 150 ms, one and a half periods: two phases 50 ms apart, however late.
TEST(ScrapePhases, ScrapesAtOneAndAHalfPeriodsAreTwoPhases) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE(seed);
    EXPECT_EQ(pp::phase_thresholds(stored_times(150, 1, seed), kPeriod).size(), 2u);
  }
}

}  // namespace scrape_phases_test
