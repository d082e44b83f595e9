// Window mixes on their own: one GPU whose two jobs' calls (one of them longer than a window)
// overlap sample windows, the share of each window every unknown ran, and the same shares kept
// up to date while a search moves the windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "attribution/window_mixes.hpp"

namespace window_mixes_test {

constexpr int64_t kMs = 1000000;  // ns

// Job 0's short layers (unknowns 0 and 1) take turns for 3 s while its long call (unknown 2,
// 1.2 s) runs beside them; job 1's calls (unknown 3) come every 37 ms from 1 s to 2.5 s. Each
// job's untracked time is unknowns 4 and 5.
pp::AlignmentTimeline two_jobs() {
  pp::AlignmentTimeline t;
  for (int64_t s = 0; s < 3000 * kMs; s += 3 * kMs) t.events.push_back({s, s + 2 * kMs, static_cast<uint32_t>((s / (3 * kMs)) % 2), 0});
  t.events.push_back({500 * kMs, 1700 * kMs, 2, 0});
  for (int64_t s = 1000 * kMs; s < 2500 * kMs; s += 37 * kMs) t.events.push_back({s + 1, s + 5 * kMs + 1, 3, 1});
  std::sort(t.events.begin(), t.events.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  t.longest_ns = 0;
  for (const auto& e : t.events) t.longest_ns = std::max(t.longest_ns, e.end - e.start);
  t.jobs = {{0, 3000 * kMs, 4}, {1000 * kMs, 2500 * kMs, 5}};
  t.unknowns = 6;
  return t;
}

// The shares of one window, event by event.
std::vector<double> shares(const pp::AlignmentTimeline& t, double end, double window) {
  std::vector<double> f(t.unknowns + 1, 0.0), covered(t.jobs.size(), 0.0);
  for (const auto& e : t.events) {
    const double w = std::min<double>(e.end, end) - std::max<double>(e.start, end - window);
    if (w > 0) f[e.unknown] += w / window, covered[e.job] += w;
  }
  for (size_t j = 0; j < t.jobs.size(); ++j) {
    const double span = std::min<double>(end, t.jobs[j].last) - std::max<double>(end - window, t.jobs[j].first);
    if (span > covered[j]) f[t.jobs[j].untracked] += (span - covered[j]) / window;
  }
  double sum = 0;
  for (uint32_t u = 0; u < t.unknowns; ++u) sum += f[u];
  f[t.unknowns] = std::max(0.0, 1 - sum);
  return f;
}

std::vector<int64_t> every_100ms(int64_t first, int64_t last) {
  std::vector<int64_t> ends;
  for (int64_t end = first; end < last; end += 100 * kMs) ends.push_back(end);
  return ends;
}

TEST(WindowMixes, EachWindowHoldsTheShareEachUnknownRanInIt) {
  // At 100 ms and at a sixth of a second, whose edges are taken to the events' whole ns
  // (166,666,667 ns).
  const pp::AlignmentTimeline t = two_jobs();
  for (double window : {100.0 * kMs, 1e9 / 6}) {
    const std::vector<int64_t> ends = every_100ms(200 * kMs + 300000, 2900 * kMs);
    const Eigen::MatrixXd A = pp::window_fractions(t, ends, window);
    ASSERT_EQ(A.rows(), static_cast<Eigen::Index>(ends.size()));
    for (size_t i = 0; i < ends.size(); ++i) {
      const std::vector<double> f = shares(t, static_cast<double>(ends[i]), std::round(window));
      for (size_t u = 0; u < f.size(); ++u)
        EXPECT_NEAR(A(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(u)), f[u], 1e-12)
            << "window " << i << ", unknown " << u << ", length " << window;
    }
  }
}

TEST(WindowMixes, WindowsMovedALittleGiveTheSweepsRowsToTheBit) {
  // A search's fits: the windows move by fractions of a millisecond, jump a period, come back,
  // lose a window, repeat one (a copy); each fit's rows are the sweep's exactly.
  const pp::AlignmentTimeline t = two_jobs();
  const double window = 100.0 * kMs;
  const std::vector<int64_t> grid = every_100ms(150 * kMs, 2950 * kMs);
  pp::WindowMixes mix(t);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> jitter(-40000, 40000);
  int64_t offset = 0;
  for (int fit = 0; fit < 200; ++fit) {
    offset += fit % 50 == 49 ? 100 * kMs : fit % 50 == 0 && fit > 0 ? -100 * kMs : 50000;
    std::vector<int64_t> ends;
    for (int64_t g : grid) ends.push_back(g + offset + jitter(rng));
    if (fit % 7 == 3) ends.pop_back();
    if (fit % 11 == 5) ends[9] = ends[8];
    std::sort(ends.begin(), ends.end());
    ASSERT_TRUE(mix(ends, window) == pp::window_fractions(t, ends, window)) << "fit " << fit;
    // A driver period of a sixth of a second, moved alike.
    ASSERT_TRUE(mix(ends, 1e9 / 6) == pp::window_fractions(t, ends, 1e9 / 6)) << "fit " << fit;
  }
}

TEST(WindowMixes, DriverWindowsOnAPhaseGridGiveTheSweepsRowsToTheBit) {
  // The driver grid's search: each DCGM end's driver window (a third of a second or a second,
  // so several ends share one) at phases a few ms apart, where some windows jump a period as
  // the phase passes their end and the rest move a little; then the ends of another stretch
  // of as many windows, none of them near.
  const pp::AlignmentTimeline t = two_jobs();
  const std::vector<int64_t> dcgm = every_100ms(1100 * kMs + 300000, 2950 * kMs);
  for (double period : {1e9 / 3, 1e9}) {
    pp::WindowMixes mix(t);
    for (int64_t phase = 0; phase < 40 * kMs; phase += 3 * kMs + 17) {
      std::vector<int64_t> ends;
      for (int64_t g : dcgm) {
        const double k = std::floor((static_cast<double>(g) - static_cast<double>(phase)) / period);
        ends.push_back(std::llround(static_cast<double>(phase) + k * period));
      }
      ASSERT_TRUE(std::adjacent_find(ends.begin(), ends.end()) != ends.end());
      ASSERT_TRUE(mix(ends, period) == pp::window_fractions(t, ends, period)) << period << " " << phase;
    }
    std::vector<int64_t> later = dcgm;
    for (int64_t& e : later) e -= 900 * kMs;
    ASSERT_TRUE(mix(later, period) == pp::window_fractions(t, later, period)) << period;
  }
}

TEST(WindowMixes, EndsOutOfOrderGiveTheSweepsRows) {
  // A stretch's tail moved back by a period, its first window now before the last one of the
  // head: the sweep's rows, whatever fits came before.
  const pp::AlignmentTimeline t = two_jobs();
  pp::WindowMixes mix(t);
  std::vector<int64_t> ends = every_100ms(1000 * kMs, 2000 * kMs);
  for (size_t i = 5; i < ends.size(); ++i) ends[i] -= 103 * kMs;
  for (int64_t step : {0, 50000, 100000}) {
    std::vector<int64_t> moved = ends;
    for (int64_t& e : moved) e += step;
    ASSERT_FALSE(std::is_sorted(moved.begin(), moved.end()));
    ASSERT_TRUE(mix(moved, 100.0 * kMs) == pp::window_fractions(t, moved, 100.0 * kMs)) << step;
    std::sort(moved.begin(), moved.end());
    ASSERT_TRUE(mix(moved, 100.0 * kMs) == pp::window_fractions(t, moved, 100.0 * kMs)) << step;
  }
}

TEST(WindowMixes, ManyLongCallsGiveEachWindowsSharesToo) {
  // A model whose calls are longer than a moved edge looks back (kLongCallNs), a hundred of
  // them: each fit reads every event again, and the shares are still each window's.
  pp::AlignmentTimeline t = two_jobs();
  for (int64_t s = 0; s < 100; ++s) t.events.push_back({s * 29 * kMs, s * 29 * kMs + 25 * kMs, 2, 0});
  std::sort(t.events.begin(), t.events.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  for (const auto& e : t.events) t.longest_ns = std::max(t.longest_ns, e.end - e.start);
  ASSERT_GT(100u, pp::WindowMixes::kMaxLongCalls);
  pp::WindowMixes mix(t);
  for (int64_t offset : {0, 50000, 100000}) {
    const std::vector<int64_t> ends = every_100ms(300 * kMs + offset, 2900 * kMs);
    const Eigen::MatrixXd A = mix(ends, 100.0 * kMs);
    for (size_t i = 0; i < ends.size(); ++i) {
      const std::vector<double> f = shares(t, static_cast<double>(ends[i]), 100.0 * kMs);
      for (size_t u = 0; u < f.size(); ++u)
        EXPECT_NEAR(A(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(u)), f[u], 1e-12) << i << " " << u;
    }
  }
}

}  // namespace window_mixes_test
