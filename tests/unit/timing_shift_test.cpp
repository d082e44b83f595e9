// How far the estimator moves a job's windows to see what the timing's uncertainty does to its
// estimates: by the uncertainty of the stretches that hold that job's windows. A GPU's long,
// well aligned history says nothing about how well a new job's windows are placed, so it must
// not narrow that job's intervals. The tables are filled directly, as the align step leaves them
// (pp_alignment, pp_windows), so that each stretch's timing is what the test says.
#include <gtest/gtest.h>

#include <algorithm>
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
    // average() and covered() read events_ as one run in time order without overlaps.
    EXPECT_TRUE(events_.empty() || kShiftT0 + static_cast<int64_t>(t) >= events_.back().end) << job << " added out of order";
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
    for (auto e = first_ending_after(start); e != events_.end() && e->start < end; ++e) {
      const double w = std::min<double>(static_cast<double>(e->end), static_cast<double>(end)) -
                       std::max<double>(static_cast<double>(e->start), start);
      if (w > 0) sum += w * kShiftLayers[e->layer].sm, busy += w;
    }
    return (sum + (100.0 * kShiftMs - busy) * kShiftIdle) / (100.0 * kShiftMs);
  }
  bool covered(int64_t from_ns, int64_t to_ns) const {
    const auto e = first_ending_after(static_cast<double>(from_ns));
    return e != events_.end() && e->start < to_ns;
  }
  // Each window reads only its own events: a scan of every event per window was quadratic.
  std::vector<ShiftEvent>::const_iterator first_ending_after(double t) const {
    return std::partition_point(events_.begin(), events_.end(),
                                [t](const ShiftEvent& e) { return static_cast<double>(e.end) <= t; });
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

// How far pp_fractions(uuid, 1) moves a job's windows, in ms: the busy share of each of its
// windows (its layers' fractions, summed) changes by at most the move over the window (100 ms).
double busy_share_moved_ms(pp_test::TestDb& db, const char* job) {
  return db.scalar(
      "WITH a AS (SELECT ts_ms, sum(fraction) AS f FROM pp_fractions(?1, 0) WHERE job_id = ?2 AND layer <> '(untracked)' "
      "GROUP BY ts_ms), b AS (SELECT ts_ms, sum(fraction) AS f FROM pp_fractions(?1, 1) WHERE job_id = ?2 "
      "AND layer <> '(untracked)' GROUP BY ts_ms) SELECT max(abs(a.f - b.f)) * 100 FROM a JOIN b USING (ts_ms)",
      {kShiftUuid, job}).real;
}

// pp_fractions(uuid, 1) moves each window by its job's timing: 30 ms x sqrt(5) / 5 = 13.4 ms for
// the late job (five stretches hold its windows), and 0.1 ms (the floor) for the early job,
// whatever the other job's stretches are.
TEST(TimingShift, EachWindowMovesByItsOwnJobsTiming) {
  TimingShiftDb gpu;
  gpu.add_job("early", 0, 240, 5);
  gpu.add_windows(0, 250, 0.05);
  gpu.add_job("late", 260, 300, 7);
  gpu.add_windows(250, 310, 30);
  EXPECT_LE(busy_share_moved_ms(gpu.db(), "early"), 0.1 + 1e-6);
  EXPECT_GT(busy_share_moved_ms(gpu.db(), "early"), 0.01);
  EXPECT_GT(busy_share_moved_ms(gpu.db(), "late"), 5.0);
  EXPECT_LE(busy_share_moved_ms(gpu.db(), "late"), 13.5);
}

// With event_retention_minutes = M, a window moves by the timing of its job's stretches that
// begin within M minutes of it, never later ones (retention keeps the window as the estimator's
// state M minutes after it, and later stretches must not change what it kept). The late job's
// calls reach 15 stretches placed to 30 ms, the last by the job's last call alone: weighing as
// much of the job's span as it covers (a tenth of a second), it counts for almost nothing, and
// the job's first window moves by about 30 ms / sqrt(14) = 8.0 ms without retention, and by
// 30 ms / sqrt(7) = 11.3 ms with one minute kept (its own stretch and the six that begin within
// a minute of it). Moved earlier, the window that begins where the job begins has the rest of it
// in the job's span: its fractions, untracked included, sum to 1 - move / 100 ms.
TEST(TimingShift, AWindowIsTimedByTheStretchesWithinTheRetentionOfIt) {
  TimingShiftDb gpu;
  gpu.add_job("late", 260, 400, 7);
  gpu.add_windows(250, 410, 30);
  const std::string first_window_ms = std::to_string((kShiftT0 + 260100 * kShiftMs) / kShiftMs + kStoredLateMs);
  const char* in_span = "SELECT sum(fraction) FROM pp_fractions(?1, ?2) WHERE job_id = 'late' AND ts_ms = ?3";
  EXPECT_NEAR(gpu.db().scalar(in_span, {kShiftUuid, "0", first_window_ms}).real, 1.0, 1e-9);
  const auto moved_earlier = [&] { return gpu.db().scalar(in_span, {kShiftUuid, "-1", first_window_ms}).real; };
  EXPECT_NEAR(moved_earlier(), 1 - 30.0 / std::sqrt(14.0) / 100, 1e-4);  // 15 alike: 0.9225
  gpu.db().exec("SELECT pp_config('event_retention_minutes', 1)");
  // (The first stretch weighs 10 s where the others, their windows reaching 0.1 s before them, weigh 10.1 s.)
  EXPECT_NEAR(moved_earlier(), 1 - 30.0 / std::sqrt(7.0) / 100, 1e-5);
}

// A job whose windows were aligned before its events came (its stretches have no layers: their
// offset was only predicted from their neighbours) is not taken as placed to the 0.1 ms floor:
// it moves by the GPU's timing over all its stretches (30 ms / sqrt(24) = 6.1 ms here).
TEST(TimingShift, AJobAlignedBeforeItsEventsCameTakesTheGpusTiming) {
  TimingShiftDb gpu;
  gpu.add_job("early", 0, 240, 5);
  gpu.add_windows(0, 250, 30);
  gpu.add_windows(250, 310, 30);  // no layers in them yet
  gpu.add_job("late", 260, 300, 7);
  EXPECT_EQ(gpu.db().scalar("SELECT count(*) FROM pp_alignment WHERE status = 'no layers'").integer, 7);
  EXPECT_GT(busy_share_moved_ms(gpu.db(), "late"), 1.0);
  EXPECT_LE(busy_share_moved_ms(gpu.db(), "late"), 6.2);
}

// A GPU with one instant metric (FB_USED, the memory in use when DCGM reads it: a sample is that
// moment, spread over 0.4 ms, how far the align step knows it).
class InstantGpu {
 public:
  static constexpr const char* kUuid = "GPU-7a11e000-0000-4000-8000-0000000000ff";
  // Samples at the end of each of the first `windows` 100 ms windows, stored 40 ms later.
  explicit InstantGpu(int windows) {
    db_.exec("SELECT pp_install_views()");
    std::ostringstream ends, values;
    for (int i = 1; i <= windows; ++i) {
      const int64_t end = kShiftT0 + i * 100 * kShiftMs, ts = end / kShiftMs + kStoredLateMs;
      ends << (i > 1 ? "," : "") << "('" << kUuid << "', " << ts << ", " << end << ")";
      values << (i > 1 ? "," : "") << "('" << kUuid << "', 'DCGM_FI_DEV_FB_USED', " << ts << ", 9000)";
    }
    db_.exec("INSERT INTO pp_windows(uuid, ts_ms, end_ns) VALUES " + ends.str());
    db_.exec("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES " + values.str());
    db_.exec("INSERT INTO pp_intervals(uuid, metric, interval_ms, source) VALUES ('" + std::string(kUuid) +
             "', 'DCGM_FI_DEV_FB_USED', 100, 'user')");
  }
  // A stretch of 10 s from `from_s`, its offset known to timing_ms.
  void add_stretch(int from_s, double timing_ms) {
    const int64_t from_ms = kShiftT0 / kShiftMs + from_s * 1000 + kStoredLateMs;
    db_.exec("INSERT INTO pp_alignment(uuid, from_ms, through_ms, offset_ns, timing_ns, drift_ppm, samples, repeats, "
             "skipped, moved, status) VALUES ('" + std::string(kUuid) + "', " + std::to_string(from_ms) + ", " +
             std::to_string(from_ms + 10000) + ", " + std::to_string(kStoredLateMs * kShiftMs) + ", " +
             std::to_string(std::llround(timing_ms * 1e6)) + ", 0, 100, 0, 0, 0, '" +
             (timing_ms < 1 ? "estimated" : "poorly determined") + "')");
  }
  // One call of job's layer over [start, end) ns after the recording's start.
  void add_call(const std::string& job, int64_t start, int64_t end) {
    db_.exec("INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, "
             "source_file, line) VALUES ('" + job + "', '" + kUuid + "', 'step', 'Linear', 1, " +
             std::to_string(kShiftT0 + start) + ", " + std::to_string(kShiftT0 + end) + ", 0, 0, '" + job + ".jsonl', 1)");
  }
  // The fraction of the sample ending at end_ms (after the start) that job's layer got.
  double fraction(const std::string& job, int64_t end_ms, int shift) {
    const auto rows = db_.query("SELECT fraction FROM pp_fractions(?, " + std::to_string(shift) + ") WHERE ts_ms = " +
                                    std::to_string(kShiftT0 / kShiftMs + end_ms + kStoredLateMs) +
                                    " AND job_id = ? AND layer = 'step'",
                                {kUuid, job});
    return rows.empty() ? 0 : rows[0][0].real;
  }

 private:
  pp_test::TestDb db_;
};

// An instant's spread reaches 0.2 ms past its moment: an instant that a move takes to within
// that of a job's first call moves as that job's windows do. Job A runs for the first 10 s,
// placed to 0.05 ms; job B from 30.1 ms after the sample at 12 s, its stretch uncertain by
// 30 ms: moved by B's 30 ms, that sample's spread covers 0.1 ms of B's call (a quarter).
TEST(TimingShift, AnInstantTakesTheTimingOfTheJobItsSpreadReaches) {
  InstantGpu gpu(200);
  gpu.add_stretch(0, 0.05);
  gpu.add_stretch(10, 30);
  gpu.add_call("A", 500 * kShiftMs, 9000 * kShiftMs);
  gpu.add_call("B", 12000 * kShiftMs + 30100000, 19000 * kShiftMs);
  EXPECT_EQ(gpu.fraction("B", 12000, 0), 0);
  EXPECT_NEAR(gpu.fraction("B", 12000, 1), 0.25, 1e-9);
}

// The events an instant's spread reaches past the last sample are read: a call that starts 0.1 ms
// after the last sample's moment has a quarter of it.
TEST(TimingShift, AnInstantReadsTheCallsItsSpreadReaches) {
  InstantGpu gpu(20);
  gpu.add_call("B", 2000 * kShiftMs + 100000, 3000 * kShiftMs);
  EXPECT_NEAR(gpu.fraction("B", 2000, 0), 0.25, 1e-9);
}

// A job's last stretch, which holds its last 2 s and then the idle GPU, is poorly placed (30 ms:
// idle windows have no layer to place them by); the four before it are placed to 0.05 ms. That
// stretch moves only its own windows, a twentieth of the job's: weighted by the span each covers
// the job's windows move by sqrt(4 x (10 s x 0.05)^2 + (2 s x 30)^2) / 42 s = 1.4 ms, where the
// five stretches alike would move every window by 30 / 5 = 6 ms (and drop the job's rows from
// identified when a real recording's job ends).
TEST(TimingShift, AJobsLastStretchWeighsAsTheShareOfItsSpanItHolds) {
  TimingShiftDb gpu;
  gpu.add_job("ends", 260, 302, 7);
  gpu.add_windows(250, 300, 0.05);
  gpu.add_windows(300, 340, 30);
  EXPECT_EQ(gpu.db().scalar("SELECT count(*) FROM pp_alignment WHERE status = 'poorly determined'").integer, 1);
  EXPECT_GT(busy_share_moved_ms(gpu.db(), "ends"), 1.0);
  EXPECT_LT(busy_share_moved_ms(gpu.db(), "ends"), 2.0);
}

}  // namespace
