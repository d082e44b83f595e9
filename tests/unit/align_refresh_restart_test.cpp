// pp_refresh's align step when dcgm-exporter restarts mid-job (align_refresh_fixture.hpp): no
// sample is stored for a few seconds, then DCGM's windows lie on a new grid, the offset stepped
// by a part of a window. The step is said as a restart, not taken into the drift, and every
// stretch after it is searched anew and placed where its windows are.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "unit/align_refresh_fixture.hpp"
#include "unit/test_db.hpp"

namespace pp_test::align_refresh {
namespace {

class AlignRefreshRestart : public AlignRefresh {
 protected:
  AlignRefreshRestart() { job_ns_ = 120e9; }

  // Scrapes every 100 ms (up to 1 ms late, truncated to the ms), each served the newest DCGM
  // window that ended 30 ms before it. DCGM's period runs kDriftPpm long; the exporter is down
  // from restart_ms for down_ms (ms after T0: nothing stored), and DCGM's windows after it end
  // phase_ms later in the period than those before. The true window end of each stored time
  // into ends.
  std::string restarted_samples_sql(int64_t restart_ms, int64_t down_ms, double phase_ms,
                                    std::map<int64_t, int64_t>& ends) const {
    const double period = 100 * kMs * (1 + kDriftPpm * 1e-6);
    std::mt19937_64 rng(5);
    std::normal_distribution<double> noise(0, 0.005);
    std::uniform_real_distribution<double> late(0, 1);
    std::ostringstream sql;
    sql << "INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES ";
    bool first = true;
    for (int64_t n = 1;; ++n) {
      const double at = 7 + static_cast<double>(n) * 100 + late(rng);  // ms after T0
      const auto ts = static_cast<int64_t>(std::floor(at)) + kRefreshT0 / kMs;
      if (ts > last_ms()) break;
      if (at > static_cast<double>(restart_ms) && at <= static_cast<double>(restart_ms + down_ms)) continue;
      const double phase = (at > static_cast<double>(restart_ms) ? phase_ms : 0) + 3;
      const auto window = static_cast<int64_t>(std::floor((at - 30 - phase) * kMs / period));
      const int64_t window_end = kRefreshT0 + std::llround(static_cast<double>(window) * period + phase * kMs);
      ends[ts] = window_end;
      std::mt19937_64 window_rng(static_cast<uint64_t>(window_end));
      const double values[] = {average(0, window_end, period) * (1 + noise(window_rng)),
                               average(1, window_end, period) * (1 + noise(window_rng))};
      const char* metrics[] = {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"};
      for (int m = 0; m < 2; ++m) {
        sql << (first ? "" : ",") << "('" << kUuid << "', '" << metrics[m] << "', " << ts << ", " << values[m] << ")";
        first = false;
      }
    }
    return sql.str();
  }

  static constexpr double kDriftPpm = 40;
};

// Restarted 45.5 s into a two-minute job, down 3 s, its windows 63 ms later in the period from
// then on: the drift stays what it was (the offset moves -40 ppm as DCGM's period runs long),
// not the step spread over the stretches about it (hundreds of ppm, each later stretch searched
// about an offset ms from its own, poorly determined or placed a period off), and every window
// is placed within 3 ms of its own.
TEST_F(AlignRefreshRestart, AStepAfterAGapIsARestartNotADrift) {
  std::map<int64_t, int64_t> ends;
  db_.exec(restarted_samples_sql(45500, 3000, 63, ends));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string warnings = db_.scalar("SELECT pp_last_warnings()").text;
  EXPECT_NE(warnings.find("samples stepped 1 time(s) after a gap in them, first at ts_ms 17000000485"), std::string::npos)
      << warnings;
  EXPECT_EQ(warnings.find("samples jumped"), std::string::npos) << warnings;
  // (The first two stretches measure no drift of their own: 40 ppm is 0.4 ms in one.)
  const auto stretches = db_.query("SELECT t_from, status, drift_ppm, timing_ms FROM sample_alignment");
  EXPECT_GE(stretches.size(), 10u);
  for (size_t i = 0; i < stretches.size(); ++i) {
    const auto& row = stretches[i];
    SCOPED_TRACE(row[0].real);
    EXPECT_EQ(row[1].text, "estimated");
    if (i >= 2) {
      EXPECT_NEAR(row[2].real, -kDriftPpm, 20);
    }
    EXPECT_LT(row[3].real, 1.0);
  }
  expect_windows_near_their_own(db_.query("SELECT ts_ms, end_ns FROM pp_windows"), ends, 3 * kMs);
  // The estimates of the job's layer types hold their truth (the job spans the restart).
  const int identified = expect_type_estimates_hold_truth();
  EXPECT_GE(identified, 5);  // (ReLU's DRAM, 1 ms of 0.6, may be left to its interval)
}

// Refreshed while the job runs, every 6.6 s (one refresh ends in the gap, the next begins after
// it), the restart is found as one refresh over everything finds it: the same stretches and
// offsets, the step from the stretches and their first stored times read back (a step of 4.5
// ms, within the follow search's reach: only the gap before it says it is one).
TEST_F(AlignRefreshRestart, RefreshesInPartsFindTheRestartAsOneRefreshDoes) {
  std::map<int64_t, int64_t> ends;
  std::string sql = restarted_samples_sql(45500, 3000, 4.5, ends);
  sql.replace(sql.find("pp_samples"), std::string("pp_samples").size(), "temp.all_samples");
  db_.exec("CREATE TEMP TABLE all_samples(uuid, metric, ts_ms, value)");
  db_.exec(sql);
  db_.exec("SELECT pp_config('attribution_margin_seconds', 1000000000)");  // the job is running
  const int64_t t0 = kRefreshT0 / kMs;
  int64_t inserted = 0;
  for (int64_t cut = t0 + 6600; cut < last_ms(); cut += 6600) {
    db_.exec("INSERT INTO pp_samples(uuid, metric, ts_ms, value) SELECT * FROM temp.all_samples WHERE ts_ms > " +
             std::to_string(inserted) +
             " AND ts_ms <= " + std::to_string(cut));
    inserted = cut;
    db_.query("SELECT * FROM pp_refresh(NULL)");
  }
  db_.exec("INSERT INTO pp_samples(uuid, metric, ts_ms, value) SELECT * FROM temp.all_samples WHERE ts_ms > " +
           std::to_string(inserted));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  db_.exec("CREATE TEMP TABLE parts AS SELECT from_ms, through_ms, offset_ns, drift_ppm, status FROM pp_alignment");
  db_.exec("DELETE FROM layer_state; DELETE FROM pp_layers; DELETE FROM pp_fold_state; DELETE FROM pp_alignment; "
           "DELETE FROM pp_windows; DELETE FROM pp_intervals; DELETE FROM pp_gpu_spans; "
           "DELETE FROM pp_estimator_state; UPDATE pp_events SET folded = 0");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_GE(db_.scalar("SELECT count(*) FROM temp.parts").integer, 10);
  for (const auto& row : db_.query(
           "SELECT a.from_ms, a.offset_ns, p.offset_ns, a.drift_ppm, p.drift_ppm, a.status, p.status FROM pp_alignment "
           "AS a FULL JOIN temp.parts AS p USING (from_ms) WHERE a.through_ms IS NOT p.through_ms OR a.offset_ns IS NOT "
           "p.offset_ns OR a.drift_ppm IS NOT p.drift_ppm OR a.status IS NOT p.status"))
    ADD_FAILURE() << "stretch from " << row[0].integer << ": one refresh " << row[1].integer << " ns, " << row[3].real
                  << " ppm, " << row[5].text << "; in parts " << row[2].integer << " ns, " << row[4].real << " ppm, "
                  << row[6].text;
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment WHERE status = 'estimated' AND abs(drift_ppm + 40) > 20 "
                       "AND from_ms > " + std::to_string(t0 + 30000)).integer, 0);
}

// The exporter's latency steps by 40 ms right where a stretch begins, with no gap: the stretch
// is searched near the offset the stretches before predict (6 ms either way), whose best point
// lies at that reach's edge, so it is searched in full and placed where its windows are (not
// estimated at the edge, 34 ms off), the step said as a jump, and the drift fitted after it
// (a step beyond that reach is no drift either).
TEST_F(AlignRefresh, AStretchWhoseOffsetLiesBeyondTheFollowSearchIsSearchedInFull) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const int64_t at = db_.scalar("SELECT from_ms FROM pp_alignment ORDER BY from_ms LIMIT 1 OFFSET 4").integer;
  db_.exec("DELETE FROM layer_state; DELETE FROM pp_layers; DELETE FROM pp_fold_state; DELETE FROM pp_alignment; "
           "DELETE FROM pp_windows; DELETE FROM pp_intervals; DELETE FROM pp_gpu_spans; "
           "DELETE FROM pp_estimator_state; UPDATE pp_events SET folded = 0");
  db_.exec("UPDATE pp_samples SET ts_ms = ts_ms + 40 WHERE ts_ms > " + std::to_string(at));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string warnings = db_.scalar("SELECT pp_last_warnings()").text;
  EXPECT_NE(warnings.find("samples jumped 1 time(s), first at ts_ms " + std::to_string(at)), std::string::npos)
      << warnings;
  // That stretch and those after it: estimated where their windows are, the drift the clocks'
  // (none here), not the step spread over the stretches about it.
  const auto rows = db_.query("SELECT from_ms, status, offset_ns / 1e6, drift_ppm FROM pp_alignment WHERE from_ms >= " +
                              std::to_string(at) + " ORDER BY from_ms");
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[0][0].integer, at);
  for (const auto& row : rows) {
    SCOPED_TRACE(row[0].integer);
    EXPECT_EQ(row[1].text, "estimated");
    EXPECT_NEAR(row[2].real, kOffsetMs + 40, 1.0);
    EXPECT_NEAR(row[3].real, 0, 20);
  }
}

}  // namespace
}  // namespace pp_test::align_refresh
