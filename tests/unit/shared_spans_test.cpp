// The views that pair jobs whose spans overlap on a GPU (colocated_spans, pp_shared_jobs, and
// through them layer_metrics.note and job_overview.shared_with) find one job's partners by the
// range of starts their overlap allows, not by reading every job the GPU ran after it: a
// database that has folded thousands of jobs one after another on a few GPUs reads each job's
// report rows in the time of a few. And they give exactly the rows of the plain overlap test,
// whatever the spans hold.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "unit/test_db.hpp"

namespace {

constexpr int64_t kSpansT0 = 1700000000LL * 1000000000LL;
constexpr const char* kSpansGpu = "GPU-5a5e0000-0000-4000-8000-000000000000";

// The overlap test of colocated_spans and pp_shared_jobs without the bound that lets them read
// a range of starts (NOT INDEXED: every pair compared).
constexpr const char* kPlainSharedPairs =
    "SELECT a.job_id, b.job_id AS other, a.uuid FROM pp_gpu_spans AS a NOT INDEXED "
    "JOIN pp_gpu_spans AS b NOT INDEXED ON b.uuid = a.uuid AND b.job_id <> a.job_id "
    "WHERE a.uuid <> 'cpu' AND b.last_ns > a.first_ns AND b.first_ns < a.last_ns";
constexpr const char* kPlainColocatedSpans =
    "SELECT a.uuid, a.job_id, b.job_id, max(a.first_ns, b.first_ns) / 1e9, min(a.last_ns, b.last_ns) / 1e9 "
    "FROM pp_gpu_spans AS a NOT INDEXED JOIN pp_gpu_spans AS b NOT INDEXED ON b.uuid = a.uuid AND b.job_id > a.job_id "
    "WHERE a.uuid <> 'cpu' AND a.first_ns < b.last_ns AND b.first_ns < a.last_ns";

class SharedSpans : public ::testing::Test {
 protected:
  void SetUp() override { db_.exec("SELECT pp_install_views()"); }

  // `jobs` jobs of 2 s one after another on one GPU, 1 s apart; jobs "late-a" and "late-b"
  // overlap at the end.
  void insert_jobs_one_after_another(int jobs) {
    std::ostringstream sql;
    sql << "INSERT INTO pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns) VALUES ";
    for (int j = 0; j < jobs; ++j) {
      const int64_t first = kSpansT0 + int64_t{j} * 3000000000LL;
      sql << (j ? "," : "") << "('job" << 100000 + j << "', '" << kSpansGpu << "', " << first << ", " << first + 2000000000LL
          << ", 10, 1000)";
    }
    const int64_t end = kSpansT0 + int64_t{jobs} * 3000000000LL;
    sql << ",('late-a', '" << kSpansGpu << "', " << end << ", " << end + 2000000000LL << ", 10, 1000)"
        << ",('late-b', '" << kSpansGpu << "', " << end + 1000000000LL << ", " << end + 3000000000LL << ", 10, 1000)";
    db_.exec(sql.str());
  }

  // The VM steps SQLite takes to answer `sql`: what it reads, independent of the machine.
  int vm_steps(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sql;
    while (sqlite3_step(statement) == SQLITE_ROW) {
    }
    const int steps = sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_VM_STEP, 0);
    sqlite3_finalize(statement);
    return steps;
  }

  // Rows in one query and not the other.
  int64_t rows_differing(const std::string& a, const std::string& b) {
    return db_.scalar("SELECT count(*) FROM (" + a + " EXCEPT " + b + ")").integer +
           db_.scalar("SELECT count(*) FROM (" + b + " EXCEPT " + a + ")").integer;
  }

  pp_test::TestDb db_;
};

TEST_F(SharedSpans, AJobsPartnersAreFoundWithoutReadingTheGpusLaterJobs) {
  insert_jobs_one_after_another(4000);
  // The first job of 4,000: reading it costs what reading the last one costs, not the 4,000
  // spans that end after it starts.
  const int first = vm_steps("SELECT * FROM pp_shared_jobs WHERE job_id = 'job100000'");
  const int last = vm_steps("SELECT * FROM pp_shared_jobs WHERE job_id = 'job103999'");
  EXPECT_LT(first, 200) << first;
  EXPECT_LT(last, 200) << last;
  EXPECT_LT(vm_steps("SELECT * FROM colocated_spans WHERE job_a = 'job100000'"), 200);
  EXPECT_EQ(db_.scalar("SELECT group_concat(job_id || ':' || other) FROM pp_shared_jobs").text, "late-a:late-b,late-b:late-a");
  EXPECT_EQ(db_.scalar("SELECT job_a || ':' || job_b || ' ' || seconds FROM colocated_spans").text, "late-a:late-b 1.0");
}

TEST_F(SharedSpans, OddSpansGiveThePlainOverlapsRows) {
  insert_jobs_one_after_another(20);
  const std::string gpu = std::string("'") + kSpansGpu + "'";
  // Spans another program may have merged in: reversed ends, REAL and TEXT times, a span as
  // long as 64 bits allow and one whose length passes them, on the GPU of the jobs above and
  // on GPUs of their own.
  db_.exec("INSERT INTO pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns) VALUES "
           "('reversed', " + gpu + ", " + std::to_string(kSpansT0 + 9000000000LL) + ", " + std::to_string(kSpansT0) + ", 1, 1),"
           "('real', " + gpu + ", " + std::to_string(kSpansT0) + ".5, " + std::to_string(kSpansT0 + 4000000000LL) + ".25, 1, 1),"
           "('text-end', " + gpu + ", " + std::to_string(kSpansT0 + 30000000000LL) + ", 'later', 1, 1),"
           "('text-start', " + gpu + ", 'sooner', " + std::to_string(kSpansT0 + 5000000000LL) + ", 1, 1),"
           "('wide', 'GPU-wide', -9223372036854775808, 9223372036854775807, 1, 1),"
           "('inside', 'GPU-wide', 0, 1, 1, 1),"
           "('tail', 'GPU-wide', 9223372036854775806, 9223372036854775807, 1, 1),"
           "('long', 'GPU-long', 0, 4611686018427387904, 1, 1),"
           "('end', 'GPU-long', 4611686018427387903, 4611686018427387905, 1, 1)");
  const int64_t pairs = db_.scalar("SELECT count(*) FROM (" + std::string(kPlainSharedPairs) + ")").integer;
  EXPECT_GT(pairs, 10);
  EXPECT_EQ(rows_differing("SELECT * FROM pp_shared_jobs", kPlainSharedPairs), 0);
  EXPECT_EQ(rows_differing("SELECT uuid, job_a, job_b, t_from, t_through FROM colocated_spans", kPlainColocatedSpans), 0);
  // And job by job, as layer_metrics and job_overview read them.
  for (const auto& row : db_.query("SELECT DISTINCT job_id FROM pp_gpu_spans")) {
    const std::string job = "'" + row[0].text + "'";
    EXPECT_EQ(rows_differing("SELECT * FROM pp_shared_jobs WHERE job_id = " + job,
                             "SELECT * FROM (" + std::string(kPlainSharedPairs) + ") WHERE job_id = " + job),
              0)
        << job;
  }
}

}  // namespace
