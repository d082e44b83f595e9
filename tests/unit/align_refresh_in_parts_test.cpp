// Sequences of refreshes (align_refresh_fixture.hpp) give what one refresh of everything gives:
// refreshes in parts while the job runs, retention taking windows into the estimator's state,
// earlier jobs' spans, and databases made by versions before the tables they read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "unit/align_refresh_fixture.hpp"
#include "unit/test_db.hpp"

namespace pp_test::align_refresh {
namespace {

// A job that starts with calls that repeat every 100 ms: every DCGM window holds the same mix
// wherever it lies, so the data cannot place its first stretch, nor find GPU_UTIL's grid there.
class AlignRefreshPeriodicStart : public AlignRefresh {
 protected:
  AlignRefreshPeriodicStart() { periodic_until_ns_ = 45e9; }
};

TEST_F(AlignRefresh, RefreshesInPartsGiveWhatOneRefreshGives) { expect_parts_give_what_one_gives({last_ms() - 40000}); }

// The first four stretches (45 s) cannot be placed, nor GPU_UTIL's grid found in them; the fifth
// tells the grid's period. The three stretches before it take that period; the first, four
// stretches before, keeps the median spacing of its samples (100 ms), with which the refresh at
// 45 s folded it, holding the others. The refresh before that, of three samples, fixed the
// series' median in pp_intervals from their two gaps, 101 and 99 ms as stored: 99 ms, which no
// window takes.
TEST_F(AlignRefreshPeriodicStart, RefreshesInPartsGiveWhatOneRefreshGives) {
  const int64_t folded = expect_parts_give_what_one_gives({kRefreshT0 / kMs + 350, kRefreshT0 / kMs + 45000});
  const auto stretches = db_.query("SELECT status, util_window_ms, window_ms, through_ms FROM pp_alignment ORDER BY from_ms");
  ASSERT_EQ(stretches.size(), 7u);
  EXPECT_EQ(folded, stretches[0][3].integer);
  for (size_t i = 0; i < stretches.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(stretches[i][0].text, i < 4 ? "poorly determined" : "estimated");
    EXPECT_EQ(stretches[i][1].text, i == 0 ? "100.0" : "");  // (NULL: pp_intervals' 1000/6 ms)
    EXPECT_EQ(stretches[i][2].text, "");  // the window's length was found in the first
  }
  EXPECT_NEAR(db_.scalar("SELECT interval_ms FROM pp_intervals WHERE metric = 'DCGM_FI_DEV_GPU_UTIL'").real, 1000.0 / 6,
              1e-6);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM sample_alignment WHERE util_window_ms = 100").integer, 1);
  // The align step kept the running sums of every stretch, as its later refreshes forgot the
  // lengths the stretches after the first kept (those updates dropped their sums, summed again).
  EXPECT_EQ(db_.scalar("SELECT group_concat(stretches || ':' || kept_windows, ' ') FROM "
                       "(SELECT stretches, kept_windows FROM pp_alignment_sums ORDER BY from_ms)").text,
            "1:1 2:1 3:1 4:1 5:1 6:1 7:1");
}

// A database from before stretches kept the lengths they were aligned with: upgraded, its
// stretches aligned while GPU_UTIL's period was the median spacing keep it, but for those the
// next stretch tells it and no fold took yet.
TEST_F(AlignRefreshPeriodicStart, ADatabaseFromBeforeWindowLengthsGetsThem) {
  expect_parts_give_what_one_gives({kRefreshT0 / kMs + 45000}, [&] {
    db_.exec("CREATE TEMP TABLE a AS SELECT * FROM pp_alignment; CREATE TEMP TABLE w AS SELECT * FROM pp_windows; "
             "DROP TABLE pp_alignment; DROP TABLE pp_windows");
    // As the version before made them.
    db_.exec("CREATE TABLE pp_alignment(uuid TEXT NOT NULL, from_ms INTEGER NOT NULL, through_ms INTEGER NOT NULL, "
             "offset_ns INTEGER NOT NULL, timing_ns INTEGER NOT NULL, drift_ppm REAL NOT NULL, util_phase_ns INTEGER, "
             "util_timing_ns INTEGER, samples INTEGER NOT NULL, repeats INTEGER NOT NULL, skipped INTEGER NOT NULL, "
             "moved INTEGER NOT NULL, status TEXT NOT NULL, PRIMARY KEY (uuid, from_ms))");
    db_.exec("CREATE TABLE pp_windows(uuid TEXT NOT NULL, ts_ms INTEGER NOT NULL, end_ns INTEGER NOT NULL, "
             "util_end_ns INTEGER, copy_of_ms INTEGER, util_copy INTEGER NOT NULL DEFAULT 0, "
             "PRIMARY KEY (uuid, ts_ms)) WITHOUT ROWID");
    db_.exec("INSERT INTO pp_alignment SELECT uuid, from_ms, through_ms, offset_ns, timing_ns, drift_ppm, util_phase_ns, "
             "util_timing_ns, samples, repeats, skipped, moved, status FROM temp.a; "
             "INSERT INTO pp_windows SELECT uuid, ts_ms, end_ns, util_end_ns, copy_of_ms, util_copy FROM temp.w");
  });
  EXPECT_EQ(db_.scalar("SELECT util_window_ms FROM pp_alignment ORDER BY from_ms LIMIT 1").real, 100.0);
}

// A job of 120 s whose first four stretches cannot be placed (their timing is uncertain by
// several ms), refreshed every 20 s while it runs and keeping one minute: retention takes those
// stretches' windows into the estimator's state long before the job's last stretch, and the
// estimates, intervals included, are still those of one refresh of the whole job.
class AlignRefreshLongPeriodicStart : public AlignRefresh {
 protected:
  AlignRefreshLongPeriodicStart() {
    periodic_until_ns_ = 45e9;
    job_ns_ = 120e9;
  }
};

TEST_F(AlignRefreshLongPeriodicStart, RefreshesWithRetentionGiveWhatOneRefreshGives) {
  const char* settings = "SELECT pp_config('attribution_margin_seconds', 1000000000), "
                         "pp_config('event_retention_minutes', 1)";
  db_.exec(settings);
  std::vector<std::string> samples;  // as inserted (the scrapes' lateness is drawn per insert)
  int64_t inserted = 0;
  for (int64_t cut = kRefreshT0 / kMs + 20000; cut < last_ms(); cut += 20000) {
    samples.push_back(samples_sql(inserted, cut));
    db_.exec(samples.back());
    inserted = cut;
    db_.query("SELECT * FROM pp_refresh(NULL)");
  }
  samples.push_back(samples_sql(inserted, last_ms()));
  db_.exec(samples.back());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment WHERE status = 'poorly determined'").integer, 4);
  EXPECT_GT(db_.scalar("SELECT sum(windows) FROM pp_estimator_state WHERE grouping = 'layer_type' AND shift = 0 "
                       "AND metric = 'DCGM_FI_PROF_SM_ACTIVE'").integer,
            450);  // the four stretches' 45 s, and more
  // Nor was GPU_UTIL's driver grid found there: its windows went into the state as a count,
  // left out of its rows.
  EXPECT_GT(db_.scalar("SELECT sum(off_grid_windows) FROM pp_estimator_state WHERE grouping = 'layer_type' "
                       "AND shift = 0 AND metric = 'DCGM_FI_DEV_GPU_UTIL'").integer,
            300);
  EXPECT_GT(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' "
                       "AND confidence = 'identified'").integer,
            0);
  pp_test::TestDb one;
  one.exec("SELECT pp_install_views()");
  one.exec(settings);
  one.exec(events_sql());
  for (const std::string& sql : samples) one.exec(sql);
  one.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string estimates = "SELECT layer_type, forward, metric, estimate, lower90, upper90, confidence, windows "
                                "FROM layer_type_estimates ORDER BY layer_type, forward, metric";
  const auto in_parts = db_.query(estimates), at_once = one.query(estimates);
  ASSERT_EQ(in_parts.size(), at_once.size());
  ASSERT_GT(in_parts.size(), 0u);
  for (size_t i = 0; i < in_parts.size(); ++i) {
    SCOPED_TRACE(at_once[i][0].text + " " + at_once[i][2].text);
    for (int c : {3, 4, 5}) EXPECT_NEAR(in_parts[i][c].real, at_once[i][c].real, 1e-9 * std::fabs(at_once[i][c].real));
    EXPECT_EQ(in_parts[i][6].text, at_once[i][6].text);
    EXPECT_EQ(in_parts[i][7].integer, at_once[i][7].integer);
  }
}

// A job that pauses for 80 s: eight stretches without layers lie between the stretches before
// the pause, to which the drift is fitted, and those after it. A refresh after the pause reads
// the stretches back to those (not only the last eight), as one refresh has them all.
class AlignRefreshLongPause : public AlignRefresh {
 protected:
  AlignRefreshLongPause() {
    job_ns_ = 150e9;
    pause_from_ns_ = 40e9;
    pause_ns_ = 80e9;
  }
};

TEST_F(AlignRefreshLongPause, RefreshesInPartsGiveWhatOneRefreshGives) {
  std::vector<int64_t> cuts;
  for (int64_t cut = kRefreshT0 / kMs + 20000; cut < last_ms(); cut += 20000) cuts.push_back(cut);
  expect_parts_give_what_one_gives(cuts);
  EXPECT_GE(db_.scalar("SELECT count(*) FROM pp_alignment WHERE status = 'no layers'").integer, 7);
  // The running sums hold every stretch with layers, none without.
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment_sums").integer,
            db_.scalar("SELECT count(*) FROM pp_alignment WHERE status <> 'no layers'").integer);
  EXPECT_EQ(db_.scalar("SELECT max(stretches) FROM pp_alignment_sums").integer,
            db_.scalar("SELECT count(*) FROM pp_alignment_sums").integer);
}

TEST_F(AlignRefresh, JobsTheGpuRanLongBeforeLeaveItsAlignmentAsItIs) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  db_.exec("CREATE TEMP TABLE alone AS SELECT * FROM pp_alignment; CREATE TEMP TABLE alone_state AS SELECT * FROM layer_state");
  db_.exec("DELETE FROM layer_state; DELETE FROM pp_layers; DELETE FROM pp_fold_state; DELETE FROM pp_alignment; "
           "DELETE FROM pp_windows; DELETE FROM pp_intervals; UPDATE pp_events SET folded = 0");
  // A GPU of a shared cluster runs job after job: 150 jobs of a second each, ended 10 minutes
  // before this one started (what their spans keep once retention has removed their events).
  // More jobs than a stretch has samples: had each been a column of the stretch's fit, no fit.
  std::ostringstream spans;
  spans << "INSERT INTO pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns) VALUES ";
  for (int k = 0; k < 150; ++k) {
    const int64_t first = kRefreshT0 - 600LL * 1000 * kMs - (150 - k) * 2000 * kMs;
    spans << (k ? "," : "") << "('earlier-" << k << "', '" << kUuid << "', " << first << ", " << first + 1000 * kMs
          << ", 400, " << 6 * kMs << ")";
  }
  db_.exec(spans.str());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment WHERE status = 'estimated'").integer,
            db_.scalar("SELECT count(*) FROM temp.alone WHERE status = 'estimated'").integer);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment AS a JOIN temp.alone AS b USING (uuid, from_ms) "
                       "WHERE a.through_ms = b.through_ms AND a.offset_ns = b.offset_ns AND a.timing_ns = b.timing_ns "
                       "AND a.status = b.status AND a.moved = b.moved AND a.repeats = b.repeats")
                .integer,
            db_.scalar("SELECT count(*) FROM temp.alone").integer);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment").integer, db_.scalar("SELECT count(*) FROM temp.alone").integer);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_state AS s JOIN temp.alone_state AS p USING (job_id, layer, forward, metric) "
                       "WHERE s.state = p.state")
                .integer,
            db_.scalar("SELECT count(*) FROM temp.alone_state").integer);
}

// With event_retention_minutes, the windows a refresh removes stay in the estimates through the
// estimator's state: the estimates and window counts are those before the removal, to rounding.
TEST_F(AlignRefresh, WindowsRemovedByRetentionStayInTheEstimates) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string estimates =
      "SELECT layer, forward, metric, estimate, windows FROM layer_estimates ORDER BY layer, forward, metric";
  const auto before = db_.query(estimates);
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  // Windows stored up to a minute before the fold point went, and are in the state.
  EXPECT_GT(db_.scalar("SELECT sum(windows) FROM pp_estimator_state WHERE grouping = 'layer' AND shift = 0 "
                       "AND metric = 'DCGM_FI_PROF_SM_ACTIVE'").integer, 50);
  EXPECT_LT(db_.scalar("SELECT count(*) FROM pp_windows").integer,
            db_.scalar("SELECT count(DISTINCT ts_ms) FROM pp_samples").integer + 200);
  const auto after = db_.query(estimates);
  ASSERT_EQ(after.size(), before.size());
  ASSERT_EQ(before.size(), 16u);  // three layers and the untracked time, four metrics
  for (size_t i = 0; i < before.size(); ++i) {
    SCOPED_TRACE(before[i][0].text + " " + before[i][2].text);
    EXPECT_EQ(after[i][4].integer, before[i][4].integer);
    EXPECT_NEAR(after[i][3].real, before[i][3].real, 1e-9 * std::fabs(before[i][3].real));
  }
}

// A database made by a version without the estimator's state (no pp_estimator_state table) is
// estimated from its windows as it was, and gets the table from pp_install_views.
TEST_F(AlignRefresh, ADatabaseFromBeforeTheEstimatorStateIsEstimatedFromItsWindows) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string estimates = "SELECT count(*), sum(windows), sum(estimate) FROM layer_estimates";
  const auto before = db_.query(estimates);
  db_.exec("DROP TABLE pp_estimator_state");
  const auto after = db_.query(estimates);
  EXPECT_EQ(after[0][0].integer, before[0][0].integer);
  EXPECT_EQ(after[0][1].integer, before[0][1].integer);
  EXPECT_DOUBLE_EQ(after[0][2].real, before[0][2].real);
  EXPECT_GT(db_.scalar("SELECT count(*) FROM pp_estimator_states").integer, 0);
  db_.exec("SELECT pp_install_views()");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_estimator_state").integer, 0);
}

// A database whose estimator state an earlier version kept, before windows off the driver's
// grid were left out: upgraded, its rows keep their sums, and a row that says GPU_UTIL samples
// off their grid were fitted on DCGM's windows still gives bounds only, saying why.
TEST_F(AlignRefresh, AnEstimatorStateFromBeforeOffGridCountsKeepsItsNote) {
  insert_samples(0, last_ms());
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string estimates = "SELECT metric, count(*), sum(confidence = 'identified'), sum(windows) "
                                "FROM layer_type_estimates GROUP BY metric ORDER BY metric";
  const auto before = db_.query(estimates);
  db_.exec("CREATE TEMP TABLE kept AS SELECT * FROM pp_estimator_state; DROP TABLE pp_estimator_state");
  // As the version before made it, GPU_UTIL's rows noting samples off their driver's grid.
  db_.exec("CREATE TABLE pp_estimator_state(uuid TEXT NOT NULL, system TEXT NOT NULL, metric TEXT NOT NULL, "
           "grouping TEXT NOT NULL CHECK (grouping IN ('layer', 'layer_type')), "
           "shift INTEGER NOT NULL CHECK (shift IN (-1, 0, 1)), windows INTEGER NOT NULL, "
           "concurrent_windows INTEGER NOT NULL DEFAULT 0, windows_unknown INTEGER NOT NULL DEFAULT 0, "
           "shared_gauge INTEGER NOT NULL DEFAULT 0, failed TEXT, state BLOB, "
           "PRIMARY KEY (uuid, system, metric, grouping, shift)) WITHOUT ROWID");
  db_.exec("INSERT INTO pp_estimator_state SELECT uuid, system, metric, grouping, shift, windows, concurrent_windows, "
           "metric = 'DCGM_FI_DEV_GPU_UTIL', shared_gauge, failed, state FROM temp.kept");
  // Not upgraded yet (a read-only file, say): the estimates read it as the upgraded table.
  const std::string every_estimate =
      "SELECT group_concat(job_id || layer_type || forward || metric || windows || ifnull(estimate, '-') || confidence, "
      "';') FROM (SELECT * FROM layer_type_estimates ORDER BY job_id, layer_type, forward, metric)";
  const std::string unupgraded = db_.scalar(every_estimate).text;
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_estimator_states").integer,
            db_.scalar("SELECT count(*) FROM temp.kept").integer);
  db_.query("SELECT pp_install_views()");
  EXPECT_EQ(db_.scalar(every_estimate).text, unupgraded);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pragma_table_info('pp_estimator_state') WHERE name = 'off_grid_windows'")
                .integer,
            1);
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");  // (the upgraded table is written to)
  const auto after = db_.query(estimates);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    SCOPED_TRACE(before[i][0].text);
    EXPECT_EQ(after[i][1].integer, before[i][1].integer);
    EXPECT_EQ(after[i][3].integer, before[i][3].integer);
    if (before[i][0].text != "DCGM_FI_DEV_GPU_UTIL") {
      EXPECT_EQ(after[i][2].integer, before[i][2].integer);
    }
  }
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND "
                       "confidence IS NOT 'not identified: samples whose window is not known (a driver-period metric "
                       "off its driver''s grid), in the estimator''s state an earlier version kept'").integer,
            0);
}

}  // namespace
}  // namespace pp_test::align_refresh
