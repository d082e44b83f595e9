// The fixture of the align_refresh_*_test.cpp files: pp_refresh on samples stored the way
// Prometheus stores dcgm-exporter's: at scrape time, some tens of ms after the DCGM window they
// describe ended, some windows stored twice; GPU_UTIL an average over the driver's own 1/6 s
// grid; FB_USED the value at the instant. The events and samples are inserted directly
// (pp_refresh(NULL) aligns and folds what the tables hold).
//
// A named namespace, not an anonymous one: gtest takes every test of suite AlignRefresh, in
// whichever file, to use this one class. A file that includes it includes unit/test_db.hpp
// itself too (tests/CMakeLists.txt batches the host's SQLite tests by that line).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "unit/test_db.hpp"

namespace pp_test::align_refresh {

inline constexpr int64_t kMs = 1000000;
inline constexpr int64_t kRefreshT0 = 1700000000LL * 1000000000LL;
inline constexpr const char* kUuid = "GPU-51de0000-0000-4000-8000-000000000000";
inline constexpr double kOffsetMs = 37.4;
inline constexpr double kUtilPeriodNs = 1e9 / 6;
inline constexpr double kUtilPhaseNs = 71 * kMs;

struct Layer {
  const char* name;
  const char* type;
  double ms;                  // mean duration
  double sm, dram, util, fb;  // true values while it runs
};
// Idle (untracked) time reads sm 0.02, dram 0.01, util 5, fb 8000.
inline constexpr Layer kLayers[] = {{"emb", "EmbeddingBag", 6, 0.6, 0.8, 90, 9000},
                                    {"fc1", "Linear", 4, 0.9, 0.3, 98, 9100},
                                    {"act", "ReLU", 1, 0.5, 0.6, 80, 9050}};
inline constexpr double kIdle[] = {0.02, 0.01, 5, 8000};

struct Event {
  int64_t start, end;
  int layer;
};

// Expects each window (rows of ts_ms, end_ns from pp_windows) within within_ns of the end of
// the window its stored time read (ends: scraped_samples_sql's).
inline void expect_windows_near_their_own(const Rows& windows, const std::map<int64_t, int64_t>& ends,
                                          int64_t within_ns) {
  for (const auto& w : windows)
    EXPECT_LE(std::llabs(w[1].integer - ends.at(w[0].integer)), within_ns)
        << "stored at " << w[0].integer << ": " << (w[1].integer - ends.at(w[0].integer)) / 1e6 << " ms off";
}

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
    for (auto e = first_ending_after(start); e != events_.end() && e->start < end; ++e) {
      const double w = std::min<double>(static_cast<double>(e->end), static_cast<double>(end)) -
                       std::max<double>(static_cast<double>(e->start), start);
      if (w > 0) sum += w * value(e->layer, v), covered += w;
    }
    return (sum + (window - covered) * kIdle[v]) / window;
  }
  double at_instant(int v, int64_t t) const {
    const auto e = first_ending_after(static_cast<double>(t));
    return e != events_.end() && e->start <= t ? value(e->layer, v) : kIdle[v];
  }
  // events_ runs in time order without overlaps (SetUp), so each sample window reads only its
  // own events: a scan of the whole job per window made the long jobs' tests quadratic.
  std::vector<Event>::const_iterator first_ending_after(double t) const {
    return std::partition_point(events_.begin(), events_.end(),
                                [t](const Event& e) { return static_cast<double>(e.end) <= t; });
  }
  static double value(int layer, int v) {
    const Layer& l = kLayers[layer];
    return v == 0 ? l.sm : v == 1 ? l.dram : v == 2 ? l.util : l.fb;
  }

  // Each layer type's SM and DRAM estimates: the 90% interval holds the truth, and an identified
  // estimate lies within 5% of it. Returns how many are identified.
  int expect_type_estimates_hold_truth() {
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
    return identified;
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

}  // namespace pp_test::align_refresh
