// Window lengths (pp_intervals.interval_ms) past a day are refused where read
// (tests/sql/timing_errors.sql): the refresh itself never writes one.
#include <gtest/gtest.h>

#include <string>

#include "unit/test_db.hpp"

// A series whose samples lie days apart tells no window: it gets no median interval (one it
// would refuse at the next read), and waits as a series with too few samples does, while the
// GPU's other series, sampled every second, get theirs and fold.
TEST(WindowLengths, SamplesMoreThanADayApartTellNoWindow) {
  pp_test::TestDb db;
  db.exec("SELECT pp_install_views()");
  const std::string uuid = "GPU-da750000-0000-4000-8000-000000000000";
  const int64_t t0 = 1700000000000;
  std::string sql = "INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES ";
  for (int i = 0; i < 4; ++i) {
    sql += (i ? "," : "") + std::string("('") + uuid + "', 'DCGM_FI_PROF_SM_ACTIVE', " +
           std::to_string(t0 + i * 2 * 86400000LL) + ", 0.5)";
    sql += ",('" + uuid + "', 'DCGM_FI_PROF_DRAM_ACTIVE', " + std::to_string(t0 + i * 1000) + ", 0.5)";
  }
  db.exec(sql);
  db.exec("SELECT * FROM pp_refresh(NULL, 1)");
  const auto intervals = db.query("SELECT metric, interval_ms FROM pp_intervals ORDER BY metric");
  ASSERT_EQ(intervals.size(), 1u);
  EXPECT_EQ(intervals[0][0].text, "DCGM_FI_PROF_DRAM_ACTIVE");
  EXPECT_EQ(intervals[0][1].real, 1000.0);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_fractions('" + uuid + "', 0)").integer, 0);  // (no events)
}
