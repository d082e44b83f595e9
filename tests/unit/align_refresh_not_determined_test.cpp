// A stretch the data cannot determine (align_refresh_fixture.hpp): too few windows to fit, its
// windows are placed as the idle GPU's are, on DCGM's grid.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "unit/align_refresh_fixture.hpp"
#include "unit/test_db.hpp"

namespace pp_test::align_refresh {
namespace {

// A 30 s job, then 10 s of the idle GPU, then a second job of 0.2 s, scraped every 150 ms. With
// max_sample_lag_ms at 300, the second job's stretch holds six or seven windows, too few to fit:
// not determined. Its windows are placed as the windows before them at their scrape phases were,
// on DCGM's grid, within 3 ms of their own. (Before, they took the offset the first job's
// stretches fitted to stored times put on a lattice of the period, to stored times as they are:
// every one 24-76 ms off.)
class AlignRefreshShortSecondJob : public AlignRefresh {
 protected:
  AlignRefreshShortSecondJob() {
    pause_from_ns_ = 30e9;
    pause_ns_ = 10e9;
    job_ns_ = 40.2e9;
    idle_after_job_ms_ = 5000;
  }
};

TEST_F(AlignRefreshShortSecondJob, ItsWindowsScrapedAtTwoPhasesLieOnDcgmsGrid) {
  db_.exec("UPDATE pp_events SET job_id = 'second' WHERE t_start_ns >= " + std::to_string(kRefreshT0 + 35 * 1000 * kMs));
  db_.exec("SELECT pp_config('max_sample_lag_ms', 300)");
  std::map<int64_t, int64_t> ends;
  db_.exec(scraped_samples_sql(150, 30, ends));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment WHERE status = 'not determined'").integer, 1);
  const auto windows = db_.query("SELECT w.ts_ms, w.end_ns FROM pp_windows AS w JOIN pp_alignment AS a "
                                 "ON w.uuid = a.uuid AND w.ts_ms > a.from_ms AND w.ts_ms <= a.through_ms "
                                 "WHERE a.status = 'not determined'");
  EXPECT_GE(windows.size(), 5u);
  expect_windows_near_their_own(windows, ends, 3 * kMs);
}

}  // namespace
}  // namespace pp_test::align_refresh
