// How much each stretch of pp_alignment weighs in a job's timing shift (place_timing): the share
// of the job's span its windows cover, computed exactly, and the stretches of a job found alike
// however the table's rows are ordered.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "attribution/timing_shift.hpp"

namespace {

constexpr int64_t kNsPerMs = 1000000;

// One 100 ms window series with one sample ending at end_ns, in one job spanning [first, last].
pp::GpuTimeline one_sample_in_job(int64_t end_ns, int64_t first, int64_t last) {
  pp::GpuTimeline gpu;
  pp::TimelineSeries series;
  series.metric = "DCGM_FI_PROF_SM_ACTIVE";
  series.window_ns = 100.0 * kNsPerMs;
  series.samples.push_back({end_ns / kNsPerMs + 40, end_ns, 0.5, false});
  gpu.series.push_back(series);
  pp::TimelineJob job;
  job.job_id = "job";
  job.first = first;
  job.last = last;
  gpu.jobs.push_back(job);
  return gpu;
}

// The shift place_timing gives the sample.
int64_t shift_ns(pp::GpuTimeline gpu, std::vector<pp::StretchTiming> stretches) {
  pp::KnownStretches known;
  known.stretches = std::move(stretches);
  pp::place_timing(gpu, known, {false}, 2 * kNsPerMs, 0, true, pp::kEveryStretch);
  return gpu.series[0].samples[0].shift_ns;
}

pp::StretchTiming stretch(int64_t first_end_ns, int64_t last_end_ns, double timing_ns) {
  return {first_end_ns / kNsPerMs + 40, first_end_ns, last_end_ns, timing_ns, timing_ns, std::nullopt, std::nullopt};
}

// Three 10 s stretches at epoch ns whose timings combine to 794416.496 ns over the job's span:
// with the ends taken as doubles (multiples of 256 ns there), the weights were a few hundred ns
// off and the combined timing 794416.501, rounded to 794417.
TEST(TimingWeights, AStretchsWeightIsItsOverlapToTheNanosecond) {
  const std::vector<pp::StretchTiming> stretches = {
      stretch(1796065289129862055, 1796065299155395258, 250598),
      stretch(1796065299192856378, 1796065309216846912, 1200479),
      stretch(1796065309165033083, 1796065319212945683, 1765488)};
  const int64_t first = 1796065293715800762, last = 1796065317131966102;
  EXPECT_EQ(shift_ns(one_sample_in_job(first + 10000 * kNsPerMs, first, last), stretches), 794416);
}

// Rows edited by hand so that a stretch's last end comes before an earlier stretch's: the job's
// stretches begin with the first, in from_ms order, whose windows end after the job begins (a
// bisection over ends out of order began at the fourth here, which left the job no stretch and
// its window the GPU's timing, 0.215 ms, not its stretch's 1 ms).
TEST(TimingWeights, EndsOutOfOrderGiveTheStretchesAScanFinds) {
  const int64_t t0 = 1796065288000000000;
  const int64_t s = 10000 * kNsPerMs;
  const std::vector<pp::StretchTiming> stretches = {
      stretch(t0, t0 + 3 * s, 1000000), stretch(t0 + s, t0 + s + s / 2, 200000),
      stretch(t0 + 2 * s, t0 + 2 * s + s / 2, 200000), stretch(t0 + 3 * s, t0 + 4 * s, 200000),
      stretch(t0 + 4 * s, t0 + 5 * s, 200000)};
  const int64_t first = t0 + 2 * s + 3 * s / 4, last = t0 + 2 * s + 7 * s / 8;
  // Only the first stretch's windows cover the span (the second and third end before it, the
  // fourth begins after it, its windows reaching 0.1 s back).
  EXPECT_EQ(shift_ns(one_sample_in_job(first + s / 16, first, last), stretches), 1000000);
}

}  // namespace
