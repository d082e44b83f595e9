// pp_refresh on samples stored the way Prometheus stores dcgm-exporter's: at scrape time, some
// tens of ms after the DCGM window they describe ended, some windows stored twice; GPU_UTIL an
// average over the driver's own 1/6 s grid; FB_USED the value at the instant. The events and
// samples are inserted directly (pp_refresh(NULL) aligns and folds what the tables hold).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "unit/test_db.hpp"

namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kRefreshT0 = 1700000000LL * 1000000000LL;
constexpr const char* kUuid = "GPU-51de0000-0000-4000-8000-000000000000";
constexpr double kOffsetMs = 37.4;
constexpr double kUtilPeriodNs = 1e9 / 6;
constexpr double kUtilPhaseNs = 71 * kMs;

struct Layer {
  const char* name;
  const char* type;
  double ms;                  // mean duration
  double sm, dram, util, fb;  // true values while it runs
};
// Idle (untracked) time reads sm 0.02, dram 0.01, util 5, fb 8000.
const Layer kLayers[] = {{"emb", "EmbeddingBag", 6, 0.6, 0.8, 90, 9000},
                         {"fc1", "Linear", 4, 0.9, 0.3, 98, 9100},
                         {"act", "ReLU", 1, 0.5, 0.6, 80, 9050}};
const double kIdle[] = {0.02, 0.01, 5, 8000};

struct Event {
  int64_t start, end;
  int layer;
};

class AlignRefresh : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> jitter(0.7, 1.3), gap(0.2, 2.5);
    double t = 0;
    for (; t < periodic_until_ns_; t += 100 * kMs)  // each layer at the same place in every 100 ms
      for (int layer = 0; layer < 3; ++layer) {
        const double start = t + (10 + 10 * layer) * kMs;
        events_.push_back({kRefreshT0 + static_cast<int64_t>(start),
                           kRefreshT0 + static_cast<int64_t>(start + kLayers[layer].ms * kMs), layer});
      }
    int k = 0;
    while (t < job_ns_) {
      if (t >= pause_from_ns_ && t < pause_from_ns_ + pause_ns_) t = pause_from_ns_ + pause_ns_;
      const int layer = k % 3;
      const double d = kLayers[layer].ms * jitter(rng) * kMs;
      events_.push_back({kRefreshT0 + static_cast<int64_t>(t), kRefreshT0 + static_cast<int64_t>(t + d), layer});
      t += d + gap(rng) * kMs + (k % 40 == 39 ? 15 * kMs : 0);  // a data-loading gap now and then
      ++k;
    }
    db_.exec("SELECT pp_install_views()");
    db_.exec(events_sql());
  }

  std::string events_sql() const {
    std::ostringstream sql;
    sql << "INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, "
           "source_file, line) VALUES ";
    for (size_t i = 0; i < events_.size(); ++i) {
      const Event& e = events_[i];
      sql << (i ? "," : "") << "('job', '" << kUuid << "', '" << kLayers[e.layer].name << "', '"
          << kLayers[e.layer].type << "', 1, " << e.start << ", " << e.end << ", " << e.start / 1e9 << ", "
          << e.end / 1e9 << ", 'synthetic', " << i + 1 << ")";
    }
    return sql.str();
  }

  // The true average of value v (0 sm, 1 dram, 2 util, 3 fb) over (end - window, end].
  double average(int v, int64_t end, double window) const {
    const double start = static_cast<double>(end) - window;
    double sum = 0, covered = 0;
    for (const Event& e : events_) {
      const double w = std::min<double>(static_cast<double>(e.end), static_cast<double>(end)) -
                       std::max<double>(static_cast<double>(e.start), start);
      if (w > 0) sum += w * value(e.layer, v), covered += w;
    }
    return (sum + (window - covered) * kIdle[v]) / window;
  }
  double at_instant(int v, int64_t t) const {
    for (const Event& e : events_)
      if (e.start <= t && t < e.end) return value(e.layer, v);
    return kIdle[v];
  }
  static double value(int layer, int v) {
    const Layer& l = kLayers[layer];
    return v == 0 ? l.sm : v == 1 ? l.dram : v == 2 ? l.util : l.fb;
  }

  // DCGM windows of 100 ms; each stored kOffsetMs (+ up to 1 ms) later, truncated to the ms;
  // every 25th scrape found no new window and stored the previous one again.
  void insert_samples(int64_t from_ms, int64_t to_ms) { db_.exec(samples_sql(from_ms, to_ms)); }
  std::string samples_sql(int64_t from_ms, int64_t to_ms) const {
    std::mt19937_64 rng(static_cast<uint64_t>(from_ms));
    std::normal_distribution<double> noise(0, 0.005);
    std::uniform_real_distribution<double> late(0, 1);
    std::ostringstream sql;
    sql << "INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES ";
    bool first = true;
    for (int64_t i = 1;; ++i) {
      const int64_t end = kRefreshT0 + i * 100 * kMs + 3 * kMs;
      const int64_t ts = static_cast<int64_t>(std::floor((static_cast<double>(end) + (kOffsetMs + late(rng)) * kMs) / kMs));
      if (ts > to_ms) break;
      if (ts <= from_ms) continue;
      const int64_t window_end = i % 25 == 0 ? end - 100 * kMs : end;  // a repeat: the window before
      const auto util_end = static_cast<int64_t>(
          kUtilPhaseNs + std::floor((static_cast<double>(window_end) - kUtilPhaseNs) / kUtilPeriodNs) * kUtilPeriodNs);
      // Noise keyed by the window, so a window stored twice has the same values.
      std::mt19937_64 window_rng(static_cast<uint64_t>(window_end));
      const double values[] = {average(0, window_end, 100 * kMs) * (1 + noise(window_rng)),
                               average(1, window_end, 100 * kMs) * (1 + noise(window_rng)),
                               std::round(average(2, util_end, kUtilPeriodNs)), std::round(at_instant(3, window_end))};
      const char* metrics[] = {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_DEV_GPU_UTIL",
                               "DCGM_FI_DEV_FB_USED"};
      for (int m = 0; m < 4; ++m) {
        sql << (first ? "" : ",") << "('" << kUuid << "', '" << metrics[m] << "', " << ts << ", " << values[m] << ")";
        first = false;
      }
    }
    return sql.str();
  }

  // Scrapes every interval_ms until idle_after_job_ms_ after the job's calls end (up to 1 ms
  // late, stored truncated to the ms; or, where scrape_late_ms is given, late by a half-normal
  // amount of that scale, stored at the ideal tick where that is 1 ms or less, as Prometheus'
  // timestamp tolerance does), each served the newest DCGM window (of 100 ms, ending 3 ms past
  // each 100 ms; or dcgm_ppm longer, ending 3 ms past each such period from T0) that ended
  // latency_ms before it (plus latency_jitter_ms times a standard normal draw, clipped at 0); the
  // true window end of each stored time into ends. With fb, FB_USED too: the memory in use at the
  // window's end (DCGM reads it at the poll that ends the window), with 0.5% noise, printed as an
  // integer.
  std::string scraped_samples_sql(double interval_ms, double latency_ms, std::map<int64_t, int64_t>& ends,
                                  double latency_jitter_ms = 0, double scrape_late_ms = 0, double dcgm_ppm = 0,
                                  bool fb = false) const {
    const double period = 100 * kMs * (1 + dcgm_ppm * 1e-6);
    std::mt19937_64 rng(5), latency_rng(6);
    std::normal_distribution<double> z(0, 1);
    std::normal_distribution<double> noise(0, 0.005);
    std::uniform_real_distribution<double> late(0, 1);
    const auto lateness = [&] {
      if (scrape_late_ms <= 0) return late(rng);
      const double l = std::fabs(scrape_late_ms * z(rng));
      return l <= 1 ? 0.0 : l;
    };
    std::ostringstream sql;
    sql << "INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES ";
    bool first = true;
    for (int64_t n = 1;; ++n) {
      const double scrape = static_cast<double>(kRefreshT0) + (7 + static_cast<double>(n) * interval_ms + lateness()) * kMs;
      const auto ts = static_cast<int64_t>(std::floor(scrape / kMs));
      if (ts > last_ms() + idle_after_job_ms_) break;
      const double latency = std::max(0.0, latency_ms + (latency_jitter_ms > 0 ? latency_jitter_ms * z(latency_rng) : 0));
      const auto window = static_cast<int64_t>(std::floor((scrape - latency * kMs - kRefreshT0 - 3 * kMs) / period));
      if (window < 1) continue;
      const int64_t window_end = kRefreshT0 + std::llround(static_cast<double>(window) * period) + 3 * kMs;
      ends[ts] = window_end;
      std::mt19937_64 window_rng(static_cast<uint64_t>(window_end));
      const double values[] = {average(0, window_end, period) * (1 + noise(window_rng)),
                               average(1, window_end, period) * (1 + noise(window_rng)),
                               std::round(at_instant(3, window_end) * (1 + noise(window_rng)))};
      const char* metrics[] = {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_DEV_FB_USED"};
      for (int m = 0; m < (fb ? 3 : 2); ++m) {
        sql << (first ? "" : ",") << "('" << kUuid << "', '" << metrics[m] << "', " << ts << ", " << values[m] << ")";
        first = false;
      }
    }
    return sql.str();
  }

  int64_t last_ms() const { return (kRefreshT0 + static_cast<int64_t>(job_ns_)) / kMs; }

  // GPU g (1, 2, ...) gets the first GPU's events and samples.
  void add_gpu_like_the_first(int g) {
    const std::string uuid = std::string(kUuid).substr(0, 39) + std::to_string(g);
    db_.exec("INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, "
             "t_end, source_file, line) SELECT job_id, '" + uuid + "', layer, layer_type, forward, t_start_ns, "
             "t_end_ns, t_start, t_end, 'synthetic-" + std::to_string(g) + "', line FROM pp_events WHERE gpu_uuid = '" +
             kUuid + "'");
    db_.exec("INSERT INTO pp_samples(uuid, metric, ts_ms, value) SELECT '" + uuid +
             "', metric, ts_ms, value FROM pp_samples WHERE uuid = '" + kUuid + "'");
  }

  // Refreshes the job's samples up to each of cuts_ms while it runs, then the rest with final
  // set; then again in one refresh of everything, which must give the same layer_state and
  // pp_alignment. Returns how far the last refresh before the final one folded. before_final
  // runs before the final refresh.
  int64_t expect_parts_give_what_one_gives(const std::vector<int64_t>& cuts_ms,
                                           const std::function<void()>& before_final = [] {}) {
    db_.exec("SELECT pp_config('attribution_margin_seconds', 1000000000)");  // the job is running
    int64_t inserted = 0;
    for (int64_t cut : cuts_ms) {
      insert_samples(inserted, cut);
      inserted = cut;
      db_.query("SELECT * FROM pp_refresh(NULL)");
    }
    EXPECT_GT(db_.scalar("SELECT count(*) FROM pp_alignment").integer, 0);
    EXPECT_GT(db_.scalar("SELECT count(*) FROM layer_state").integer, 0);
    const int64_t folded = db_.scalar("SELECT folded_through_ms FROM pp_fold_state").integer;
    before_final();
    insert_samples(inserted, last_ms());
    db_.query("SELECT * FROM pp_refresh(NULL, 1)");
    db_.exec("CREATE TEMP TABLE parts AS SELECT * FROM layer_state; CREATE TEMP TABLE parts_alignment AS "
             "SELECT * FROM pp_alignment; CREATE TEMP TABLE parts_estimates AS SELECT * FROM layer_type_estimates");
    db_.exec("DELETE FROM layer_state; DELETE FROM pp_layers; DELETE FROM pp_fold_state; DELETE FROM pp_alignment; "
             "DELETE FROM pp_windows; DELETE FROM pp_intervals; DELETE FROM pp_gpu_spans; "
             "DELETE FROM pp_estimator_state; UPDATE pp_events SET folded = 0");
    db_.query("SELECT * FROM pp_refresh(NULL, 1)");
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment AS a JOIN temp.parts_alignment AS p USING (uuid, from_ms) "
                         "WHERE a.offset_ns = p.offset_ns AND a.through_ms = p.through_ms AND a.status = p.status")
                  .integer,
              db_.scalar("SELECT count(*) FROM pp_alignment").integer);
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_state").integer, db_.scalar("SELECT count(*) FROM temp.parts").integer);
    for (const auto& row : db_.query(
             "SELECT s.layer, s.metric, pp_mean_count(s.state), pp_mean_count(p.state), pp_mean_value(s.state), "
             "pp_mean_value(p.state) FROM layer_state AS s JOIN temp.parts AS p USING (job_id, layer, forward, metric) "
             "WHERE pp_mean_count(s.state) <> pp_mean_count(p.state) "
             "OR abs(pp_mean_value(s.state) - pp_mean_value(p.state)) > 1e-9 * abs(pp_mean_value(p.state))"))
      ADD_FAILURE() << row[0].text << " " << row[1].text << ": one refresh " << row[2].integer << " windows, mean "
                    << row[4].real << "; in parts " << row[3].integer << ", " << row[5].real;
    // And the estimates solved from the estimator's state.
    const auto differs = [](const char* column) {
      return std::string("abs(e.") + column + " - p." + column + ") > 1e-9 * abs(p." + column + ")";
    };
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates").integer,
              db_.scalar("SELECT count(*) FROM temp.parts_estimates").integer);
    for (const auto& row : db_.query("SELECT layer_type, metric, e.estimate, p.estimate FROM layer_type_estimates AS e "
                                     "JOIN temp.parts_estimates AS p USING (job_id, layer_type, forward, metric) WHERE " +
                                     differs("estimate") + " OR " + differs("lower90") + " OR " + differs("upper90") +
                                     " OR e.confidence IS NOT p.confidence"))
      ADD_FAILURE() << row[0].text << " " << row[1].text << ": one refresh " << row[2].real << ", in parts " << row[3].real;
    return folded;
  }

  pp_test::TestDb db_;
  std::vector<Event> events_;
  // Calls before this time (ns after T0) repeat exactly every 100 ms, DCGM's window.
  double periodic_until_ns_ = 0;
  double job_ns_ = 70e9;  // the job's calls end then (ns after T0)
  double pause_from_ns_ = 0, pause_ns_ = 0;  // no calls in this while (ns after T0)
  int64_t idle_after_job_ms_ = 0;  // scraped_samples_sql goes on storing the idle GPU's windows this long
};

// A job that starts with calls that repeat every 100 ms: every DCGM window holds the same mix
// wherever it lies, so the data cannot place its first stretch, nor find GPU_UTIL's grid there.
class AlignRefreshPeriodicStart : public AlignRefresh {
 protected:
  AlignRefreshPeriodicStart() { periodic_until_ns_ = 45e9; }
};

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
  int identified = 0;
  for (const auto& r : db_.query("SELECT layer_type, metric, estimate, lower90, upper90, confidence FROM "
                                 "layer_type_estimates WHERE layer_type <> '(untracked)'")) {
    int layer = 0;
    while (std::string(kLayers[layer].type) != r[0].text) ++layer;
    const double truth = value(layer, r[1].text == "DCGM_FI_PROF_SM_ACTIVE" ? 0 : 1);
    SCOPED_TRACE(r[0].text + " " + r[1].text);
    EXPECT_LE(r[3].real, truth * 1.005);
    EXPECT_GE(r[4].real, truth * 0.995);
    if (r[5].text == "identified") {
      ++identified;
      EXPECT_NEAR(r[2].real, truth, 0.05 * truth);
    }
  }
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

TEST_F(AlignRefresh, APinnedOffsetIsUsedAsItIs) {
  insert_samples(0, last_ms());
  EXPECT_EQ(db_.scalar("SELECT pp_config('sample_offset_ms', 37.9)").text, "37.9");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM sample_alignment WHERE status <> 'setting' OR offset_ms <> 37.9").integer, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_windows WHERE copy_of_ms IS NOT NULL").integer, 0);
}

TEST_F(AlignRefresh, MetricsOfTheSameWindowsAreEachEstimatedFromTheirOwnValues) {
  // SM and DRAM activity describe the same windows (the estimator sweeps the events once for
  // both), DRAM with no value in a fifth of them: each metric's estimates are what they are
  // with the other metric's samples gone.
  insert_samples(0, last_ms());
  db_.exec("SELECT pp_config('sample_offset_ms', 37.9)");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  db_.exec("UPDATE pp_samples SET value = NULL WHERE metric = 'DCGM_FI_PROF_DRAM_ACTIVE' AND ts_ms % 5 = 0");
  db_.exec("CREATE TEMP TABLE both_metrics AS SELECT * FROM layer_type_estimates "
           "WHERE metric IN ('DCGM_FI_PROF_SM_ACTIVE', 'DCGM_FI_PROF_DRAM_ACTIVE')");
  const auto alone_as_with = [&](const std::string& metric) {
    return db_.scalar("SELECT (SELECT count(*) FROM (SELECT * FROM layer_type_estimates WHERE metric = '" + metric +
                      "' EXCEPT SELECT * FROM temp.both_metrics WHERE metric = '" + metric +
                      "')) = 0 AND (SELECT count(*) FROM layer_type_estimates WHERE metric = '" + metric +
                      "') = (SELECT count(*) FROM temp.both_metrics WHERE metric = '" + metric + "')")
               .integer;
  };
  db_.exec("CREATE TEMP TABLE dram AS SELECT * FROM pp_samples WHERE metric = 'DCGM_FI_PROF_DRAM_ACTIVE'");
  db_.exec("DELETE FROM pp_samples WHERE metric = 'DCGM_FI_PROF_DRAM_ACTIVE'");
  EXPECT_EQ(alone_as_with("DCGM_FI_PROF_SM_ACTIVE"), 1);
  db_.exec("INSERT INTO pp_samples SELECT * FROM temp.dram");
  db_.exec("DELETE FROM pp_samples WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE'");
  EXPECT_EQ(alone_as_with("DCGM_FI_PROF_DRAM_ACTIVE"), 1);
  // (and the nulls count: DRAM's windows are fewer than SM's)
  EXPECT_EQ(db_.scalar("SELECT (SELECT max(windows) FROM temp.both_metrics WHERE metric = 'DCGM_FI_PROF_DRAM_ACTIVE') < "
                       "(SELECT max(windows) FROM temp.both_metrics WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE')")
                .integer,
            1);
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

TEST_F(AlignRefresh, GpuUtilWhollyOffItsDriversGridIsNeverIdentified) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const char* identified_util =
      "SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND confidence = 'identified'";
  ASSERT_GT(db_.scalar(identified_util).integer, 0);
  // As where the align step finds no driver grid (its stretches poorly determined): GPU_UTIL's
  // samples are then placed on DCGM's 100 ms windows, not the driver's 1/6 s ones they average:
  // every window is left out, and each row says so, without an estimate.
  db_.exec("UPDATE pp_windows SET util_end_ns = NULL");
  EXPECT_EQ(db_.scalar(identified_util).integer, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL'").integer, 4);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' "
                       "AND (estimate IS NOT NULL OR confidence NOT LIKE "
                       "'not identified: % windows whose samples lie off their driver''s grid %')").integer,
            0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' "
                       "AND (lower90 <> 0 OR upper90 <> 100)").integer,
            0);  // its interval is what the bounds say
  EXPECT_GT(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE' "
                       "AND confidence = 'identified'").integer,
            0);  // DCGM's own fields are not affected
}

// Where the align step placed no driver grid in one stretch (its first, say, before the data
// told the driver's period), GPU_UTIL's windows there are not known: they are left out and
// counted, and its rows are estimated from the others, as if those samples had not been stored.
TEST_F(AlignRefresh, GpuUtilOffItsDriversGridInOneStretchLeavesOnlyThoseWindowsOut) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string first_stretch = "ts_ms <= " + std::to_string(kRefreshT0 / kMs + 10000);
  db_.exec("UPDATE pp_windows SET util_end_ns = NULL WHERE " + first_stretch);
  const std::string util =
      "SELECT layer_type, forward, estimate, lower90, upper90, windows, confidence FROM layer_type_estimates "
      "WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' ORDER BY layer_type, forward";
  const auto left_out = db_.query(util);
  db_.exec("DELETE FROM pp_samples WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND " + first_stretch);
  const auto not_stored = db_.query(util);
  ASSERT_EQ(left_out.size(), not_stored.size());
  ASSERT_EQ(left_out.size(), 4u);  // three layer types and the untracked time
  size_t identified = 0;
  for (size_t i = 0; i < left_out.size(); ++i) {
    SCOPED_TRACE(left_out[i][0].text);
    EXPECT_EQ(left_out[i][2].real, not_stored[i][2].real);
    EXPECT_EQ(left_out[i][3].real, not_stored[i][3].real);
    EXPECT_EQ(left_out[i][4].real, not_stored[i][4].real);
    EXPECT_EQ(left_out[i][5].integer, not_stored[i][5].integer);
    if (left_out[i][6].text == "identified") {
      ++identified;
      EXPECT_EQ(not_stored[i][6].text, "identified");
    } else {  // (fitted from the other windows: a longer run narrows it)
      EXPECT_EQ(left_out[i][6].text, not_stored[i][6].text);
    }
  }
  EXPECT_GT(identified, 0u);
  // Where no window of GPU_UTIL is placed, every row says how many were left out.
  db_.exec("UPDATE pp_windows SET util_end_ns = NULL");
  const int64_t stored = db_.scalar("SELECT count(*) FROM pp_windows AS w JOIN pp_samples AS s USING (uuid, ts_ms) "
                                    "WHERE s.metric = 'DCGM_FI_DEV_GPU_UTIL' AND w.copy_of_ms IS NULL").integer;
  EXPECT_GT(stored, 500);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND "
                       "estimate IS NULL AND confidence = 'not identified: " + std::to_string(stored) +
                       " windows whose samples lie off their driver''s grid (a driver-period metric: the window they "
                       "average is not known) were left out'").integer,
            4);
}

// dcgm-exporter without profiling fields serves GPU_UTIL (the driver's 1/6 s windows) and
// FB_USED (an instant) alone: nothing places DCGM's windows, no stretch's timing is
// determined, and an offset off by periods would still fit FB_USED's levels closely. No row
// is identified; each gives only what the bounds say.
TEST_F(AlignRefresh, WithoutAFieldToAlignWithNothingIsIdentified) {
  insert_samples(0, last_ms());
  db_.exec("DELETE FROM pp_samples WHERE metric NOT IN ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED')");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment WHERE status IN ('estimated', 'setting')").integer, 0);
  EXPECT_GT(db_.scalar("SELECT count(*) FROM layer_type_estimates").integer, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE confidence = 'identified'").integer, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE confidence NOT LIKE "
                       "'not identified: the timing of its GPU''s samples was determined in no stretch%'").integer,
            0);
  // With the offset pinned (status 'setting'), the same data is estimated as usual.
  db_.exec("SELECT pp_config('sample_offset_ms', " + std::to_string(kOffsetMs) + ")");
  db_.exec("DELETE FROM pp_alignment; DELETE FROM pp_windows; DELETE FROM pp_fold_state; DELETE FROM layer_state");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_GT(db_.scalar("SELECT count(*) FROM pp_alignment WHERE status = 'setting'").integer, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE confidence LIKE '%determined in no stretch%'")
                .integer,
            0);
}

TEST_F(AlignRefresh, WithoutAnyLayerNearItATimingCannotBeDetermined) {
  // Samples from an hour later: no event near them, nothing to attribute, said so.
  db_.exec("DELETE FROM pp_events WHERE t_start_ns > " + std::to_string(kRefreshT0 + 2 * 1000000000LL));
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_GT(db_.scalar("SELECT count(*) FROM sample_alignment WHERE status = 'no layers'").integer, 0);
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

// Two GPUs with the same events and samples: the align and retention steps take them at once on
// two threads, and the second GPU gets the rows the first one gets, bit for bit.
TEST_F(AlignRefresh, GpusAlignedAndKeptOnTwoThreadsGetTheSameRows) {
  insert_samples(0, last_ms());
  add_gpu_like_the_first(1);
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const auto per_gpu = [&](const std::string& sql) {
    std::vector<std::string> out;
    for (const auto& uuid : db_.query("SELECT DISTINCT uuid FROM pp_samples ORDER BY uuid")) {
      std::string rows;
      for (const auto& row : db_.query(sql, {uuid[0].text}))
        for (const auto& v : row) rows += v.text + "|";
      out.push_back(rows);
    }
    return out;
  };
  for (const char* sql :
       {"SELECT from_ms, through_ms, offset_ns, timing_ns, drift_ppm, util_phase_ns, util_timing_ns, samples, repeats, "
        "skipped, moved, status FROM pp_alignment WHERE uuid = ?1 ORDER BY from_ms",
        "SELECT ts_ms, end_ns, util_end_ns, copy_of_ms, util_copy FROM pp_windows WHERE uuid = ?1 ORDER BY ts_ms",
        "SELECT system, metric, grouping, shift, windows, hex(state) FROM pp_estimator_state WHERE uuid = ?1 "
        "ORDER BY system, metric, grouping, shift"}) {
    SCOPED_TRACE(sql);
    const auto rows = per_gpu(sql);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_GT(rows[0].size(), 100u);
    for (size_t g = 1; g < rows.size(); ++g) EXPECT_EQ(rows[g], rows[0]) << "GPU " << g;
  }
  EXPECT_GT(db_.scalar("SELECT count(*) FROM pp_estimator_state").integer, 0);
  // pp_alignment's rows went in in GPU order, whichever thread finished first: a view over it
  // without ORDER BY reads them as one thread wrote them.
  std::vector<std::string> inserted;
  for (const auto& row : db_.query("SELECT uuid || ' ' || from_ms FROM pp_alignment ORDER BY rowid"))
    inserted.push_back(row[0].text);
  std::vector<std::string> sorted = inserted;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(inserted, sorted);
}

// A block that cannot be read, met by the steps whose workers decode the GPUs' events (the
// connection's thread only copies the blocks): the refresh fails with an error naming the
// block, keeps nothing, and refreshes once the block is whole again. The block is an early one
// marked folded, which the reads of what is new pass by: the align step's stretch meets it,
// or, with the offset pinned and no driver metric (no stretch reads events), the fold's.
TEST_F(AlignRefresh, ADamagedBlockStopsTheThreadedStepsWithAnErrorNamingIt) {
  insert_samples(0, last_ms());
  add_gpu_like_the_first(1);
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  const std::string block =
      std::to_string(db_.scalar("SELECT min(id) FROM pp_events_blocks WHERE gpu_uuid <> '" + std::string(kUuid) + "'").integer);
  for (const char* pinned : {"", "SELECT pp_config('sample_offset_ms', 40); UPDATE pp_metrics SET kind = 'window';"}) {
    for (const char* damage : {"data = x'0105ff'", "last_start_ns = last_start_ns - 1"}) {
      SCOPED_TRACE(std::string(pinned) + damage);
      db_.exec(std::string("SAVEPOINT damaged; ") + pinned + "UPDATE pp_events_blocks SET folded_through_ns = last_start_ns, " +
               damage + " WHERE id = " + block);
      const std::string error = db_.error("SELECT * FROM pp_refresh(NULL, 1)");
      EXPECT_EQ(error.rfind("pp_refresh: block " + block + " of pp_events_blocks is damaged (", 0), 0u) << error;
      EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment").integer, 0);
      EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_state").integer, 0);
      db_.exec("ROLLBACK TO damaged; RELEASE damaged");
    }
  }
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_GT(db_.scalar("SELECT count(*) FROM layer_state").integer, 0);
}

// Ctrl-C during a refresh whose align and retention steps run on two threads: whichever step
// the interrupt meets, the refresh stops with the interrupt's error (no thread left waiting on
// another), keeps nothing, and the next refresh gets the rows of one never interrupted.
TEST_F(AlignRefresh, AnInterruptStopsTheThreadedStepsAndKeepsNothing) {
  insert_samples(0, last_ms());
  add_gpu_like_the_first(1);
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  const auto results = [&] {
    std::string rows;
    for (const char* sql : {"SELECT * FROM pp_alignment ORDER BY uuid, from_ms", "SELECT * FROM pp_windows",
                            "SELECT uuid, system, metric, grouping, shift, hex(state) FROM pp_estimator_state",
                            "SELECT * FROM layer_state"})
      for (const auto& row : db_.query(sql))
        for (const auto& v : row) rows += v.text + "|";
    return rows;
  };
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  // An uninterrupted refresh, rolled back, times the refresh and gives the rows to expect.
  db_.exec("BEGIN");
  const Clock::time_point started = Clock::now();
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const double whole = seconds_since(started);
  const std::string expected = results();
  db_.exec("ROLLBACK");
  ASSERT_GT(expected.size(), 1000u);
  int interrupted = 0;
  for (double at : {0.2, 0.5, 0.8}) {
    SCOPED_TRACE(at);
    db_.exec("BEGIN");
    Clock::time_point sent;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::duration<double>(at * whole));
      sent = Clock::now();
      sqlite3_interrupt(db_.get());
    });
    try {
      db_.query("SELECT * FROM pp_refresh(NULL, 1)");  // done before the interrupt came: allowed
      stopper.join();
    } catch (const std::runtime_error& e) {
      stopper.join();
      ++interrupted;
      EXPECT_NE(std::string(e.what()).find("pp_refresh: interrupted; nothing was committed"), std::string::npos)
          << e.what();
      EXPECT_LT(seconds_since(sent), 5.0);  // each worker stops at its next read or write
    }
    // An interrupt in the middle of a write ends the whole transaction in SQLite itself; then
    // there is nothing left to roll back.
    if (!sqlite3_get_autocommit(db_.get())) db_.exec("ROLLBACK");
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment").integer, 0);
  }
  EXPECT_GE(interrupted, 2);
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(results(), expected);
}

// A refresh run in autocommit mode and interrupted leaves its writes in an open transaction
// (SQLite runs no ROLLBACK while the interrupt is in force): an application's COMMIT after it
// (Python's conn.commit(), its own write) must not store that part of a refresh, which the next
// refresh would then import again.
TEST_F(AlignRefresh, ACommitAfterAnInterruptedRefreshStoresNothingOfIt) {
  insert_samples(0, last_ms());
  const auto stored = [&] {
    return db_.scalar("SELECT (SELECT count(*) FROM pp_alignment) + (SELECT count(*) FROM pp_windows) + "
                      "(SELECT count(*) FROM layer_state) + (SELECT count(*) FROM pp_gpu_spans)").integer;
  };
  ASSERT_EQ(stored(), 0);
  int left_open = 0;
  for (const int callbacks : {20, 200, 2000, 20000}) {
    SCOPED_TRACE(callbacks);
    int count = 0;
    struct Stop {
      int* count;
      int at;
      sqlite3* db;
    } stop{&count, callbacks, db_.get()};
    sqlite3_progress_handler(
        db_.get(), 100,
        [](void* arg) {
          auto* s = static_cast<Stop*>(arg);
          if (++*s->count == s->at) sqlite3_interrupt(s->db);
          return 0;
        },
        &stop);
    bool interrupted = false;
    const sqlite3_int64 changes = sqlite3_total_changes64(db_.get());
    try {
      db_.query("SELECT * FROM pp_refresh(NULL, 1)");
    } catch (const std::runtime_error& e) {
      interrupted = true;
      EXPECT_NE(std::string(e.what()).find("a COMMIT on it rolls back"), std::string::npos) << e.what();
    }
    sqlite3_progress_handler(db_.get(), 0, nullptr, nullptr);
    if (!interrupted) break;  // the refresh ended before the interrupt: it committed
    if (sqlite3_get_autocommit(db_.get())) continue;  // SQLite rolled the transaction back itself
    if (sqlite3_total_changes64(db_.get()) == changes) {  // stopped before its first row
      EXPECT_EQ(sqlite3_exec(db_.get(), "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
      EXPECT_EQ(stored(), 0);
      continue;
    }
    ++left_open;
    EXPECT_NE(sqlite3_exec(db_.get(), "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
    EXPECT_NE(db_.scalar("SELECT pp_last_warnings()").text.find("COMMIT was turned into ROLLBACK"), std::string::npos);
    EXPECT_EQ(stored(), 0);
  }
  EXPECT_GE(left_open, 1);
  // Inside an application's own transaction, a refresh stopped before its first row leaves the
  // application's writes to its COMMIT.
  db_.exec("BEGIN; CREATE TABLE before_refresh(x); INSERT INTO before_refresh VALUES (1)");
  {
    sqlite3* db = db_.get();
    sqlite3_progress_handler(db, 1, [](void* d) { sqlite3_interrupt(static_cast<sqlite3*>(d)); return 0; }, db);
    EXPECT_THROW(db_.query("SELECT * FROM pp_refresh(NULL, 1)"), std::runtime_error);
    sqlite3_progress_handler(db, 0, nullptr, nullptr);
  }
  ASSERT_EQ(sqlite3_get_autocommit(db_.get()), 0);  // the application's transaction is still open
  EXPECT_EQ(sqlite3_exec(db_.get(), "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM before_refresh").integer, 1);
  // A COMMIT of the connection's own later transactions is not held back.
  db_.exec("BEGIN; CREATE TABLE mine(x); INSERT INTO mine VALUES (1); COMMIT");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM mine").integer, 1);
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_GT(stored(), 0);
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

// A state blob that is not one (a damaged row) is an error naming the row, so that it can be
// deleted, not a wrong estimate.
TEST_F(AlignRefresh, ADamagedStateNamesItsRow) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  db_.exec("UPDATE pp_estimator_state SET state = substr(state, 1, 20) WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE' "
           "AND grouping = 'layer_type' AND shift = 0");
  EXPECT_EQ(db_.error("SELECT count(*) FROM layer_type_estimates"),
            std::string("pp_estimates: estimator state: the blob ends early (truncated or not a state), in "
                        "pp_estimator_state row (uuid '") +
                kUuid + "', system 'job', metric 'DCGM_FI_PROF_SM_ACTIVE', grouping 'layer_type', shift 0)");
}


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
  for (const auto& w : idle)
    EXPECT_LE(std::llabs(w[1].integer - ends.at(w[0].integer)), 3 * kMs)
        << "stored at " << w[0].integer << ": " << (w[1].integer - ends.at(w[0].integer)) / 1e6 << " ms off";
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
