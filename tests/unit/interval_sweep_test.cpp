// The interval sweep on its own: a hand-made GPU timeline in, (event, sample, weight) pairs and
// untracked time out, with no SQLite involved.
#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

#include "attribution/interval_sweep.hpp"

namespace {

constexpr int64_t kNsPerMs = 1000000;  // ns

// Two layers of one job ("A" group 0, "B" group 1, untracked group 2) and one 100 ms series.
pp::GpuTimeline one_job() {
  pp::GpuTimeline gpu;
  gpu.series.push_back({"DCGM_FI_PROF_SM_ACTIVE", pp::TimelineSeries::kWindow, 100 * kNsPerMs,
                        {{100, 100 * kNsPerMs, 0.5, false}, {200, 200 * kNsPerMs, 0.7, false}}});
  gpu.jobs.push_back({"job", 10 * kNsPerMs, 130 * kNsPerMs, 2});
  gpu.groups = {{0, "A", 1, "Linear"}, {0, "B", 1, "ReLU"}, {0, "(untracked)", 0, "(untracked)"}};
  gpu.events = {{10 * kNsPerMs, 60 * kNsPerMs, 1, 0, 0}, {90 * kNsPerMs, 130 * kNsPerMs, 2, 1, 0}};
  return gpu;
}

// The series' windows: a 20 ms one (40, 60], then a 200 ms one (-50, 150] (the length its
// stretch was aligned with).
pp::GpuTimeline windows_of_two_lengths(pp::GpuTimeline gpu) {
  gpu.series[0].window_ns = 20 * kNsPerMs;
  gpu.series[0].other_windows_ns = {200 * kNsPerMs};
  gpu.series[0].samples = {{60, 60 * kNsPerMs, 0.5, false}, {150, 150 * kNsPerMs, 0.7, false}};
  gpu.series[0].samples[1].window = 1;
  return gpu;
}

// (event id or -1, group, sample ts_ms) -> weight_ns
using Pairs = std::map<std::tuple<int64_t, uint32_t, int64_t>, int64_t>;

Pairs sweep_all(const pp::GpuTimeline& gpu, size_t first_series = 0, size_t stride = 1) {
  Pairs pairs;
  pp::sweep_overlaps(
      gpu,
      [&](int64_t event, uint32_t group, size_t, const pp::TimelineSample& sample, int64_t weight) {
        const int64_t id = event < 0 ? -1 : gpu.events[static_cast<size_t>(event)].id;
        pairs[{id, group, sample.ts_ms}] += weight;
      },
      first_series, stride);
  return pairs;
}

TEST(IntervalSweep, OverlapsAndUntrackedTimeOfOneJob) {
  // Window (0, 100] ms: A runs 10-60 (50 ms), B 90-100 (10 ms); the job's span covers 10-100,
  // so 30 ms are untracked. Window (100, 200]: B 100-130; the span ends at 130, nothing untracked.
  const Pairs expected = {{{1, 0, 100}, 50 * kNsPerMs}, {{2, 1, 100}, 10 * kNsPerMs}, {{-1, 2, 100}, 30 * kNsPerMs},
                          {{2, 1, 200}, 30 * kNsPerMs}};
  EXPECT_EQ(sweep_all(one_job()), expected);
}

TEST(IntervalSweep, AWindowLongerThanTheOneBeforeItReachesWhatThatOneMissed) {
  // A 20 ms window (40, 60] and then a 200 ms one (-50, 150] (the length its stretch was aligned
  // with): X ran 20-30 ms, before the first window, and is in the second.
  pp::GpuTimeline gpu = windows_of_two_lengths(one_job());
  gpu.events.insert(gpu.events.begin() + 1, {20 * kNsPerMs, 30 * kNsPerMs, 3, 0, 0});
  // The span 10-130 ms: of its 120 ms in the second window, 100 ms are A, X and B.
  const Pairs expected = {{{1, 0, 60}, 20 * kNsPerMs},  {{1, 0, 150}, 50 * kNsPerMs}, {{3, 0, 150}, 10 * kNsPerMs},
                          {{2, 1, 150}, 40 * kNsPerMs}, {{-1, 2, 150}, 20 * kNsPerMs}};
  EXPECT_EQ(sweep_all(gpu), expected);
}

TEST(IntervalSweep, EventsThatOnlyTouchAWindowAreNotPairs) {
  pp::GpuTimeline gpu = one_job();
  gpu.events = {{100 * kNsPerMs, 150 * kNsPerMs, 7, 0, 0}};  // starts exactly where window (0, 100] ends
  gpu.jobs[0] = {"job", 100 * kNsPerMs, 150 * kNsPerMs, 2};
  const Pairs expected = {{{7, 0, 200}, 50 * kNsPerMs}};
  EXPECT_EQ(sweep_all(gpu), expected);
}

TEST(IntervalSweep, TwoJobsEachGetTheirOwnUntrackedTime) {
  pp::GpuTimeline gpu = one_job();
  gpu.jobs.push_back({"other", 150 * kNsPerMs, 190 * kNsPerMs, 4});
  gpu.groups.push_back({1, "C", 1, "Linear"});
  gpu.groups.push_back({1, "(untracked)", 0, "(untracked)"});
  gpu.events.push_back({160 * kNsPerMs, 170 * kNsPerMs, 3, 3, 1});
  const Pairs pairs = sweep_all(gpu);
  EXPECT_EQ(pairs.at({3, 3, 200}), 10 * kNsPerMs);
  EXPECT_EQ(pairs.at({-1, 4, 200}), 30 * kNsPerMs);  // 150-190 less C's 10 ms
  EXPECT_EQ(pairs.count({-1, 2, 200}), 0u);     // the first job's span ended at 130
}

TEST(IntervalSweep, OnASharedGpuAnotherJobsLayerIsNotUntrackedTime) {
  // Time-slicing: "other" runs C at 70-85 ms, inside the first job's span (10-130) between A and
  // B. Window (0, 100]: the first job's span holds 90 ms, A 50 and B 10 of it, C 15: 15 ms
  // untracked, not 30. The other job's span (70-85) is all C: nothing untracked there.
  pp::GpuTimeline gpu = one_job();
  gpu.jobs.push_back({"other", 70 * kNsPerMs, 85 * kNsPerMs, 4});
  gpu.groups.push_back({1, "C", 1, "Linear"});
  gpu.groups.push_back({1, "(untracked)", 0, "(untracked)"});
  gpu.events.insert(gpu.events.begin() + 1, {70 * kNsPerMs, 85 * kNsPerMs, 3, 3, 1});
  const Pairs pairs = sweep_all(gpu);
  EXPECT_EQ(pairs.at({3, 3, 100}), 15 * kNsPerMs);
  EXPECT_EQ(pairs.at({-1, 2, 100}), 15 * kNsPerMs);
  EXPECT_EQ(pairs.count({-1, 4, 100}), 0u);
  EXPECT_EQ(pairs.at({1, 0, 100}), 50 * kNsPerMs);  // the layers themselves are as before
  EXPECT_EQ(pairs.at({2, 1, 200}), 30 * kNsPerMs);
}

TEST(IntervalSweep, OnASharedGpuALongerWindowReachesTheOtherJobsEarlierLayer) {
  // The windows of AWindowLongerThanTheOneBeforeItReachesWhatThatOneMissed, (40, 60] then
  // (-50, 150], on a GPU that "other" shares: it runs C at 20-35 ms, before the first window.
  // The second window holds both jobs: the first job's span (10-130) has A 50, B 40 and C's
  // 15 ms, so 15 ms untracked; the other job's span (20-35) is C (and A): nothing untracked.
  pp::GpuTimeline gpu = windows_of_two_lengths(one_job());
  gpu.jobs.push_back({"other", 20 * kNsPerMs, 35 * kNsPerMs, 4});
  gpu.groups.push_back({1, "C", 1, "Linear"});
  gpu.groups.push_back({1, "(untracked)", 0, "(untracked)"});
  gpu.events.insert(gpu.events.begin() + 1, {20 * kNsPerMs, 35 * kNsPerMs, 3, 3, 1});
  const Pairs expected = {{{1, 0, 60}, 20 * kNsPerMs},  {{1, 0, 150}, 50 * kNsPerMs}, {{3, 3, 150}, 15 * kNsPerMs},
                          {{2, 1, 150}, 40 * kNsPerMs}, {{-1, 2, 150}, 15 * kNsPerMs}};
  EXPECT_EQ(sweep_all(gpu), expected);
}

TEST(IntervalSweep, WindowsEndWhereTheAlignmentSaysNotAtTheStoredTime) {
  // Stored at 130 and 230 ms, the windows ended 30 ms earlier: (0, 100] and (100, 200].
  pp::GpuTimeline gpu = one_job();
  gpu.series[0].samples = {{130, 100 * kNsPerMs, 0.5, false}, {230, 200 * kNsPerMs, 0.7, false}};
  const Pairs expected = {{{1, 0, 130}, 50 * kNsPerMs}, {{2, 1, 130}, 10 * kNsPerMs}, {{-1, 2, 130}, 30 * kNsPerMs},
                          {{2, 1, 230}, 30 * kNsPerMs}};
  EXPECT_EQ(sweep_all(gpu), expected);
}

TEST(IntervalSweep, AnInstantBelongsToWhatRunsThenWithTheWeightOfAWindow) {
  // FB_USED read at 30 ms (A runs), 75 ms (between A and B: untracked), 90.1 ms (B began at 90:
  // of the +-0.2 ms the instant may be, 0.1 ms before B is untracked) and 140 ms (after the span).
  pp::GpuTimeline gpu = one_job();
  gpu.series[0] = {"DCGM_FI_DEV_FB_USED", pp::TimelineSeries::kInstant, 100 * kNsPerMs,
                   {{31, 30 * kNsPerMs, 900, false}, {76, 75 * kNsPerMs, 880, false}, {91, 90 * kNsPerMs + kNsPerMs / 10, 890, false},
                    {141, 140 * kNsPerMs, 870, false}}};
  const Pairs expected = {{{1, 0, 31}, 100 * kNsPerMs}, {{-1, 2, 76}, 100 * kNsPerMs}, {{2, 1, 91}, 75 * kNsPerMs},
                          {{-1, 2, 91}, 25 * kNsPerMs}};
  EXPECT_EQ(sweep_all(gpu), expected);
}

TEST(IntervalSweep, SeriesSplitAcrossWorkersGiveTheSamePairs) {
  pp::GpuTimeline gpu = one_job();
  gpu.series.push_back({"DCGM_FI_PROF_DRAM_ACTIVE", pp::TimelineSeries::kWindow, 100 * kNsPerMs,
                        {{100, 100 * kNsPerMs, 0.1, false}, {200, 200 * kNsPerMs, 0.2, true}}});
  gpu.series.push_back({"DCGM_FI_DEV_GPU_UTIL", pp::TimelineSeries::kDriverWindow, 1000 * kNsPerMs,
                        {{1000, 1000 * kNsPerMs, 50, false}}});
  Pairs split = sweep_all(gpu, 0, 2);
  for (const auto& [key, weight] : sweep_all(gpu, 1, 2)) split[key] += weight;
  EXPECT_EQ(split, sweep_all(gpu));
}

}  // namespace
