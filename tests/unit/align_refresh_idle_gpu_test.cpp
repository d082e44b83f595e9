// The idle GPU's windows after a job and between jobs (align_refresh_fixture.hpp): the job's end
// ends its last stretch, and the idle windows lie on DCGM's grid.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "unit/align_refresh_fixture.hpp"
#include "unit/test_db.hpp"

namespace pp_test::align_refresh {
namespace {

// The job's calls end 62.5 s in, and dcgm-exporter goes on serving the idle GPU's windows for 7 s
// more. The job's last stretch ends a few windows after its end (max_sample_lag_ms, then two
// windows stored), so its last seconds are aligned with the windows before them; the idle
// GPU's windows make a stretch without layers. (Before, a stretch of the job's last 60 ms and
// the idle windows after them was placed 106 ms off, poorly determined, and warned about.)
class AlignRefreshIdleAfterTheJob : public AlignRefresh {
 protected:
  AlignRefreshIdleAfterTheJob() { job_ns_ = 62.5e9; }
};

TEST_F(AlignRefreshIdleAfterTheJob, TheJobsEndEndsItsLastStretch) {
  insert_samples(0, last_ms() + 7000);
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string warnings = db_.scalar("SELECT pp_last_warnings()").text;
  EXPECT_EQ(warnings.find("poorly determined"), std::string::npos) << warnings;
  const std::string end = std::to_string(last_ms());
  const auto last = db_.query("SELECT status, offset_ns / 1e6, timing_ns / 1e6, through_ms - " + end +
                              " FROM pp_alignment WHERE from_ms < " + end + " AND through_ms >= " + end);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0][0].text, "estimated");
  EXPECT_NEAR(last[0][1].real, kOffsetMs, 1.0);
  EXPECT_LT(last[0][2].real, 2.0);
  EXPECT_GT(last[0][3].integer, 1000 + 100);
  EXPECT_LT(last[0][3].integer, 1000 + 400);
  for (const auto& row : db_.query("SELECT status FROM pp_alignment WHERE from_ms >= " + end))
    EXPECT_EQ(row[0].text, "no layers");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment WHERE from_ms >= " + end).integer, 1);
}

// Scraped every 150 ms, the idle GPU's windows after the job fall at two phases of DCGM's grid,
// 50 ms apart, as the job's did. Their stretch has no layers to place them by: each is placed
// as the windows before it at its phase were, on DCGM's grid, within 3 ms of its own. (Before,
// they took the offset the job's last stretch fitted to its stored times put on a lattice of
// the period, to stored times as they are: every one 24-76 ms off.)
TEST_F(AlignRefreshIdleAfterTheJob, IdleWindowsScrapedAtTwoPhasesLieOnDcgmsGrid) {
  std::map<int64_t, int64_t> ends;
  idle_after_job_ms_ = 7000;
  db_.exec(scraped_samples_sql(150, 30, ends));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const auto idle = db_.query("SELECT w.ts_ms, w.end_ns FROM pp_windows AS w JOIN pp_alignment AS a "
                              "ON w.uuid = a.uuid AND w.ts_ms > a.from_ms AND w.ts_ms <= a.through_ms "
                              "WHERE a.status = 'no layers'");
  EXPECT_GT(idle.size(), 30u);
  expect_windows_near_their_own(idle, ends, 3 * kMs);
}

// Two jobs on the GPU, the second starting 10 s after the first's calls end, scraped every 150
// ms: the idle GPU's windows between them are placed on DCGM's grid as those after a job are,
// and so is every window of the second job.
class AlignRefreshTwoJobs : public AlignRefresh {
 protected:
  AlignRefreshTwoJobs() {
    pause_from_ns_ = 30e9;
    pause_ns_ = 10e9;
  }
};

TEST_F(AlignRefreshTwoJobs, IdleWindowsBetweenJobsScrapedAtTwoPhasesLieOnDcgmsGrid) {
  db_.exec("UPDATE pp_events SET job_id = 'second' WHERE t_start_ns >= " + std::to_string(kRefreshT0 + 35 * 1000 * kMs));
  std::map<int64_t, int64_t> ends;
  db_.exec(scraped_samples_sql(150, 30, ends));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string between = "w.ts_ms > " + std::to_string(kRefreshT0 / kMs + 31000) + " AND w.ts_ms < " +
                              std::to_string(kRefreshT0 / kMs + 39000);
  EXPECT_EQ(db_.scalar("SELECT count(DISTINCT a.from_ms) FROM pp_windows AS w JOIN pp_alignment AS a "
                       "ON w.uuid = a.uuid AND w.ts_ms > a.from_ms AND w.ts_ms <= a.through_ms "
                       "WHERE a.status = 'no layers' AND " + between).integer,
            1);
  int64_t windows = 0;
  for (const auto& w : db_.query("SELECT w.ts_ms, w.end_ns FROM pp_windows AS w WHERE w.ts_ms > " +
                                 std::to_string(kRefreshT0 / kMs + 31000))) {
    ++windows;
    EXPECT_LE(std::llabs(w[1].integer - ends.at(w[0].integer)), 3 * kMs)
        << "stored at " << w[0].integer << ": " << (w[1].integer - ends.at(w[0].integer)) / 1e6 << " ms off";
  }
  EXPECT_GT(windows, 200);
}

}  // namespace
}  // namespace pp_test::align_refresh
