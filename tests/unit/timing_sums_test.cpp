// The estimator's timing shift read from the running sums of pp_alignment_sums: a read of a
// GPU's newest windows reads only the stretches near them and at its jobs' starts, whatever the
// GPU's history, and gives every window the shift that reading every stretch gives, to the bit;
// so do the estimates. A row of pp_alignment edited by hand drops the sums from it on, and what
// the sums cannot hold is read one by one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "unit/test_db.hpp"

// What the align step runs after writing a GPU's stretches (src/attribution/stretch_sums.hpp,
// whose headers reach SQLite through the extension's routine table, which test_db.hpp's host
// calls must not include): called directly on stretches written as the align step writes them.
namespace pp {
void extend_alignment_sums(sqlite3* db, const std::string& uuid);
}

namespace {

constexpr int64_t kSumsMs = 1000000;
constexpr int64_t kSumsT0 = 1710000000LL * 1000000000LL;
constexpr const char* kSumsUuid = "GPU-5a115000-0000-4000-8000-000000000000";
constexpr const char* kSumsMetric = "DCGM_FI_PROF_SM_ACTIVE";
constexpr int kSumsStretches = 600;          // of 10 s: 100 minutes of history
constexpr int64_t kSumsWindowsFromS = 5820;  // the windows kept (the last three minutes)
constexpr int64_t kSumsEndS = 6000;

// Rows alike to the bit.
bool same_rows(const pp_test::Rows& a, const pp_test::Rows& b) {
  if (a.size() != b.size()) return false;
  for (size_t r = 0; r < a.size(); ++r) {
    if (a[r].size() != b[r].size()) return false;
    for (size_t c = 0; c < a[r].size(); ++c)
      if (a[r][c].type != b[r][c].type || a[r][c].integer != b[r][c].integer || a[r][c].text != b[r][c].text ||
          std::memcmp(&a[r][c].real, &b[r][c].real, sizeof(double)) != 0)
        return false;
  }
  return true;
}

// A GPU's tables as the align step leaves them, history and all: 10 s stretches with timings
// from 25 us to 1.76 ms (some 'no layers', the first three keeping a 250 ms window length of
// their own), the last three minutes of 100 ms windows, and four jobs: "long" from 53.3 s to the
// end, "old" long over, "recent" from 5700.25 s to 5850.75 s and "new" from 5905.5 s on.
class SumsDb {
 public:
  SumsDb() {
    db_.exec("SELECT pp_install_views()");
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<int64_t> timing(25000, 1760000), jitter(-200000, 200000);
    std::ostringstream stretches;
    for (int k = 0; k < kSumsStretches; ++k) {
      const int64_t from_ms = kSumsT0 / kSumsMs + k * 10000 + 40;
      const bool layers = k % 37 != 36;
      stretches << (k ? "," : "") << "('" << kSumsUuid << "', " << from_ms << ", " << from_ms + 10000 << ", "
                << 40 * kSumsMs + jitter(rng) << ", " << timing(rng) << ", " << (k % 5 ? std::to_string(timing(rng)) : "NULL")
                << ", 0, 100, 0, 0, 0, '" << (layers ? "estimated" : "no layers") << "', "
                << (k < 3 ? "250" : "NULL") << ")";
    }
    db_.exec("INSERT INTO pp_alignment(uuid, from_ms, through_ms, offset_ns, timing_ns, util_timing_ns, drift_ppm, "
             "samples, repeats, skipped, moved, status, window_ms) VALUES " + stretches.str());
    std::ostringstream windows, samples;
    for (int64_t i = kSumsWindowsFromS * 10 + 1; i <= kSumsEndS * 10; ++i) {
      const int64_t end = kSumsT0 + i * 100 * kSumsMs, ts = end / kSumsMs + 40;
      const char* sep = i > kSumsWindowsFromS * 10 + 1 ? "," : "";
      windows << sep << "('" << kSumsUuid << "', " << ts << ", " << end << ")";
      samples << sep << "('" << kSumsUuid << "', '" << kSumsMetric << "', " << ts << ", " << 0.3 + 0.2 * static_cast<double>(i % 7) / 7
              << ")";
    }
    db_.exec("INSERT INTO pp_windows(uuid, ts_ms, end_ns) VALUES " + windows.str());
    db_.exec("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES " + samples.str());
    db_.exec("INSERT INTO pp_intervals(uuid, metric, interval_ms, source) VALUES ('" + std::string(kSumsUuid) + "', '" +
             kSumsMetric + "', 100, 'estimated')");
    add_job("long", 53.3, kSumsEndS, 1);
    add_job("old", 2007.4, 4502.2, 2);
    add_job("recent", 5700.25, 5850.75, 3);
    add_job("new", 5905.5, kSumsEndS, 4);
  }

  pp_test::TestDb& db() { return db_; }
  sqlite3* get() { return db_.get(); }

  // Every window's fractions moved by its timing shift, later and earlier (pp_fractions(uuid,
  // 1) and (uuid, -1)): a shift a ns off moves a fraction by some 1e-8.
  pp_test::Rows moved() {
    return db_.query("SELECT timing_shift, ts_ms, job_id, layer, forward, fraction FROM pp_fractions(?1, 1) UNION ALL "
                     "SELECT timing_shift, ts_ms, job_id, layer, forward, fraction FROM pp_fractions(?1, -1) "
                     "ORDER BY 1, 2, 3, 4, 5",
                     {kSumsUuid});
  }

  // The same, with the rows of pp_alignment the reads took (its SELECTs on the table).
  pp_test::Rows moved_counting_rows(int64_t* rows) {
    *rows = 0;
    sqlite3_trace_v2(
        db_.get(), SQLITE_TRACE_ROW,
        [](unsigned, void* context, void* stmt, void*) {
          const char* sql = sqlite3_sql(static_cast<sqlite3_stmt*>(stmt));
          if (sql && std::strstr(sql, "FROM main.pp_alignment WHERE")) ++*static_cast<int64_t*>(context);
          return 0;
        },
        rows);
    pp_test::Rows out = moved();
    sqlite3_trace_v2(db_.get(), 0, nullptr, nullptr);
    return out;
  }

  void retain_minutes(int minutes) { db_.exec("SELECT pp_config('event_retention_minutes', " + std::to_string(minutes) + ")"); }
  void sum() { pp::extend_alignment_sums(db_.get(), kSumsUuid); }
  void drop_sums() { db_.exec("DELETE FROM pp_alignment_sums"); }
  int64_t sums_rows() { return db_.scalar("SELECT count(*) FROM pp_alignment_sums").integer; }

 private:
  // Calls of three layers one after another over [from_s, to_s), densely where windows are
  // kept, one every 20 s before (the span is what counts there).
  void add_job(const std::string& job, double from_s, double to_s, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> length(0.3, 3.0);
    std::ostringstream sql;
    sql << "INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, "
           "source_file, line) VALUES ";
    const char* const layers[][2] = {{"emb", "EmbeddingBag"}, {"fc", "Linear"}, {"act", "ReLU"}};
    double t = from_s * 1e9;
    for (int k = 0; t < to_s * 1e9; ++k) {
      const int64_t start = kSumsT0 + static_cast<int64_t>(t), end = start + static_cast<int64_t>(length(rng) * 1e6);
      sql << (k ? "," : "") << "('" << job << "', '" << kSumsUuid << "', '" << layers[k % 3][0] << "', '" << layers[k % 3][1]
          << "', 1, " << start << ", " << end << ", " << static_cast<double>(start) / 1e9 << ", "
          << static_cast<double>(end) / 1e9 << ", '" << job << ".jsonl', " << k + 1 << ")";
      t = static_cast<double>(end - kSumsT0) + (t < (kSumsWindowsFromS - 10) * 1e9 ? 20e9 : 2e6);
    }
    db_.exec(sql.str());
  }

  pp_test::TestDb db_;
};

// Every window's shift from the sums is the one every stretch read one by one gives, with or
// without the horizon a retention sets (3, 1 minutes), jobs starting inside stretches and
// overlapping; and the reads take some tens of the GPU's 584 stretches with layers, not all.
TEST(TimingSums, TheSumsGiveEveryStretchsShiftsReadingFew) {
  SumsDb gpu;
  for (int minutes : {0, 3, 1}) {
    SCOPED_TRACE("event_retention_minutes " + std::to_string(minutes));
    gpu.retain_minutes(minutes);
    gpu.drop_sums();
    int64_t every_rows = 0, summed_rows = 0;
    const pp_test::Rows every = gpu.moved_counting_rows(&every_rows);
    gpu.sum();
    ASSERT_EQ(gpu.sums_rows(), 584);
    const pp_test::Rows summed = gpu.moved_counting_rows(&summed_rows);
    ASSERT_GT(every.size(), 1000u);
    EXPECT_TRUE(same_rows(summed, every));
    EXPECT_EQ(every_rows, 2 * 584);  // (two reads)
    EXPECT_LE(summed_rows, 2 * 25);
  }
}

// The estimates (the estimator's state, built from the shifts) are the same to the bit.
TEST(TimingSums, TheEstimatesAreTheSameToTheBit) {
  SumsDb gpu;
  const std::string estimates =
      "SELECT job_id, layer_type, estimate, lower90, upper90, confidence FROM layer_type_estimates WHERE metric = '" +
      std::string(kSumsMetric) + "' ORDER BY job_id, layer_type";
  gpu.retain_minutes(3);
  const pp_test::Rows every = gpu.db().query(estimates);
  gpu.sum();
  const pp_test::Rows summed = gpu.db().query(estimates);
  ASSERT_GE(every.size(), 8u);
  EXPECT_TRUE(same_rows(summed, every));
}

// A stretch edited by hand drops the sums from it on, and the next align step sums them again:
// the shifts stay those of every stretch. A timing that is not whole (no alignment writes one),
// or ends out of order, leave the sums before it, and the read takes every stretch after it one
// by one; a window length kept inside a job's span, every stretch.
TEST(TimingSums, AHandEditDropsTheSumsFromItOn) {
  SumsDb gpu;
  gpu.retain_minutes(1);
  gpu.sum();
  const auto edit_agrees = [&](const std::string& edit, int64_t sums_left) {
    SCOPED_TRACE(edit);
    gpu.db().exec(edit);
    EXPECT_EQ(gpu.sums_rows(), sums_left);
    const pp_test::Rows after_edit = gpu.moved();
    gpu.sum();
    const pp_test::Rows summed_again = gpu.moved();
    gpu.drop_sums();
    const pp_test::Rows every = gpu.moved();
    EXPECT_TRUE(same_rows(after_edit, every));
    EXPECT_TRUE(same_rows(summed_again, every));
    gpu.sum();
  };
  const auto stretch = [](int k) { return std::to_string(kSumsT0 / kSumsMs + k * 10000 + 40); };
  // (stretch 300 is the 293rd with layers)
  edit_agrees("UPDATE pp_alignment SET timing_ns = 1700000 WHERE from_ms = " + stretch(300), 292);
  edit_agrees("UPDATE pp_alignment SET timing_ns = 1234.5 WHERE from_ms = " + stretch(300), 292);
  EXPECT_EQ(gpu.sums_rows(), 292);  // (the align step sums nothing from the fraction on)
  edit_agrees("UPDATE pp_alignment SET timing_ns = 1234 WHERE from_ms = " + stretch(300), 292);
  edit_agrees("UPDATE pp_alignment SET window_ms = 300 WHERE from_ms = " + stretch(300), 292);
  edit_agrees("DELETE FROM pp_alignment WHERE from_ms = " + stretch(300), 292);
  edit_agrees("UPDATE pp_alignment SET offset_ns = offset_ns + 20000000000 WHERE from_ms = " + stretch(400), 389);
  EXPECT_EQ(gpu.sums_rows(), 389);
}

// A row of pp_alignment_sums deleted by hand (the sums before and after it stay): where it is a
// job's first stretch (570: "recent" begins in it, 5: "long"), the rows around it must not
// place the job's stretches, and the shifts stay those of every stretch.
TEST(TimingSums, ASumsRowDeletedByHandLeavesTheShifts) {
  SumsDb gpu;
  const auto stretch = [](int k) { return std::to_string(kSumsT0 / kSumsMs + k * 10000 + 40); };
  for (int minutes : {0, 3}) {
    gpu.retain_minutes(minutes);
    gpu.drop_sums();
    const pp_test::Rows every = gpu.moved();
    for (int k : {570, 5, 581}) {
      SCOPED_TRACE("event_retention_minutes " + std::to_string(minutes) + ", stretch " + std::to_string(k));
      gpu.sum();
      gpu.db().exec("DELETE FROM pp_alignment_sums WHERE from_ms = " + stretch(k));
      ASSERT_EQ(gpu.sums_rows(), 583);
      EXPECT_TRUE(same_rows(gpu.moved(), every));
      gpu.drop_sums();
    }
  }
}

// Rows of pp_alignment_sums edited by hand so that an earlier one holds more than a later one
// (each alone as the align step could write it): the difference of the two rows that bound a
// job's stretches would wrap past 2^128, and gave "recent" a timing shift so large that
// pp_fractions(uuid, 1) had no row. The stretches are read one by one there instead.
TEST(TimingSums, SumsRowsOutOfOrderLeaveTheShifts) {
  SumsDb gpu;
  const auto stretch = [](int k) { return std::to_string(kSumsT0 / kSumsMs + k * 10000 + 40); };
  gpu.retain_minutes(3);
  const pp_test::Rows every = gpu.moved();
  gpu.sum();
  for (const char* column : {"t2", "at2", "a2t2", "util_t2", "length_ms"}) {
    SCOPED_TRACE(column);
    gpu.db().exec("SAVEPOINT edit; UPDATE pp_alignment_sums SET " + std::string(column) +
                  " = (SELECT " + column + " FROM pp_alignment_sums WHERE from_ms = " + stretch(599) +
                  ") WHERE from_ms BETWEEN " + stretch(560) + " AND " + stretch(575));
    const pp_test::Rows moved = gpu.moved();
    gpu.db().exec("ROLLBACK TO edit; RELEASE edit");
    EXPECT_EQ(moved.size(), every.size());
    EXPECT_TRUE(same_rows(moved, every));
  }
}

// A row of pp_alignment_sums edited to what the align step never writes is an error that names
// the GPU, the row and the column: its count numbers the stretches and its ends find a job's,
// so a negative count or a text read as 0 gave an internal error or other shifts.
TEST(TimingSums, AHandEditedSumsRowIsAnErrorThatNamesIt) {
  SumsDb gpu;
  gpu.retain_minutes(1);
  gpu.sum();
  const std::string last = gpu.db().scalar("SELECT max(from_ms) FROM pp_alignment_sums").text;
  const std::string row = "pp_alignment_sums' %s of GPU " + std::string(kSumsUuid) + " at from_ms " + last + " is ";
  const auto error_of = [&](const std::string& set) {
    gpu.db().exec("SAVEPOINT edit; UPDATE pp_alignment_sums SET " + set + " WHERE from_ms = " + last);
    const std::string error = gpu.db().error("SELECT count(*) FROM pp_fractions(?1, 1)", {kSumsUuid});
    gpu.db().exec("ROLLBACK TO edit; RELEASE edit");
    return error;
  };
  const auto named = [&](const char* column, const std::string& shown, const char* wanted) {
    char prefix[512];
    std::snprintf(prefix, sizeof prefix, row.c_str(), column);
    return "pp_fractions: " + std::string(prefix) + shown + " (" + wanted + "): edited by hand?";
  };
  const auto starts_with = [](const std::string& text, const std::string& prefix) {
    return text.compare(0, prefix.size(), prefix) == 0 ? ::testing::AssertionSuccess()
                                                       : ::testing::AssertionFailure() << text;
  };
  EXPECT_TRUE(starts_with(error_of("stretches = -5"), named("stretches", "-5", "a count of stretches, 1 or more")));
  EXPECT_TRUE(starts_with(error_of("stretches = 'abc'"), named("stretches", "'abc'", "a count of stretches, 1 or more")));
  EXPECT_TRUE(starts_with(error_of("at2 = x'0102'"), named("at2", "a BLOB of 2 bytes", "a 128-bit sum: a 16-byte BLOB")));
  EXPECT_TRUE(starts_with(error_of("longest_ns = -1"), named("longest_ns", "-1", "a timing of 0 to 1e15 ns")));
  EXPECT_TRUE(starts_with(error_of("longest_ns = 9007199254740993"),  // (2^53 + 1, as stored)
                          named("longest_ns", "9007199254740993", "a timing of 0 to 1e15 ns")));
  EXPECT_TRUE(starts_with(error_of("kept_windows = stretches + 1"),
                          named("kept_windows", "585", "a count of 0 to its stretches")));
  EXPECT_TRUE(starts_with(error_of("last_end_ns = 5"),
                          named("last_end_ns", "5", "a window end in ns in 1970-2116, first_end_ns or later")));
  // A sum no stretches' timings (each at most 1e15 ns) can reach: it made a timing of some
  // 1e19 ns, and every window moved past the jobs' spans.
  EXPECT_TRUE(starts_with(error_of("t2 = x'7fffffffffffffffffffffffffffffff'"),
                          named("t2", "a BLOB of 16 bytes",
                                "a sum of its stretches' timings squared: at most stretches x 1e30 ns^2")));
  EXPECT_TRUE(starts_with(error_of("util_a2t2 = x'7fffffffffffffffffffffffffffffff'"),
                          named("util_a2t2", "a BLOB of 16 bytes",
                                "a sum of length squared x timing squared: at most length_ms x at2")));
  EXPECT_EQ(error_of("kept_windows = kept_windows"), "");
}

// A database an earlier version made has no pp_alignment_sums: the estimator reads every
// stretch there, as that version did; installing creates the table (empty, with its triggers),
// the estimator reads every stretch until the align step sums them, and the shifts are the same.
TEST(TimingSums, ADatabaseWithoutTheSumsIsUpgraded) {
  SumsDb gpu;
  gpu.retain_minutes(1);
  gpu.sum();
  const pp_test::Rows before = gpu.moved();
  gpu.db().exec("DROP TABLE pp_alignment_sums; DROP TRIGGER pp_alignment_sums_insert; "
                "DROP TRIGGER pp_alignment_sums_update; DROP TRIGGER pp_alignment_sums_delete");
  // Read before anything installs the table (a read-only file is never upgraded), as before.
  EXPECT_TRUE(same_rows(gpu.moved(), before));
  gpu.db().exec("SELECT pp_install_views()");
  EXPECT_EQ(gpu.sums_rows(), 0);
  EXPECT_TRUE(same_rows(gpu.moved(), before));
  gpu.sum();
  EXPECT_EQ(gpu.sums_rows(), 584);
  EXPECT_TRUE(same_rows(gpu.moved(), before));
  gpu.db().exec("UPDATE pp_alignment SET timing_ns = timing_ns + 1 WHERE from_ms = " +
                std::to_string(kSumsT0 / kSumsMs + 590 * 10000 + 40));
  EXPECT_EQ(gpu.sums_rows(), 575);
}

}  // namespace
