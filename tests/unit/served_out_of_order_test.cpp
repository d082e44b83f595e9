// served_out_of_order (src/attribution/alignment_data.hpp): stored times that read a window older
// than the one stored before them, which an exporter whose latency scatters by a period serves.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attribution/alignment_data.hpp"

namespace {

// Two metrics (the first fitted for the offset), one stored time per row.
pp::GpuSampleData rows(const std::vector<std::vector<double>>& by_row) {
  pp::GpuSampleData data;
  data.metrics = {{"DCGM_FI_PROF_SM_ACTIVE", "window"}, {"DCGM_FI_DEV_GPU_UTIL", "driver_window"}};
  data.values.assign(2, {});
  for (const auto& row : by_row)
    for (size_t m = 0; m < 2; ++m) data.values[m].push_back(row[m]);
  data.primary = {0};
  data.driver = {1};
  return data;
}

TEST(ServedOutOfOrder, AWindowReadAgainAfterANewerOneIsCounted) {
  // Windows a, b, c served as a b a c b c: the third reads a again after b, the fifth b (three
  // before) after c, the sixth c (two before) after b.
  const std::vector<double> a = {0.412, 97}, b = {0.655, 99}, c = {0.538, 98};
  const pp::GpuSampleData data = rows({a, b, a, c, b, c});
  EXPECT_EQ(pp::served_out_of_order(data, 0, 6), 3);
  // Only the stretch's own stored times are compared: from the third on, the fifth's b is not seen.
  EXPECT_EQ(pp::served_out_of_order(data, 2, 6), 1);
}

TEST(ServedOutOfOrder, ACopyOfTheWindowJustBeforeIsNoneOutOfOrder) {
  // A scrape that found no newer window stores the same one twice: in order.
  const std::vector<double> a = {0.412, 97}, b = {0.655, 99};
  EXPECT_EQ(pp::served_out_of_order(rows({a, a, b, b, a}), 0, 4), 0);
}

TEST(ServedOutOfOrder, IdleOrWholeNumberRowsCanEqualAnOlderOneByChance) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Idle windows read alike.
  EXPECT_EQ(pp::served_out_of_order(rows({{0, 0}, {0.5, 40}, {0, 0}, {0.5, 41}, {0, 0}}), 0, 5), 0);
  // A saturated counter beside GPU_UTIL's percent: 1/100, 1/99, 1/100 is no older window.
  EXPECT_EQ(pp::served_out_of_order(rows({{1, 100}, {1, 99}, {1, 100}, {1, 99}}), 0, 4), 0);
  // A row with no value fitted for the offset is not read either.
  EXPECT_EQ(pp::served_out_of_order(rows({{nan, 40.5}, {0.5, 40}, {nan, 40.5}}), 0, 3), 0);
}

}  // namespace
