// pp_refresh's align step (align_refresh_fixture.hpp): the offset between stored times and
// DCGM's windows, estimated or pinned, each window placed at the scrape phases and latencies
// exporters show, and what the warnings and pp_alignment's reasons say where it is not
// determined.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "unit/align_refresh_fixture.hpp"
#include "unit/test_db.hpp"

namespace pp_test::align_refresh {
namespace {

TEST_F(AlignRefresh, EstimatesTheOffsetAndAttributesTheAlignedWindows) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(db_.scalar("SELECT pp_last_warnings() LIKE '%stored 27 DCGM window(s) twice%'").integer, 1);
  // Every stretch estimated, within a millisecond of the true offset (stored times are about
  // 0.5 ms late on average and then truncated: the truth is kOffsetMs), give or take < 2 ms.
  for (const auto& row : db_.query("SELECT offset_ms, timing_ms, status FROM sample_alignment")) {
    EXPECT_EQ(row[2].text, "estimated");
    EXPECT_NEAR(row[0].real, kOffsetMs, 1.0);
    EXPECT_LT(row[1].real, 2.0);
  }
  // Windows stored twice are found, and counted once.
  EXPECT_EQ(db_.scalar("SELECT sum(repeats) FROM pp_alignment").integer, 27);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_windows WHERE copy_of_ms IS NOT NULL").integer, 27);
  // The window length and GPU_UTIL's driver period come from the data.
  EXPECT_EQ(db_.scalar("SELECT min(window_ms) = 100 AND max(window_ms) = 100 FROM sample_alignment").integer, 1);
  EXPECT_NEAR(db_.scalar("SELECT max(util_window_ms) FROM sample_alignment").real, 1000.0 / 6, 1e-6);
  // The estimator: every layer type identified within 5% on SM and DRAM, and FB_USED (an instant).
  const auto rows = db_.query(
      "SELECT layer_type, metric, estimate, lower90, upper90, confidence FROM layer_type_estimates "
      "WHERE layer_type <> '(untracked)'");
  int identified = 0, covered = 0;
  for (const auto& r : rows) {
    int layer = 0;
    while (std::string(kLayers[layer].type) != r[0].text) ++layer;
    const std::string metric = r[1].text;
    const int v = metric == "DCGM_FI_PROF_SM_ACTIVE" ? 0 : metric == "DCGM_FI_PROF_DRAM_ACTIVE" ? 1
                  : metric == "DCGM_FI_DEV_GPU_UTIL" ? 2 : 3;
    const double truth = value(layer, v);
    SCOPED_TRACE(r[0].text + " " + metric);
    covered += r[3].real <= truth && truth <= r[4].real;
    EXPECT_LE(r[3].real, truth * 1.005);  // and a miss is by a little
    EXPECT_GE(r[4].real, truth * 0.995);
    if (r[5].text == "identified") {
      ++identified;
      EXPECT_NEAR(r[2].real, truth, 0.05 * truth);
    }
  }
  EXPECT_GE(identified, 6);
  // 90% intervals: one in ten may miss the truth; of these 12, at most 3 (4 or more miss by
  // chance 2.6% of the time; FB_USED's, an instant's, miss by a few hundredths of a percent).
  EXPECT_GE(covered, static_cast<int>(rows.size()) - 3) << covered << " of " << rows.size();
}

// An exporter restarted mid-job serves its windows 40 ms later from then on: the warning says
// where the offset jumped to against what the stretches before predict.
TEST_F(AlignRefresh, AnOffsetThatJumpsIsSaidWithWhatWasPredicted) {
  insert_samples(0, last_ms());
  db_.exec("UPDATE pp_samples SET ts_ms = ts_ms + 40 WHERE ts_ms > " + std::to_string(kRefreshT0 / kMs + 35000));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string warnings = db_.scalar("SELECT pp_last_warnings()").text;
  EXPECT_NE(warnings.find("samples jumped"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("where the stretches before it predict 37."), std::string::npos) << warnings;
}

// The exporter's latency steps by 5 ms part way through a stretch: its quarters' own offsets lie
// on either side of the stretch's, some further from it than the quarters' first search reaches
// (3 steps of 0.5 ms). Their peaks at that edge fit decisively better than the stretch's offset
// does, so the search goes further and finds them: the stretch is poorly determined, its timing
// at least half the step, whichever side its offset took.
TEST_F(AlignRefresh, AnOffsetThatStepsByAFewMsWithinAStretchIsPoorlyDetermined) {
  insert_samples(0, last_ms());
  const int64_t step_at = kRefreshT0 / kMs + 35000;
  db_.exec("UPDATE pp_samples SET ts_ms = ts_ms + 5 WHERE ts_ms > " + std::to_string(step_at));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const auto rows = db_.query("SELECT status, timing_ns / 1e6, reason FROM pp_alignment WHERE from_ms < " +
                              std::to_string(step_at) + " AND through_ms >= " + std::to_string(step_at));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].text, "poorly determined");
  EXPECT_GE(rows[0][1].real, 2.5);
  EXPECT_NE(rows[0][2].text.find("or its quarters disagree"), std::string::npos) << rows[0][2].text;
}

// A stretch whose samples fit one period and a few ms from where the stretches around it put
// theirs (an exporter whose latency scatters by tens of ms can look so): no wrap, which is a
// period exactly, and seldom a restart, whose latency lands anywhere: poorly determined, its
// timing as wide as the jump, and the stretches after it estimated again. (A stretch that holds
// a few stored times from before the step back and the rest from after has windows on no
// straight grid: poorly determined for that, its timing as wide as they spread.)
TEST_F(AlignRefresh, AStretchFittedAPeriodAndAFewMsOffIsPoorlyDetermined) {
  insert_samples(0, last_ms());
  const int64_t from = kRefreshT0 / kMs + 30000, to = kRefreshT0 / kMs + 42000;
  db_.exec("UPDATE pp_samples SET ts_ms = ts_ms + 106 WHERE ts_ms > " + std::to_string(from) + " AND ts_ms <= " +
           std::to_string(to));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const auto rows =
      db_.query("SELECT from_ms, offset_ns / 1e6, timing_ns / 1e6, status, reason FROM pp_alignment ORDER BY from_ms");
  int flagged = 0;
  for (const auto& row : rows) {
    if (row[3].text != "poorly determined") continue;
    SCOPED_TRACE(std::to_string(row[0].real) + ": " + row[4].text);
    if (row[4].text.find("from where the stretches before predict, about 1 window(s) and a few ms") ==
        std::string::npos) {
      EXPECT_NE(row[4].text.find("its windows lie on no straight grid of the period"), std::string::npos);
      EXPECT_GE(row[2].real, 6.0);  // the step's 106 ms less a period
      continue;
    }
    ++flagged;
    EXPECT_GT(row[2].real, 90.0);
  }
  EXPECT_GE(flagged, 1);
  EXPECT_EQ(rows.back()[3].text, "estimated");
  EXPECT_NEAR(rows.back()[1].real, kOffsetMs, 1.0);
}

// Prometheus scraping every 150 ms, one and a half DCGM periods: successive scrapes fall 50 ms
// apart in DCGM's grid, so the offset from a stored time to its window's end alternates between
// two values 50 ms apart. Every window is placed on its own (the two phases' offsets found), the
// stretches are estimated, and the estimates are right.
TEST_F(AlignRefresh, ScrapesAtOneAndAHalfPeriodsPlaceEveryWindow) {
  std::map<int64_t, int64_t> ends;
  db_.exec(scraped_samples_sql(150, 30, ends));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  int64_t placed = 0, windows = 0;
  for (const auto& row : db_.query("SELECT w.ts_ms, w.end_ns FROM pp_windows AS w")) {
    ++windows;
    placed += std::llabs(row[1].integer - ends.at(row[0].integer)) <= 3 * kMs;
  }
  EXPECT_GT(windows, 400);
  EXPECT_GE(placed, windows - windows / 50) << placed << " of " << windows << " windows placed within 3 ms";
  for (const auto& row : db_.query("SELECT t_from, status, timing_ms, skipped FROM sample_alignment")) {
    SCOPED_TRACE(row[0].real);
    EXPECT_EQ(row[1].text, "estimated");
    EXPECT_LT(row[2].real, 2.0);
    EXPECT_EQ(row[3].integer, 0);  // a gap of two windows is what every other scrape leaves
  }
  const int identified = expect_type_estimates_hold_truth();
  EXPECT_GE(identified, 4);
}

// Scraping every 110 or 120 ms, Prometheus passes over one DCGM window in 11 or in 6 (gaps of
// two windows among gaps of one): none of them is a skip. A scrape that Prometheus missed leaves
// one window unread, and is counted in the stretch that holds it.
TEST_F(AlignRefresh, WindowsTheScrapeIntervalPassesOverAreNoSkips) {
  for (double interval_ms : {110.0, 120.0}) {
    SCOPED_TRACE(interval_ms);
    db_.exec("DELETE FROM pp_samples; DELETE FROM pp_alignment; DELETE FROM pp_windows; DELETE FROM pp_fold_state; "
             "DELETE FROM layer_state; DELETE FROM pp_estimator_state; DELETE FROM pp_intervals");
    std::map<int64_t, int64_t> ends;
    db_.exec(scraped_samples_sql(interval_ms, 30, ends));
    // One scrape missed, in the middle of the job.
    const int64_t missed = db_.scalar("SELECT min(ts_ms) FROM pp_samples WHERE ts_ms > " +
                                      std::to_string(kRefreshT0 / kMs + 25000)).integer;
    db_.exec("DELETE FROM pp_samples WHERE ts_ms = " + std::to_string(missed));
    db_.query("SELECT * FROM pp_refresh(NULL, 1)");
    int64_t stretches = 0;
    for (const auto& row : db_.query("SELECT from_ms, through_ms, skipped, repeats, status FROM pp_alignment")) {
      SCOPED_TRACE(row[0].integer);
      ++stretches;
      EXPECT_EQ(row[4].text, "estimated")
          << db_.scalar("SELECT reason FROM pp_alignment WHERE from_ms = " + std::to_string(row[0].integer)).text;
      EXPECT_EQ(row[3].integer, 0);
      const bool holds_missed = row[0].integer < missed && missed < row[1].integer;
      EXPECT_EQ(row[2].integer, holds_missed ? 1 : 0);
    }
    EXPECT_GE(stretches, 4);
  }
}

// FB_USED, the memory in use at DCGM's poll, stored by scrapes every 150 ms (at two phases of
// DCGM's grid): the align step places each instant on the grid it fits to the PROF windows, to
// a fraction of a ms, so a sample belongs to what ran within that of its instant. Spread over
// +-1 ms, a sample was credited to the neighbours of a 1 ms ReLU, which biased the gauge's
// estimates by several stderr: identified rows whose 90% intervals missed the truth.
TEST_F(AlignRefresh, AnInstantGaugeScrapedAtTwoPhasesHoldsTheTruthWhereIdentified) {
  std::map<int64_t, int64_t> ends;
  db_.exec(scraped_samples_sql(150, 30, ends, 0, 0, 0, true));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  int identified = 0;
  for (const auto& r : db_.query("SELECT layer_type, estimate, lower90, upper90, confidence FROM layer_type_estimates "
                                 "WHERE layer_type <> '(untracked)' AND metric = 'DCGM_FI_DEV_FB_USED'")) {
    int layer = 0;
    while (std::string(kLayers[layer].type) != r[0].text) ++layer;
    const double truth = value(layer, 3);
    SCOPED_TRACE(r[0].text + ": " + std::to_string(r[1].real) + " [" + std::to_string(r[2].real) + ", " +
                 std::to_string(r[3].real) + "]");
    if (r[4].text != "identified") continue;
    ++identified;
    EXPECT_LE(r[2].real, truth);
    EXPECT_GE(r[3].real, truth);
  }
  EXPECT_EQ(identified, 3);
}

// An exporter whose latency scatters by 100 ms (30 ms + 100 ms x N(0, 1), clipped at 0): each
// scrape reads any of about three windows, some older than the one stored before them, and
// many the values cannot place stay a period or two from their own, blending layers. No
// stretch where that leaves a tenth of the windows off by more than 3 ms is "estimated" with a
// timing of a few ms: it is poorly determined, its timing half a window at least, and no
// identified estimate misses the truth.
TEST_F(AlignRefresh, AnExporterWhoseLatencyScattersByAPeriodLeavesTheTimingPoorlyDetermined) {
  std::map<int64_t, int64_t> ends;
  db_.exec(scraped_samples_sql(100, 30, ends, 100));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const auto windows = db_.query("SELECT ts_ms, end_ns FROM pp_windows ORDER BY ts_ms");
  int misplaced_stretches = 0;
  // Each stretch says why it is not estimated; an estimated one says nothing.
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment WHERE (status = 'estimated') = (reason IS NOT NULL)").integer,
            0);
  for (const auto& row : db_.query("SELECT from_ms, through_ms, status, timing_ns / 1e6, reason FROM pp_alignment")) {
    int64_t placed = 0, in_stretch = 0;
    for (const auto& w : windows)
      if (w[0].integer > row[0].integer && w[0].integer <= row[1].integer) {
        ++in_stretch;
        placed += std::llabs(w[1].integer - ends.at(w[0].integer)) <= 3 * kMs;
      }
    if (in_stretch == 0 || placed >= in_stretch - in_stretch / 10) continue;
    ++misplaced_stretches;
    SCOPED_TRACE(std::to_string(row[0].integer) + ": " + std::to_string(placed) + " of " + std::to_string(in_stretch) +
                 " windows placed within 3 ms");
    EXPECT_NE(row[2].text, "estimated");
    EXPECT_GE(row[3].real, 50.0);
    EXPECT_NE(row[4].text, "");
  }
  const std::string out_of_order =
      db_.scalar("SELECT reason FROM pp_alignment WHERE reason LIKE '%read an older window than the one before%' LIMIT 1").text;
  EXPECT_NE(out_of_order.find("stored times read an older window than the one before (more than 1 in 40"),
            std::string::npos)
      << out_of_order;
  EXPECT_GE(misplaced_stretches, 3);  // what the case is about
  for (const auto& r : db_.query("SELECT layer_type, metric, lower90, upper90 FROM layer_type_estimates WHERE "
                                 "layer_type <> '(untracked)' AND confidence = 'identified'")) {
    int layer = 0;
    while (std::string(kLayers[layer].type) != r[0].text) ++layer;
    const double truth = value(layer, r[1].text == "DCGM_FI_PROF_SM_ACTIVE" ? 0 : 1);
    SCOPED_TRACE(r[0].text + " " + r[1].text);
    EXPECT_LE(r[2].real, truth);
    EXPECT_GE(r[3].real, truth);
  }
}

// Prometheus scraping at DCGM's period on a busy host, each scrape late by a half-normal 20 ms
// (the exporter's latency such that hardly any scrape is late enough to read the next window):
// the stored times' phases spread over half a period, a tail that thins out with gaps of
// several ms in it. That is one phase (every scrape's), not two: taken as two, the tail's
// windows were put a period later and the rest fitted a period and some ms off, "estimated"
// with a timing of 0.7 ms. Every stretch is estimated with its windows in place, or says it
// is not.
class AlignRefreshLongJob : public AlignRefresh {
 protected:
  AlignRefreshLongJob() { job_ns_ = 240e9; }
  // After one refresh of the samples whose true window ends are `ends`: all but two stretches
  // are estimated, and each estimated one has nine in ten of its windows within 3 ms of their own.
  void expect_estimated_stretches_in_place(const std::map<int64_t, int64_t>& ends) {
    db_.query("SELECT * FROM pp_refresh(NULL, 1)");
    const auto windows = db_.query("SELECT ts_ms, end_ns FROM pp_windows ORDER BY ts_ms");
    int estimated = 0, stretches = 0;
    for (const auto& row : db_.query("SELECT from_ms, through_ms, status, timing_ns / 1e6 FROM pp_alignment")) {
      ++stretches;
      int64_t placed = 0, in_stretch = 0;
      for (const auto& w : windows)
        if (w[0].integer > row[0].integer && w[0].integer <= row[1].integer) {
          ++in_stretch;
          placed += std::llabs(w[1].integer - ends.at(w[0].integer)) <= 3 * kMs;
        }
      SCOPED_TRACE(std::to_string(row[0].integer) + ": " + row[2].text + ", timing " + std::to_string(row[3].real) +
                   " ms, " + std::to_string(placed) + " of " + std::to_string(in_stretch) + " windows within 3 ms");
      if (row[2].text != "estimated") continue;
      ++estimated;
      EXPECT_GE(placed, in_stretch - in_stretch / 10);
    }
    EXPECT_GE(estimated, stretches - 2);
  }
};

TEST_F(AlignRefreshLongJob, ScrapesLateByTensOfMsAtThePeriodAreOnePhase) {
  std::map<int64_t, int64_t> ends;
  db_.exec(scraped_samples_sql(100, 63, ends, 0, 20));
  expect_estimated_stretches_in_place(ends);
}

// DCGM's period a per mille long (100.1 ms), Prometheus scraping every 100 ms: the offset falls
// by a ms a second, 10 ms a stretch, and the windows the stored times place lie on a grid of the
// scrapes' period, not DCGM's; its tilt says nothing. Until stretches establish the drift, each
// measures its own from its quarters' offsets, which walk by 2.5 ms each: taken out, the
// stretch is estimated with its windows in place (before, none of the 22 stretches was).
TEST_F(AlignRefreshLongJob, ADcgmPeriodAPerMilleLongIsMeasuredFromTheQuarters) {
  std::map<int64_t, int64_t> ends;
  db_.exec(scraped_samples_sql(100, 30, ends, 0, 0, 1000));
  expect_estimated_stretches_in_place(ends);
}

// Scrapes late by a half-normal 30 ms, the exporter's latency such that a tenth of them read
// the next window: windows moved by a period where their values say so can land two in one
// step of DCGM's grid, and then the windows lie on no straight grid. They keep their scrapes'
// lateness, tens of ms: such a stretch is poorly determined, its timing as wide as its
// windows spread, and says why.
TEST_F(AlignRefreshLongJob, WindowsOnNoStraightGridLeaveTheStretchPoorlyDetermined) {
  std::map<int64_t, int64_t> ends;
  db_.exec(scraped_samples_sql(100, 55, ends, 0, 30));
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const auto windows = db_.query("SELECT ts_ms, end_ns FROM pp_windows WHERE copy_of_ms IS NULL ORDER BY ts_ms");
  int off_grid = 0;
  for (const auto& row : db_.query("SELECT from_ms, through_ms, status, timing_ns, reason FROM pp_alignment")) {
    std::vector<double> from_first;  // each window's end after the first window's, ns
    for (const auto& w : windows)
      if (w[0].integer > row[0].integer && w[0].integer <= row[1].integer)
        from_first.push_back(static_cast<double>(w[1].integer - windows.front()[1].integer));
    if (from_first.size() < 8) continue;
    // On a grid, the gaps of one step are the grid's period to the ns (but where an end far
    // from it was left where it was); off it, each carries two scrapes' lateness.
    std::vector<double> steps;
    for (size_t i = 1; i < from_first.size(); ++i)
      if (std::fabs(from_first[i] - from_first[i - 1] - 100 * kMs) < 50 * kMs) steps.push_back(from_first[i] - from_first[i - 1]);
    std::vector<double> sorted = steps;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
    const double period = sorted[sorted.size() / 2];
    const auto on_period = std::count_if(steps.begin(), steps.end(), [&](double g) { return std::fabs(g - period) <= 0.01 * kMs; });
    if (2 * static_cast<size_t>(on_period) >= steps.size()) continue;
    ++off_grid;
    // How far they spread: the shortest arc of the period holding every end's phase.
    std::vector<double> phases;
    for (const double e : from_first) phases.push_back(e - 100 * kMs * std::floor(e / (100 * kMs)));
    std::sort(phases.begin(), phases.end());
    double widest = phases.front() + 100 * kMs - phases.back();
    for (size_t i = 1; i < phases.size(); ++i) widest = std::max(widest, phases[i] - phases[i - 1]);
    const double spread = 100 * kMs - widest;
    SCOPED_TRACE(std::to_string(row[0].integer) + ": " + row[2].text + ", spread " + std::to_string(spread / kMs) + " ms");
    EXPECT_EQ(row[2].text, "poorly determined");
    EXPECT_GE(static_cast<double>(row[3].integer), spread - 1);
    EXPECT_NE(row[4].text.find("its windows lie on no straight grid of the period"), std::string::npos) << row[4].text;
  }
  EXPECT_GE(off_grid, 1);  // what the case is about
}

TEST_F(AlignRefresh, APinnedOffsetIsUsedAsItIs) {
  insert_samples(0, last_ms());
  EXPECT_EQ(db_.scalar("SELECT pp_config('sample_offset_ms', 37.9)").text, "37.9");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM sample_alignment WHERE status <> 'setting' OR offset_ms <> 37.9").integer, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_windows WHERE copy_of_ms IS NOT NULL").integer, 0);
}

TEST_F(AlignRefresh, SettingErrorsSayWhatIsWanted) {
  EXPECT_EQ(db_.error("SELECT pp_config('sample_offset_ms', 'soon')"),
            "pp_config: setting 'sample_offset_ms' needs 'auto' or a number of milliseconds between -60000 and "
            "600000, got 'soon'");
  EXPECT_EQ(db_.error("SELECT pp_config('sample_offset_ms', 'nan')"),
            "pp_config: setting 'sample_offset_ms' needs 'auto' or a number of milliseconds between -60000 and "
            "600000, got 'nan'");
  EXPECT_EQ(db_.scalar("SELECT pp_config('sample_offset_ms', 'AUTO')").text, "auto");
}

TEST_F(AlignRefresh, WithoutAnyLayerNearItATimingCannotBeDetermined) {
  // Samples from an hour later: no event near them, nothing to attribute, said so.
  db_.exec("DELETE FROM pp_events WHERE t_start_ns > " + std::to_string(kRefreshT0 + 2 * 1000000000LL));
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_GT(db_.scalar("SELECT count(*) FROM sample_alignment WHERE status = 'no layers'").integer, 0);
}

}  // namespace
}  // namespace pp_test::align_refresh
