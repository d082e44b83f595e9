// The GPUs the align step aligns (align.sql's gpus_to_align): those whose newest sample is past
// their newest stretch, found by one seek per GPU, not by reading every stretch it ever had.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/embedded_sql.hpp"
#include "unit/test_db.hpp"

namespace {

constexpr int64_t kT0Ms = 1700000000000LL;
constexpr int kStretches = 20000;  // 10 s each: 2.3 days of one GPU

class GpusToAlign : public ::testing::Test {
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

  // The statement's GPUs, and the VM steps SQLite took to answer it (what it read).
  std::string gpus(int& steps) {
    const std::string sql(pp::named_sql("align", "gpus_to_align"));
    sqlite3_stmt* statement = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sql;
    std::string listed;
    while (sqlite3_step(statement) == SQLITE_ROW)
      listed += std::string(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0))) + " ";
    steps = sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_VM_STEP, 0);
    sqlite3_finalize(statement);
    return listed;
  }

  pp_test::TestDb db_;
};

TEST_F(GpusToAlign, AreThoseWithSamplesPastTheirNewestStretchFoundWithoutReadingTheirHistory) {
  add_gpu("GPU-a", 100);  // a new sample
  add_gpu("GPU-b", 0);    // everything aligned
  db_.exec("INSERT INTO pp_events_blocks(job_id, gpu_uuid, source_file, first_line, last_line, events, "
           "first_start_ns, last_start_ns, last_end_ns, impossible, data) VALUES ('job', 'GPU-c', 'f', 1, 1, 1, 0, 0, "
           "0, 0, x'')");
  db_.exec("INSERT INTO pp_refresh_series(uuid, metric, last_ms) VALUES ('GPU-c', 'DCGM_FI_PROF_SM_ACTIVE', 5)");
  int steps = 0;
  EXPECT_EQ(gpus(steps), "GPU-a GPU-c ");  // GPU-c: nothing aligned yet
  // Each GPU's newest stretch is one seek: a few dozen steps, where reading the 2 x 20,000
  // stretches takes over 100,000.
  EXPECT_LT(steps, 500);
}

}  // namespace
