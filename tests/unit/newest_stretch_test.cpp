// What a refresh reads of a GPU's aligned stretches (pp_alignment, 8,640 a day): the newest by
// one seek, never every stretch the GPU ever had. The GPUs the align step aligns (align.sql's
// gpus_to_align: those whose newest sample is past their newest stretch), and how far the fold
// step folds (refresh.sql's fold_windows: up to the newest stretch's last stored time).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/embedded_sql.hpp"
#include "unit/test_db.hpp"

namespace {

constexpr int64_t kT0Ms = 1700000000000LL;
constexpr int kStretches = 20000;  // 10 s each: 2.3 days of one GPU

class NewestStretch : public ::testing::Test {
 protected:
  void SetUp() override { db_.exec("SELECT pp_install_views()"); }

  // A GPU with events, kStretches stretches aligned through kT0Ms + kStretches * 10 s, and its
  // newest sample `after_ms` past that.
  void add_gpu(const std::string& uuid, int64_t after_ms) {
    const int64_t aligned_ms = kT0Ms + int64_t{kStretches} * 10000;
    db_.exec("INSERT INTO pp_events_blocks(job_id, gpu_uuid, source_file, first_line, last_line, events, "
             "first_start_ns, last_start_ns, last_end_ns, impossible, data) VALUES ('job', '" + uuid +
             "', 'f', 1, 1, 1, 0, 0, 0, 0, x'')");
    db_.exec("INSERT INTO pp_refresh_series(uuid, metric, last_ms) VALUES ('" + uuid + "', 'DCGM_FI_PROF_SM_ACTIVE', " +
             std::to_string(aligned_ms + after_ms) + ")");
    std::ostringstream sql;
    sql << "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < " << kStretches << ") "
        << "INSERT INTO pp_alignment(uuid, from_ms, through_ms, offset_ns, timing_ns, drift_ppm, samples, repeats, "
        << "skipped, moved, status) SELECT '" << uuid << "', " << kT0Ms << " + i * 10000, " << kT0Ms
        << " + (i + 1) * 10000, 120000000, 25000, 0, 100, 0, 0, 0, 'estimated' FROM k";
    db_.exec(sql.str());
  }

  // Runs the statements of `sql`, their parameters bound to 1 (:final, :margin, :revisable) or
  // to now (:now, s); returns every row's columns, and the VM steps SQLite took to
  // answer them (what they read).
  std::string run(std::string_view sql, int& steps) {
    std::string rows;
    steps = 0;
    const char* rest = sql.data();
    const char* const end = sql.data() + sql.size();
    while (rest < end) {
      sqlite3_stmt* statement = nullptr;
      EXPECT_EQ(sqlite3_prepare_v2(db_.get(), rest, static_cast<int>(end - rest), &statement, &rest), SQLITE_OK);
      if (!statement) break;  // the script's trailing comments
      for (int i = 1; i <= sqlite3_bind_parameter_count(statement); ++i)
        sqlite3_bind_int64(statement, i, std::string_view(sqlite3_bind_parameter_name(statement, i)) == ":now" ? 2000000000 : 1);
      while (sqlite3_step(statement) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(statement); ++c)
          rows += std::string(reinterpret_cast<const char*>(sqlite3_column_text(statement, c))) + " ";
      }
      steps += sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_VM_STEP, 0);
      sqlite3_finalize(statement);
    }
    return rows;
  }

  pp_test::TestDb db_;
};

TEST_F(NewestStretch, TheGpusToAlignAreThoseWithSamplesPastItFoundWithoutReadingTheirHistory) {
  add_gpu("GPU-a", 100);  // a new sample
  add_gpu("GPU-b", 0);    // everything aligned
  db_.exec("INSERT INTO pp_events_blocks(job_id, gpu_uuid, source_file, first_line, last_line, events, "
           "first_start_ns, last_start_ns, last_end_ns, impossible, data) VALUES ('job', 'GPU-c', 'f', 1, 1, 1, 0, 0, "
           "0, 0, x'')");
  db_.exec("INSERT INTO pp_refresh_series(uuid, metric, last_ms) VALUES ('GPU-c', 'DCGM_FI_PROF_SM_ACTIVE', 5)");
  int steps = 0;
  EXPECT_EQ(run(pp::named_sql("align", "gpus_to_align"), steps), "GPU-a GPU-c ");  // GPU-c: nothing aligned yet
  // Each GPU's newest stretch is one seek: a few dozen steps, where reading the 2 x 20,000
  // stretches takes over 100,000.
  EXPECT_LT(steps, 500);
}

TEST_F(NewestStretch, AFinalFoldGoesUpToItFoundWithoutReadingTheHistory) {
  add_gpu("GPU-a", 100);  // a sample past the newest stretch: not aligned, not folded
  db_.exec("INSERT INTO pp_intervals(uuid, metric, interval_ms) VALUES ('GPU-a', 'DCGM_FI_PROF_SM_ACTIVE', 100)");
  int steps = 0;
  run(pp::named_sql("refresh", "fold_windows"), steps);
  // uuid, after_ms, through_ms: the newest stretch's last stored time.
  EXPECT_EQ(run(pp::named_sql("refresh", "fold_windows_list"), steps),
            "GPU-a 0 " + std::to_string(kT0Ms + int64_t{kStretches} * 10000) + " ");
  run(pp::named_sql("refresh", "fold_windows"), steps);
  // One seek for the newest stretch, the last :revisable by their index: a few hundred steps,
  // where reading the 20,000 stretches takes some 240,000.
  EXPECT_LT(steps, 1000);
}

}  // namespace
