// The pairs of jobs the estimator joins into one system (JobSharing::read, its statement
// job_sharing.sql's overlapping_pairs) are those whose spans on a GPU overlap: found by the range
// of starts the overlap allows, so that a GPU that ran thousands of jobs one after another costs
// each job its neighbours, not every other job; and exactly the pairs of the plain overlap test,
// whatever the spans hold.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>

#include "core/embedded_sql.hpp"
#include "unit/test_db.hpp"

namespace {

constexpr int64_t kSharingT0 = 1700000000LL * 1000000000LL;

// The overlap test without the bound (NOT INDEXED: every pair of a GPU compared).
constexpr const char* kPlainPairs =
    "SELECT a.job_id, b.job_id FROM pp_gpu_spans AS a NOT INDEXED "
    "JOIN pp_gpu_spans AS b NOT INDEXED ON b.uuid = a.uuid AND b.job_id > a.job_id "
    "WHERE a.uuid <> 'cpu' AND a.first_ns < b.last_ns AND b.first_ns < a.last_ns";

class JobSharingPairs : public ::testing::Test {
 protected:
  // (The extension's tables: any statement that loads it creates them.)
  void SetUp() override { db_.exec("SELECT pp_install_views()"); }

  // The statement as JobSharing::read runs it, without its ';' (to be a subquery here).
  static std::string pairs_sql() {
    std::string sql(pp::named_sql("job_sharing", "overlapping_pairs"));
    sql.erase(sql.find_last_not_of(" \n;") + 1);
    return sql;
  }

  void insert(const std::string& job, const std::string& uuid, const std::string& first, const std::string& last) {
    db_.exec("INSERT INTO pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns) VALUES ('" + job + "', '" +
             uuid + "', " + first + ", " + last + ", 1, 1)");
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

  int64_t count(const std::string& sql) { return db_.scalar("SELECT count(*) FROM (" + sql + ")").integer; }

  // Rows in one query and not the other, and the rows of each (a pair twice would be a
  // difference of counts).
  void expect_same_rows(const std::string& a, const std::string& b) {
    EXPECT_EQ(count(a + " EXCEPT " + b), 0);
    EXPECT_EQ(count(b + " EXCEPT " + a), 0);
    EXPECT_EQ(count(a), count(b));
  }

  pp_test::TestDb db_;
};

TEST_F(JobSharingPairs, AGpuOfThousandsOfJobsOneAfterAnotherIsReadJobByJob) {
  // 4,000 jobs of 2 s, 1 s apart, then two that overlap: 4,002 spans, one pair.
  std::ostringstream sql;
  sql << "INSERT INTO pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns) VALUES ";
  for (int j = 0; j < 4000; ++j) {
    const int64_t first = kSharingT0 + int64_t{j} * 3000000000LL;
    sql << (j ? "," : "") << "('job" << 100000 + j << "', 'GPU-a', " << first << ", " << first + 2000000000LL << ", 10, 1)";
  }
  const int64_t end = kSharingT0 + 4000 * 3000000000LL;
  sql << ",('late-a', 'GPU-a', " << end << ", " << end + 2000000000LL << ", 10, 1)"
      << ",('late-b', 'GPU-a', " << end + 1000000000LL << ", " << end + 3000000000LL << ", 10, 1)";
  db_.exec(sql.str());
  // Every pair of the GPU compared took 64 million steps; by the range of starts, about 50 per
  // span.
  const int steps = vm_steps(pairs_sql());
  EXPECT_LT(steps, 200 * 4002) << steps;
  EXPECT_EQ(db_.scalar("WITH p(a, b) AS (" + pairs_sql() + ") SELECT group_concat(a || ':' || b) FROM p").text,
            "late-a:late-b");
}

TEST_F(JobSharingPairs, RandomSpansGiveThePlainOverlapsPairs) {
  std::mt19937_64 random(7);
  const char* gpus[] = {"GPU-a", "GPU-b", "cpu"};
  for (int round = 0; round < 20; ++round) {
    db_.exec("DELETE FROM pp_gpu_spans");
    // Starts on a coarse grid (many equal), lengths of 0 to 4 steps (zero-length spans, and
    // spans that touch: one's last the other's first, which do not overlap).
    const int spans = 20 + static_cast<int>(random() % 60);
    for (int s = 0; s < spans; ++s) {
      const int64_t first = kSharingT0 + static_cast<int64_t>(random() % 40) * 1000;
      const int64_t last = first + static_cast<int64_t>(random() % 5) * 1000;
      insert("j" + std::to_string(s), gpus[random() % 3], std::to_string(first), std::to_string(last));
    }
    const int64_t pairs = count(kPlainPairs);
    EXPECT_GT(pairs, 0);
    expect_same_rows(pairs_sql(), kPlainPairs);
  }
}

TEST_F(JobSharingPairs, OddSpansGiveThePlainOverlapsPairs) {
  // Spans at the ends of 64 bits, one whose length passes them, reversed ends, REAL and TEXT
  // times (another program's rows), touching spans, and the same spans on 'cpu', which never
  // pair.
  const std::string t0 = std::to_string(kSharingT0);
  for (const char* uuid : {"GPU-a", "cpu"}) {
    insert("wide", uuid, "-9223372036854775808", "9223372036854775807");
    insert("inside", uuid, "0", "1");
    insert("tail", uuid, "9223372036854775806", "9223372036854775807");
    insert("head", uuid, "-9223372036854775808", "-9223372036854775807");
    insert("reversed", uuid, std::to_string(kSharingT0 + 9000), t0);
    insert("real", uuid, t0 + ".5", std::to_string(kSharingT0 + 4000) + ".25");
    insert("text-end", uuid, std::to_string(kSharingT0 + 3000), "'later'");
    insert("text-start", uuid, "'sooner'", std::to_string(kSharingT0 + 5000));
    insert("touch-1", uuid, t0, std::to_string(kSharingT0 + 1000));
    insert("touch-2", uuid, std::to_string(kSharingT0 + 1000), std::to_string(kSharingT0 + 2000));
  }
  insert("long", "GPU-long", "0", "4611686018427387904");
  insert("end", "GPU-long", "4611686018427387903", "4611686018427387905");
  insert("beyond", "GPU-long", "-4611686018427387905", "-4611686018427387903");
  insert("min", "GPU-long", "-9223372036854775808", "-4611686018427387904");
  EXPECT_GT(count(kPlainPairs), 10);
  expect_same_rows(pairs_sql(), kPlainPairs);
}

}  // namespace
