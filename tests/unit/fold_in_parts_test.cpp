// A fold reads only what it needs (gpu_timeline.cpp): the spans of folded events from
// pp_gpu_spans, the unfolded events, and the folded events that reach into its windows. Folding
// a job in three refreshes, as a running job is folded, must give what one refresh over all of
// it gives, also for a layer that runs across two refreshes' windows and for a stall whose
// windows hold no event at all (the job's untracked time, from its span alone).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "unit/test_db.hpp"

namespace {

using pp_test::kNsPerMs;
constexpr int64_t kFoldT0 = 1700000000LL * 1000000000LL;
constexpr const char* kFoldUuid = "GPU-f01d0000-0000-4000-8000-000000000000";

class FoldInParts : public ::testing::Test {
 protected:
  void SetUp() override {
    db_.exec("SELECT pp_install_views()");
    db_.exec("SELECT pp_config('sample_offset_ms', 0)");
    db_.exec("UPDATE pp_metrics SET kind = 'window'");
    db_.exec("SELECT pp_config('attribution_margin_seconds', 1000000000)");  // the job is running
    // 'a' for 20 ms of each 100 ms in 0-10 s, 26-30 s and 60-80 s; 'long' from 39.05 s to 41.55 s;
    // otherwise a stall from 30 s to 60 s. (The align step wants 100 windows a stretch.)
    std::ostringstream sql;
    sql << "INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, "
           "source_file, line) VALUES ";
    int line = 0;
    auto event = [&](const char* layer, int64_t start, int64_t end) {
      ++line;
      sql << (line > 1 ? "," : "") << "('job', '" << kFoldUuid << "', '" << layer << "', 'Linear', 1, " << kFoldT0 + start << ", "
          << kFoldT0 + end << ", " << (kFoldT0 + start) / 1e9 << ", " << (kFoldT0 + end) / 1e9 << ", 'parts', " << line << ")";
    };
    for (int k = 0; k < 800; ++k)
      if (k < 100 || (k >= 260 && k < 300) || k >= 600) event("a", k * 100 * kNsPerMs + 10 * kNsPerMs, k * 100 * kNsPerMs + 30 * kNsPerMs);
    event("long", 39050 * kNsPerMs, 41550 * kNsPerMs);
    db_.exec(sql.str());
  }

  // GPU_UTIL every 100 ms, stored at the window's end, in (from_ms, to_ms] after T0.
  void insert_samples(int from_ms, int to_ms) {
    std::ostringstream sql;
    sql << "INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES ";
    for (int t = from_ms + 100; t <= to_ms; t += 100)
      sql << (t > from_ms + 100 ? "," : "") << "('" << kFoldUuid << "', 'DCGM_FI_DEV_GPU_UTIL', " << kFoldT0 / kNsPerMs + t << ", "
          << 10 + (t / 100 * 37) % 50 << ")";
    db_.exec(sql.str());
  }

  pp_test::TestDb db_;
};

TEST_F(FoldInParts, ThreeRefreshesGiveWhatOneGives) {
  insert_samples(0, 20000);
  db_.query("SELECT * FROM pp_refresh(NULL)");
  const int64_t first_fold = db_.scalar("SELECT folded_through_ms FROM pp_fold_state").integer - kFoldT0 / kNsPerMs;
  insert_samples(20000, 45000);
  db_.query("SELECT * FROM pp_refresh(NULL)");
  const int64_t second_fold = db_.scalar("SELECT folded_through_ms FROM pp_fold_state").integer - kFoldT0 / kNsPerMs;
  insert_samples(45000, 80000);
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  // The case at hand: the stall's windows are split between the second and third folds, and so
  // is 'long' (folded by the second, still running in windows of the third).
  EXPECT_LT(first_fold, 30000);
  EXPECT_GT(second_fold, 39050);
  EXPECT_LT(second_fold, 41550);
  db_.exec("CREATE TEMP TABLE parts AS SELECT * FROM layer_state");
  db_.exec("DELETE FROM layer_state; DELETE FROM pp_layers; DELETE FROM pp_fold_state; DELETE FROM pp_gpu_spans; "
           "DELETE FROM pp_alignment; DELETE FROM pp_windows; UPDATE pp_events SET folded = 0");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  // 'long' counts every window it ran in, in both.
  EXPECT_EQ(db_.scalar("SELECT pp_mean_count(state) FROM layer_state WHERE layer = 'long' AND metric = 'DCGM_FI_DEV_GPU_UTIL'")
                .integer,
            26);  // windows ending at 39.1 s ... 41.6 s
  EXPECT_EQ(db_.scalar("SELECT pp_mean_count(state) FROM temp.parts WHERE layer = 'long' AND metric = 'DCGM_FI_DEV_GPU_UTIL'")
                .integer,
            26);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_state").integer, db_.scalar("SELECT count(*) FROM temp.parts").integer);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_state AS s JOIN temp.parts AS p USING (job_id, layer, forward, metric) "
                       "WHERE pp_mean_count(s.state) = pp_mean_count(p.state) "
                       "AND abs(pp_mean_value(s.state) - pp_mean_value(p.state)) <= 1e-12 * abs(pp_mean_value(p.state))")
                .integer,
            db_.scalar("SELECT count(*) FROM layer_state").integer);
}

TEST_F(FoldInParts, TheEventsSaidToWaitAreThoseThatWait) {
  // The fold's point falls inside a block of events (a second of them), and a block among the
  // waiting ones holds an event that ends before it starts: the count the refresh warns with is
  // what pp_events says waits, whether a block is counted from its columns or decoded.
  db_.exec("INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, "
           "source_file, line) VALUES ('job', '" + std::string(kFoldUuid) + "', 'a', 'Linear', 1, " +
           std::to_string(kFoldT0 + 70050 * kNsPerMs) + ", " + std::to_string(kFoldT0 + 70040 * kNsPerMs) +
           ", 0, 0, 'parts', 9999)");
  insert_samples(0, 70550);
  db_.query("SELECT * FROM pp_refresh(NULL)");
  ASSERT_EQ(db_.scalar("SELECT count(*) FROM pp_events_blocks WHERE folded_through_ns >= first_start_ns "
                       "AND folded_through_ns < last_start_ns").integer,
            1);
  ASSERT_EQ(db_.scalar("SELECT count(*) FROM pp_events_blocks WHERE impossible > 0").integer, 1);
  const int64_t waiting =
      db_.scalar("SELECT count(*) FROM pp_events WHERE folded = 0 AND t_end_ns >= t_start_ns").integer;
  const double seconds =
      db_.scalar("SELECT (max(t_end_ns) - min(t_start_ns)) / 1e9 FROM pp_events WHERE folded = 0 AND t_end_ns >= t_start_ns")
          .real;
  EXPECT_GT(waiting, 100);
  EXPECT_NE(db_.scalar("SELECT pp_last_warnings()").text.find(std::to_string(waiting) + " events (the last " +
                                                               std::to_string(static_cast<int>(std::ceil(seconds))) +
                                                               " s) are not folded yet"),
            std::string::npos)
      << db_.scalar("SELECT pp_last_warnings()").text;
}

}  // namespace
