// The retention's estimator state (src/attribution/estimator_systems.cpp, a sums-only grouping):
// each system's rows kept only as sums, the metrics sampled over the same windows sharing each
// window's weights, give the state that the same rows kept one by one give (what pp_estimates
// builds from stored windows), on timelines made here: one job on one GPU, 1 s windows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "attribution/estimator_systems.hpp"
#include "attribution/job_sharing.hpp"
#include "stats/least_squares_state.hpp"

namespace {

using pp::GpuTimeline;
using pp::GroupingSystems;
using pp::LeastSquaresState;
using pp::SystemKey;

constexpr int64_t kSecond = 1000000000;

SystemKey key(const std::string& metric) { return {"job", metric}; }

// `metrics` window series of `windows` 1 s windows ending at 1, 2, ... s, values from the seed.
GpuTimeline timeline(int metrics, int windows, uint64_t seed) {
  GpuTimeline g;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(0, 100);
  for (int m = 0; m < metrics; ++m) {
    pp::TimelineSeries s;
    s.metric = "metric" + std::to_string(m);
    s.window_ns = 1e9;
    for (int k = 1; k <= windows; ++k) s.samples.push_back({k * 1000, k * kSecond, value(rng), false});
    g.series.push_back(s);
  }
  pp::TimelineJob job;
  job.job_id = "job";
  job.first = 0;
  job.last = (windows + 1) * kSecond;
  g.jobs.push_back(job);
  g.groups.push_back({0, "(untracked)", 0, "(untracked)"});
  return g;
}

uint32_t layer(GpuTimeline& g, const std::string& name) {
  g.groups.push_back({0, name, 1, "Linear"});
  return static_cast<uint32_t>(g.groups.size() - 1);
}

void call(GpuTimeline& g, uint32_t group, int64_t start, int64_t end) {
  g.events.push_back({start, end, static_cast<int64_t>(g.events.size()), group, 0});
}

// The system per metric: kept as sums, and kept row by row then summed (the reference).
struct BothWays {
  GroupingSystems sums, rows;
  explicit BothWays(const GpuTimeline& g) {
    const pp::JobSharing alone;
    sums.sums_only = true;
    pp::add_timeline_systems(g, 0, 0, {}, alone, {&sums});
    pp::add_timeline_systems(g, 0, 0, {}, alone, {&rows});
  }
  LeastSquaresState reference(const std::string& metric) {
    const auto& known = rows.unknowns["job"];
    return rows.systems.at(key(metric)).state([&](const std::string& unknown) {
      const auto info = known.find(unknown);
      return info == known.end() ? std::string() : info->second.layer_type;
    });
  }
};

// The same sums, unknown by unknown (the rows' state lists them by name): to the bit where
// tolerance is 0.
void expect_same_sums(const LeastSquaresState& kept, const LeastSquaresState& rows, double tolerance) {
  ASSERT_EQ(kept.unknowns().size(), rows.unknowns().size());
  EXPECT_EQ(kept.rows(), rows.rows());
  EXPECT_EQ(kept.max_abs_value(), rows.max_abs_value());
  EXPECT_NEAR(kept.value_squares(), rows.value_squares(), tolerance * rows.value_squares());
  for (size_t i = 0; i < rows.unknowns().size(); ++i) {
    const size_t ki = kept.find(rows.unknowns()[i].name);
    ASSERT_LT(ki, kept.unknowns().size()) << rows.unknowns()[i].name;
    EXPECT_EQ(kept.unknowns()[ki].label, rows.unknowns()[i].label);
    EXPECT_EQ(kept.unknowns()[ki].rows, rows.unknowns()[i].rows);
    EXPECT_NEAR(kept.cross_value(ki), rows.cross_value(i), tolerance * std::fabs(rows.cross_value(i)));
    for (size_t j = 0; j < rows.unknowns().size(); ++j)
      EXPECT_NEAR(kept.cross(ki, kept.find(rows.unknowns()[j].name)), rows.cross(i, j),
                  tolerance * std::fabs(rows.cross(i, j)));
  }
}

// Three metrics over the same windows, the job's span ending inside the last one and starting
// inside the first (the rest of the window: '(rest)'): each metric's state is its rows', to the
// bit, the layers first and '(rest)' last.
TEST(EstimatorSums, EveryMetricGetsTheStateItsRowsGive) {
  GpuTimeline g = timeline(3, 3, 1);
  g.jobs[0].first = kSecond / 2;
  g.jobs[0].last = kSecond * 27 / 10;
  const uint32_t a = layer(g, "a"), b = layer(g, "b");
  call(g, a, kSecond / 2, kSecond * 8 / 10);
  call(g, b, kSecond * 12 / 10, kSecond * 19 / 10);
  call(g, a, kSecond * 21 / 10, kSecond * 25 / 10);
  BothWays both(g);
  for (int m = 0; m < 3; ++m) {
    const std::string metric = "metric" + std::to_string(m);
    const LeastSquaresState kept = both.sums.states.at(key(metric));
    SCOPED_TRACE(metric);
    expect_same_sums(kept, both.reference(metric), 0);
    EXPECT_EQ(kept.rows(), 3);
    ASSERT_EQ(kept.unknowns().size(), 4u);
    EXPECT_EQ(kept.unknowns().back().name, "(rest)");
  }
}

// The same when a second metric's missing value splits the first's windows over two sums: its
// layers in the order its windows met them, '(rest)' last (the sums to rounding).
TEST(EstimatorSums, AMetricSplitOverTwoSumsListsItsUnknownsInItsOwnOrder) {
  GpuTimeline g = timeline(2, 3, 5);
  g.jobs[0].first = kSecond / 2;
  const uint32_t a = layer(g, "a"), b = layer(g, "b");
  call(g, a, kSecond / 2, kSecond * 8 / 10);
  call(g, b, kSecond * 12 / 10, kSecond * 19 / 10);
  g.series[1].samples[1].null = true;
  BothWays both(g);
  const LeastSquaresState kept = both.sums.states.at(key("metric0"));
  expect_same_sums(kept, both.reference("metric0"), 1e-12);
  std::vector<std::string> order;
  for (const auto& u : kept.unknowns()) order.push_back(u.name);
  EXPECT_EQ(order, (std::vector<std::string>{"a|1", "(untracked)|0", "b|1", "(rest)"}));
}

// A metric without a value in some windows: its state and the others' are those of their own
// rows (to rounding: the windows all have are summed apart from the others).
TEST(EstimatorSums, AMetricMissingFromSomeWindowsKeepsItsOwnRows) {
  GpuTimeline g = timeline(2, 200, 2);
  const uint32_t a = layer(g, "a"), b = layer(g, "b");
  for (int k = 0; k < 200; ++k) {
    call(g, a, k * kSecond + kSecond / 10, k * kSecond + kSecond * 4 / 10);
    call(g, b, k * kSecond + kSecond / 2, k * kSecond + kSecond * 7 / 10 + k * 1000000);
  }
  for (int k = 0; k < 200; k += 3) g.series[1].samples[static_cast<size_t>(k)].null = true;
  BothWays both(g);
  for (const std::string metric : {"metric0", "metric1"}) {
    const LeastSquaresState kept = both.sums.states.at(key(metric));
    SCOPED_TRACE(metric);
    EXPECT_EQ(kept.rows(), metric == "metric0" ? 200 : 133);
    expect_same_sums(kept, both.reference(metric), 1e-12);
  }
}

// An instant whose calls there are shorter than a ns of its window's weight: a row of '(rest)'
// alone, as the rows give it.
TEST(EstimatorSums, AWindowWithoutWeightIsARowOfTheRest) {
  GpuTimeline g = timeline(1, 1, 3);
  g.series[0].kind = pp::TimelineSeries::kInstant;
  g.series[0].window_ns = 1000;
  g.jobs[0].first = kSecond - 50;
  g.jobs[0].last = kSecond + 50;
  call(g, layer(g, "a"), kSecond - 50, kSecond + 50);
  BothWays both(g);
  const LeastSquaresState kept = both.sums.states.at(key("metric0"));
  EXPECT_EQ(kept.rows(), 1);
  expect_same_sums(kept, both.reference("metric0"), 0);
}

// More than 1000 layers in a metric's windows fail its system, also when a second metric's
// missing values split them over two sums of 550 each.
TEST(EstimatorSums, TooManyLayersFailAMetricOverAllItsWindows) {
  GpuTimeline g = timeline(2, 1100, 4);
  for (int k = 0; k < 1100; ++k)
    call(g, layer(g, "layer" + std::to_string(k)), k * kSecond + kSecond / 10, k * kSecond + kSecond * 9 / 10);
  for (size_t k = 0; k < 550; ++k) g.series[1].samples[k].null = true;
  BothWays both(g);
  const std::string why = "more than 1000 layers and directions in one system (layer_type_estimates has fewer)";
  EXPECT_EQ(both.sums.notes[key("metric0")].failed, why);
  EXPECT_EQ(both.rows.notes[key("metric0")].failed, why);
  EXPECT_EQ(both.sums.states.count(key("metric0")), 0u);
  // The second metric met 550 layers: its system stands, as its rows' (to rounding: its windows
  // after the first metric failed are summed apart).
  EXPECT_EQ(both.sums.notes[key("metric1")].failed, "");
  expect_same_sums(both.sums.states.at(key("metric1")), both.reference("metric1"), 1e-12);
}

// A metric that fails in its first window takes no other note of it: its GPU_UTIL-like series'
// windows off their driver's grid later are counted only where a system stands.
TEST(EstimatorSums, AMetricFailingInItsFirstWindowHasNoOtherNote) {
  GpuTimeline g = timeline(2, 2, 6);
  for (auto& series : g.series) {
    series.kind = pp::TimelineSeries::kDriverWindow;
    series.samples[0].driver_grid = true;
  }
  for (int k = 0; k < 1001; ++k) call(g, layer(g, "layer" + std::to_string(k)), k * 500000, k * 500000 + 400000);
  BothWays both(g);
  for (const std::string metric : {"metric0", "metric1"}) {
    SCOPED_TRACE(metric);
    const pp::SystemNotes &sums = both.sums.notes[key(metric)], &rows = both.rows.notes[key(metric)];
    EXPECT_NE(sums.failed, "");
    EXPECT_EQ(sums.failed, rows.failed);
    EXPECT_EQ(sums.off_grid_windows, 0);
    EXPECT_EQ(rows.off_grid_windows, 0);
    EXPECT_EQ(both.sums.states.count(key(metric)), 0u);
  }
}

// A GPU_UTIL-like series (the driver's windows) some of whose samples lie off their driver's
// grid, over the same windows as a DCGM metric: those windows are left out of its system alone
// and counted, and its state is that of the series without them; the DCGM metric keeps all.
TEST(EstimatorSums, WindowsOffTheDriversGridAreLeftOutAndCounted) {
  GpuTimeline g = timeline(2, 40, 7);
  const uint32_t a = layer(g, "a"), b = layer(g, "b");
  for (int k = 0; k < 40; ++k) {
    call(g, a, k * kSecond + kSecond / 10, k * kSecond + kSecond * 4 / 10 + k * 2000000);  // (ends before b starts)
    call(g, b, k * kSecond + kSecond / 2, k * kSecond + kSecond * 9 / 10);
  }
  pp::TimelineSeries& util = g.series[1];
  util.kind = pp::TimelineSeries::kDriverWindow;
  for (size_t k = 0; k < util.samples.size(); ++k) util.samples[k].driver_grid = k >= 10;  // the first 10 off
  GpuTimeline placed = g;
  placed.series[1].samples.erase(placed.series[1].samples.begin(), placed.series[1].samples.begin() + 10);
  BothWays both(g), only_placed(placed);
  for (GroupingSystems* grouping : {&both.sums, &both.rows}) {
    EXPECT_EQ(grouping->notes[key("metric1")].off_grid_windows, 10);
    EXPECT_EQ(grouping->notes[key("metric0")].off_grid_windows, 0);
  }
  EXPECT_EQ(both.sums.states.at(key("metric0")).rows(), 40);
  const LeastSquaresState kept = both.sums.states.at(key("metric1"));
  EXPECT_EQ(kept.rows(), 30);
  expect_same_sums(kept, both.reference("metric1"), 1e-12);
  expect_same_sums(kept, only_placed.reference("metric1"), 1e-12);
  // At a timing shift the windows are counted no more (pp_estimates counts shift 0's).
  GroupingSystems shifted;
  pp::add_timeline_systems(g, 0, 1, {}, pp::JobSharing{}, {&shifted});
  EXPECT_EQ(shifted.notes[key("metric1")].off_grid_windows, 0);
  EXPECT_EQ(shifted.systems.at(key("metric1")).rows(), both.rows.systems.at(key("metric1")).rows());
}

}  // namespace
