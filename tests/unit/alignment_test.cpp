// Alignment on its own (no SQLite): a synthetic GPU whose three kinds of layer take turns, with
// idle gaps, sampled by windows that end a known offset before their stored times.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "attribution/alignment.hpp"

namespace {

constexpr double kMs = 1e6;  // ns

// Layers: a (value 0.8), b (0.3), c (0.6) in turn with jittered durations and gaps (idle 0.05).
struct Gpu {
  pp::AlignmentTimeline timeline;
  std::vector<double> value_of_unknown = {0.8, 0.3, 0.6, 0.05};  // a, b, c, untracked
};

Gpu make_gpu(double seconds, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> duration(0.5 * kMs, 6 * kMs), gap(0.05 * kMs, 3 * kMs);
  Gpu g;
  double t = 0;
  uint32_t k = 0;
  while (t < seconds * 1e9) {
    const double d = duration(rng);
    g.timeline.events.push_back({static_cast<int64_t>(t), static_cast<int64_t>(t + d), k % 3, 0});
    t += d + gap(rng) + (k % 17 == 0 ? 20 * kMs : 0);
    ++k;
  }
  g.timeline.jobs.push_back({0, g.timeline.events.back().end, 3});
  g.timeline.unknowns = 4;
  return g;
}

// The true average over (end - window, end] (or the instant value with window 0).
double truth(const Gpu& g, double end, double window) {
  if (window <= 0) {
    for (const auto& e : g.timeline.events)
      if (e.start <= end && end < e.end) return g.value_of_unknown[e.unknown];
    return g.value_of_unknown[3];
  }
  double sum = 0, covered = 0;
  for (const auto& e : g.timeline.events) {
    const double w = std::min<double>(e.end, end) - std::max<double>(e.start, end - window);
    if (w > 0) sum += w * g.value_of_unknown[e.unknown], covered += w;
  }
  return (sum + (window - covered) * g.value_of_unknown[3]) / window;
}

// Samples stored every period at `offset` after the end of their window, with 0.5% noise and
// up to jitter_ms of timer jitter on the stored time.
pp::AlignmentSamples sample(const Gpu& g, double seconds, double period, double window, double offset,
                            double jitter_ms, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.005);
  std::uniform_real_distribution<double> jitter(0, jitter_ms * kMs);
  pp::AlignmentSamples s;
  s.values.resize(1);
  for (double end = period + 7.3 * kMs; end < seconds * 1e9 - period; end += period) {
    s.ts_ns.push_back(static_cast<int64_t>(std::floor((end + offset + jitter(rng)) / kMs)) * static_cast<int64_t>(kMs));
    s.values[0].push_back(truth(g, end, window) * (1 + noise(rng)));
  }
  return s;
}

TEST(Alignment, FindsTheOffsetOfStoredTimes) {
  const Gpu g = make_gpu(12, 1);
  for (double offset_ms : {0.0, 23.4, 71.9}) {
    const pp::AlignmentSamples s = sample(g, 12, 100 * kMs, 100 * kMs, offset_ms * kMs, 1.0, 2);
    const pp::OffsetEstimate e = pp::estimate_offset(g.timeline, s, 100 * kMs, 100 * kMs, {{-100 * kMs, 1000 * kMs}}, kMs);
    ASSERT_TRUE(e.found);
    // Up to 1 ms of jitter, then truncation to the ms: the stored times keep the offset on average.
    EXPECT_NEAR(e.offset_ns / kMs, offset_ms, 0.3) << offset_ms;
    EXPECT_TRUE(e.unique);
    EXPECT_GT(e.half90_ns, 0);
    EXPECT_LT(e.half90_ns, 2 * kMs);
    EXPECT_EQ(e.moved, 0);
  }
}

TEST(Alignment, MovesAWindowByAPeriodWhereItsValueSaysSo) {
  const Gpu g = make_gpu(12, 3);
  pp::AlignmentSamples s = sample(g, 12, 100 * kMs, 100 * kMs, 30 * kMs, 0, 4);
  // Scrape 40 came just after DCGM's next sample: it got the window one period later, and
  // scrape 41 got that window again (a copy, which the align step leaves out).
  const double end40 = static_cast<double>(s.ts_ns[40]) - 30 * kMs;
  s.values[0][40] = truth(g, end40 + 100 * kMs, 100 * kMs);
  s.ts_ns.erase(s.ts_ns.begin() + 41);
  s.values[0].erase(s.values[0].begin() + 41);
  const pp::OffsetEstimate e = pp::estimate_offset(g.timeline, s, 100 * kMs, 100 * kMs, {{0, 200 * kMs}}, kMs);
  ASSERT_TRUE(e.found);
  EXPECT_NEAR(e.offset_ns / kMs, 29.7, 0.1);  // window ends at x.3 ms, stored times truncated to the ms
  EXPECT_EQ(e.shift[40], -1);
  EXPECT_EQ(e.moved, 1);
}

TEST(Alignment, WindowLengthIsTheOneThatFitsBest) {
  // Scraped every second, each sample a 100 ms window: the 100 ms fit beats the 1 s one.
  const Gpu g = make_gpu(120, 5);
  const pp::AlignmentSamples s = sample(g, 120, 1000 * kMs, 100 * kMs, 12 * kMs, 0, 6);
  const auto fit = [&](double window) {
    return pp::estimate_offset(g.timeline, s, window, window, {{-window, 1000 * kMs}}, kMs);
  };
  const pp::OffsetEstimate w100 = fit(100 * kMs), w1000 = fit(1000 * kMs);
  ASSERT_TRUE(w100.found && w1000.found);
  EXPECT_GT(w100.log_likelihood, w1000.log_likelihood + 10);
  EXPECT_NEAR(w100.offset_ns / kMs, 12, 1);
}

TEST(Alignment, NothingToFitIsNotFound) {
  pp::AlignmentTimeline empty;
  empty.unknowns = 0;
  pp::AlignmentSamples s;
  s.values.resize(1);
  for (int i = 1; i < 50; ++i) {
    s.ts_ns.push_back(static_cast<int64_t>(i * 100 * kMs));
    s.values[0].push_back(0.05);
  }
  EXPECT_FALSE(pp::estimate_offset(empty, s, 100 * kMs, 100 * kMs, {{0, 200 * kMs}}, kMs).found);
}

TEST(Alignment, DriverGridPeriodAndPhase) {
  // GPU_UTIL: NVML's 1/6 s period on its own grid (phase 41 ms), read at DCGM's 100 ms sample times.
  const Gpu g = make_gpu(30, 7);
  const double period = 1000.0 / 6 * kMs, phase = 41 * kMs;
  std::vector<int64_t> dcgm_ends;
  std::vector<double> values;
  for (double end = 200 * kMs; end < 29e9; end += 100 * kMs) {
    dcgm_ends.push_back(static_cast<int64_t>(end));
    const double u = static_cast<double>(pp::driver_window_end(static_cast<int64_t>(end), period, phase));
    values.push_back(truth(g, u, period));
  }
  const pp::GridEstimate e =
      pp::estimate_driver_grid(g.timeline, dcgm_ends, values, {100 * kMs, 1000.0 / 6 * kMs, 250 * kMs, 1000 * kMs}, kMs);
  ASSERT_TRUE(e.found);
  EXPECT_NEAR(e.period_ns, period, 1);
  EXPECT_NEAR(e.phase_ns / kMs, 41, 0.2);
}

TEST(Alignment, InstantsAreTheValueOfWhatRunsThen) {
  // FB_USED read at the window ends: the likelihood peaks where the instants are.
  const Gpu g = make_gpu(12, 9);
  std::vector<int64_t> stored;
  std::vector<std::vector<double>> values(1);
  for (double t = 150 * kMs; t < 11e9; t += 100 * kMs) {
    stored.push_back(static_cast<int64_t>(t + 40 * kMs));
    values[0].push_back(truth(g, t, 0));
  }
  auto at = [&](double offset) {
    std::vector<int64_t> ends;
    for (int64_t s : stored) ends.push_back(s - static_cast<int64_t>(offset));
    return pp::window_log_likelihood(g.timeline, ends, 0, values);
  };
  EXPECT_GT(at(40 * kMs), at(45 * kMs) + 10);
  EXPECT_GT(at(40 * kMs), at(35 * kMs) + 10);
}

TEST(Alignment, DriverWindowEndIsTheNewestGridPoint) {
  EXPECT_EQ(pp::driver_window_end(1000, 300, 50), 950);
  EXPECT_EQ(pp::driver_window_end(950, 300, 50), 950);
  EXPECT_EQ(pp::driver_window_end(949, 300, 50), 650);
}

}  // namespace


TEST(Alignment, AFitOfLaterWindowsSkipsOnlyTheEventsThatEndBeforeThem) {
  // The fits of a stretch's later windows skip the events before them, bounded by the longest
  // event: the likelihood is the same as when every event is swept, and a bound shorter than
  // the events that reach into the first window would change it.
  Gpu g = make_gpu(20, 11);
  int64_t longest = 0;
  for (const auto& e : g.timeline.events) longest = std::max(longest, e.end - e.start);
  std::vector<int64_t> ends;
  std::vector<std::vector<double>> values(2);
  for (double end = 10e9 + 0.7 * kMs; end < 19e9; end += 100 * kMs) {  // the second half only
    ends.push_back(static_cast<int64_t>(end));
    values[0].push_back(truth(g, end, 100 * kMs));
    values[1].push_back(0.5 * truth(g, end, 100 * kMs) + 0.01);
  }
  const double sweeping_all = pp::window_log_likelihood(g.timeline, ends, 100 * kMs, values);
  g.timeline.longest_ns = longest;
  EXPECT_EQ(pp::window_log_likelihood(g.timeline, ends, 100 * kMs, values), sweeping_all);
  g.timeline.longest_ns = 0;  // as if every event were an instant: those reaching in are lost
  EXPECT_NE(pp::window_log_likelihood(g.timeline, ends, 100 * kMs, values), sweeping_all);
}

TEST(Alignment, MetricsFittedTogetherAreEachFittedAsAlone) {
  // Two metrics with values in the same windows share one factorised matrix; a third with a
  // window missing gets its own. Each adds what it adds when fitted alone.
  const Gpu g = make_gpu(12, 13);
  std::vector<int64_t> ends;
  std::vector<std::vector<double>> values(3);
  for (double end = 200 * kMs; end < 11e9; end += 100 * kMs) {
    ends.push_back(static_cast<int64_t>(end));
    const double v = truth(g, end, 100 * kMs);
    values[0].push_back(v * (1 + 0.01 * std::sin(end)));
    values[1].push_back(0.3 * v + 0.02 * std::cos(end));
    values[2].push_back(ends.size() == 7 ? NAN : 0.9 * v + 0.01 * std::sin(3 * end));
  }
  double alone = 0;
  for (const auto& v : values) alone += pp::window_log_likelihood(g.timeline, ends, 100 * kMs, {v});
  EXPECT_NEAR(pp::window_log_likelihood(g.timeline, ends, 100 * kMs, values), alone, 1e-9 * std::fabs(alone));
}
