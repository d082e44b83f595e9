// How far the estimator moves a job's windows to see what the timing's uncertainty does to its
// estimates: by the uncertainty of the stretches that hold that job's windows. A GPU's long,
// well aligned history says nothing about how well a new job's windows are placed, so it must
// not narrow that job's intervals. The tables are filled directly, as the align step leaves them
// (pp_alignment, pp_windows), so that each stretch's timing is what the test says.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "unit/test_db.hpp"

namespace {

constexpr int64_t kShiftMs = 1000000;
constexpr int64_t kShiftT0 = 1710000000LL * 1000000000LL;
constexpr const char* kShiftUuid = "GPU-7a11e000-0000-4000-8000-000000000000";
constexpr int64_t kStoredLateMs = 40;  // stored time after the window's end
constexpr const char* kShiftMetric = "DCGM_FI_PROF_SM_ACTIVE";

struct ShiftLayer {
  const char* name;
  const char* type;
  double ms, sm;  // duration, SM activity while it runs
};
const ShiftLayer kShiftLayers[] = {{"emb", "EmbeddingBag", 3, 0.55}, {"fc", "Linear", 1.5, 0.9}, {"act", "ReLU", 0.4, 0.6}};
constexpr double kShiftIdle = 0.02;

struct ShiftEvent {
  int64_t start, end;
  int layer;
};

// A GPU's tables: jobs' events, 100 ms windows stored kStoredLateMs after they end with their
// true SM activity (plus 0.5% noise), and 10 s stretches of pp_alignment with the given timing.
class TimingShiftDb {
 public:
  TimingShiftDb() { db_.exec("SELECT pp_install_views()"); }

  // Layers called one after another with short gaps over [from_s, to_s) of the recording.
  void add_job(const std::string& job, double from_s, double to_s, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> jitter(0.6, 1.4), gap(0.05, 1.5);
    std::ostringstream sql;
    sql << "INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, "
           "source_file, line) VALUES ";
    double t = from_s * 1e9;
    for (int k = 0; t < to_s * 1e9; ++k) {
      const int layer = k % 3;
      const double d = kShiftLayers[layer].ms * jitter(rng) * kShiftMs;
      const ShiftEvent e{kShiftT0 + static_cast<int64_t>(t), kShiftT0 + static_cast<int64_t>(t + d), layer};
      events_.push_back(e);
      sql << (k ? "," : "") << "('" << job << "', '" << kShiftUuid << "', '" << kShiftLayers[layer].name << "', '"
          << kShiftLayers[layer].type << "', 1, " << e.start << ", " << e.end << ", " << e.start / 1e9 << ", "
          << e.end / 1e9 << ", '" << job << ".jsonl', " << k + 1 << ")";
      t += d + gap(rng) * kShiftMs;
    }
    db_.exec(sql.str());
  }

  // Windows ending every 100 ms over [from_s, to_s), in stretches of 10 s whose timing is
  // timing_ms ('estimated' below 1 ms, else 'poorly determined'; 'no layers' where none ran).
  void add_windows(double from_s, double to_s, double timing_ms) {
    std::ostringstream windows, samples, stretches;
    const auto first = static_cast<int64_t>(from_s * 10), last = static_cast<int64_t>(to_s * 10);
    for (int64_t i = first + 1; i <= last; ++i) {
      const int64_t end = kShiftT0 + i * 100 * kShiftMs;
      const int64_t ts = end / kShiftMs + kStoredLateMs;
      std::mt19937_64 noise_rng(static_cast<uint64_t>(i));
      std::normal_distribution<double> noise(0, 0.005);
      windows << (i > first + 1 ? "," : "") << "('" << kShiftUuid << "', " << ts << ", " << end << ")";
      samples << (i > first + 1 ? "," : "") << "('" << kShiftUuid << "', '" << kShiftMetric << "', " << ts << ", "
              << average(end) * (1 + noise(noise_rng)) << ")";
    }
    for (int64_t s = first; s < last; s += 100) {
      const int64_t from_ms = (kShiftT0 + s * 100 * kShiftMs) / kShiftMs + kStoredLateMs;
      const int64_t through_ms = from_ms + 10000;
      const bool layers = covered(from_ms * kShiftMs - kStoredLateMs * kShiftMs, through_ms * kShiftMs - kStoredLateMs * kShiftMs);
      stretches << (s > first ? "," : "") << "('" << kShiftUuid << "', " << from_ms << ", " << through_ms << ", "
                << kStoredLateMs * kShiftMs << ", " << (layers ? std::llround(timing_ms * 1e6) : 0) << ", 0, 100, 0, 0, 0, '"
                << (!layers ? "no layers" : timing_ms < 1 ? "estimated" : "poorly determined") << "')";
    }
    db_.exec("INSERT INTO pp_windows(uuid, ts_ms, end_ns) VALUES " + windows.str());
    db_.exec("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES " + samples.str());
    db_.exec("INSERT INTO pp_alignment(uuid, from_ms, through_ms, offset_ns, timing_ns, drift_ppm, samples, repeats, "
             "skipped, moved, status) VALUES " + stretches.str());
    db_.exec("INSERT OR IGNORE INTO pp_intervals(uuid, metric, interval_ms, source) VALUES ('" + std::string(kShiftUuid) +
             "', '" + kShiftMetric + "', 100, 'estimated')");
  }

  pp_test::Rows estimates(const std::string& job) {
    return db_.query("SELECT layer_type, estimate, lower90, upper90, confidence FROM layer_type_estimates "
                     "WHERE job_id = ? AND metric = ? ORDER BY layer_type", {job, kShiftMetric});
  }
  pp_test::TestDb& db() { return db_; }

 private:
  double average(int64_t end) const {
    const double start = static_cast<double>(end) - 100.0 * kShiftMs;
    double sum = 0, busy = 0;
    for (const ShiftEvent& e : events_) {
      const double w = std::min<double>(static_cast<double>(e.end), static_cast<double>(end)) -
                       std::max<double>(static_cast<double>(e.start), start);
      if (w > 0) sum += w * kShiftLayers[e.layer].sm, busy += w;
    }
    return (sum + (100.0 * kShiftMs - busy) * kShiftIdle) / (100.0 * kShiftMs);
  }
  bool covered(int64_t from_ns, int64_t to_ns) const {
    for (const ShiftEvent& e : events_)
      if (e.start < to_ns && e.end > from_ns) return true;
    return false;
  }

  pp_test::TestDb db_;
  std::vector<ShiftEvent> events_;
};

// The new job "late" runs for 40 s, its stretches poorly placed (30 ms). On a GPU that ran
// "early" for 4 minutes before, with every stretch placed to 0.05 ms, late's estimates and
// intervals are those it gets on a GPU of its own.
TEST(TimingShift, AJobsIntervalsDoNotBorrowAnotherJobsAlignment) {
  TimingShiftDb alone;
  alone.add_job("late", 260, 300, 7);
  alone.add_windows(250, 310, 30);
  TimingShiftDb after_history;
  after_history.add_job("early", 0, 240, 5);
  after_history.add_windows(0, 250, 0.05);
  after_history.add_job("late", 260, 300, 7);
  after_history.add_windows(250, 310, 30);

  const pp_test::Rows own = alone.estimates("late"), shared = after_history.estimates("late");
  ASSERT_EQ(own.size(), 4u);  // three layer types and the untracked time
  ASSERT_EQ(shared.size(), own.size());
  for (size_t i = 0; i < own.size(); ++i) {
    SCOPED_TRACE(own[i][0].text);
    EXPECT_EQ(shared[i][0].text, own[i][0].text);
    for (int c = 1; c <= 3; ++c) EXPECT_NEAR(shared[i][c].real, own[i][c].real, 1e-9 * std::fabs(own[i][c].real) + 1e-12);
    EXPECT_EQ(shared[i][4].text, own[i][4].text);
  }
  // The uncertain timing matters here: the short ReLU calls are not identified, and the
  // history's good alignment does not make them so.
  EXPECT_EQ(after_history.db().scalar("SELECT confidence LIKE 'not identified%' FROM layer_type_estimates "
                                      "WHERE job_id = 'late' AND metric = ? AND layer_type = 'ReLU'", {kShiftMetric}).integer,
            1);
  // The early job, whose own stretches are well placed, has its three layer types identified
  // (its untracked time, at 0.02, is known to within 0.002 but not to 5%).
  EXPECT_EQ(after_history.db().scalar("SELECT count(*) FROM layer_type_estimates WHERE job_id = 'early' AND metric = ? "
                                      "AND layer_type <> '(untracked)' AND confidence = 'identified'", {kShiftMetric}).integer,
            3);
}

// pp_fractions(uuid, 1) moves each window by its job's timing: 30 ms x sqrt(4) / 4 = 15 ms for
// the late job (four stretches hold its windows), and 0.1 ms (the floor) for the early job,
// whatever the other job's stretches are.
TEST(TimingShift, EachWindowMovesByItsOwnJobsTiming) {
  TimingShiftDb gpu;
  gpu.add_job("early", 0, 240, 5);
  gpu.add_windows(0, 250, 0.05);
  gpu.add_job("late", 260, 300, 7);
  gpu.add_windows(250, 310, 30);
  // How far the busy share of each job's windows moves: a window's layers' fractions, summed,
  // change by at most the move over the window (100 ms) when it shifts.
  const auto moved = [&](const char* job) {
    return gpu.db().scalar(
        "WITH a AS (SELECT ts_ms, sum(fraction) AS f FROM pp_fractions(?1, 0) WHERE job_id = ?2 AND layer <> '(untracked)' "
        "GROUP BY ts_ms), b AS (SELECT ts_ms, sum(fraction) AS f FROM pp_fractions(?1, 1) WHERE job_id = ?2 "
        "AND layer <> '(untracked)' GROUP BY ts_ms) SELECT max(abs(a.f - b.f)) * 100 FROM a JOIN b USING (ts_ms)",
        {kShiftUuid, job}).real;  // ms
  };
  EXPECT_LE(moved("early"), 0.1 + 1e-6);
  EXPECT_GT(moved("early"), 0.01);
  EXPECT_GT(moved("late"), 5.0);
  EXPECT_LE(moved("late"), 15.0 + 1e-6);
}

}  // namespace
