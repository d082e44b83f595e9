// The Prometheus tables through SQL, against the real servers that CTest starts
// (tests/fixtures/servers.py): what a host application linking the extension would see.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "unit/test_db.hpp"

namespace {

nlohmann::json test_env() {
  const char* dir = std::getenv("PP_TEST_ENV_DIR");
  std::ifstream in(std::string(dir ? dir : "") + "/env.json");
  if (!in) return nullptr;
  return nlohmann::json::parse(in);
}

class PromTables : public ::testing::Test {
 protected:
  void SetUp() override {
    env = test_env();
    if (env.is_null()) GTEST_SKIP() << "no test servers: run through ctest, which starts them";
    t0 = env["T0"].get<int64_t>();
  }
  void use(pp_test::TestDb& db, const std::string& url) {
    db.query("SELECT pp_config('prometheus_url', ?)", {url});
  }
  nlohmann::json env;
  int64_t t0 = 0;
};

TEST_F(PromTables, TwoConnectionsInTwoThreadsAtOnce) {
  const std::string url = env["prometheus_url"];
  const std::string uuid0 = env["UUID0"], uuid1 = env["UUID1"];
  auto sum_for = [&](const std::string& uuid, double* out) {
    pp_test::TestDb db;
    use(db, url);
    for (int round = 0; round < 5; ++round)
      *out = db.scalar("SELECT sum(value) FROM prom_samples('DCGM_FI_DEV_FB_USED{UUID=\"" + uuid +
                       "\"}', " + std::to_string(t0) + ", " + std::to_string(t0 + 599) + ")")
                 .real;
  };
  double a = 0, b = 0;
  std::thread first(sum_for, uuid0, &a), second(sum_for, uuid1, &b);
  first.join();
  second.join();
  // FB_USED = 1000 + i + 100*g over i = 0..599.
  EXPECT_DOUBLE_EQ(a, 600 * 1000 + 599 * 600 / 2);
  EXPECT_DOUBLE_EQ(b, 600 * 1100 + 599 * 600 / 2);
}

TEST_F(PromTables, IdenticalRequestsInOneStatementAreSentOnce) {
  pp_test::TestDb db;
  use(db, env["hostile_url"].get<std::string>() + "/count");
  // The counting server answers the query `requests_seen` with how many requests came before.
  auto requests_seen = [&] {
    return db.scalar("SELECT value FROM prom_range('requests_seen', 1700000000, 1700000000, 1)").real;
  };
  const double before = requests_seen();
  // 100 outer rows joined with the same range query.
  EXPECT_EQ(db.scalar("WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < 100) "
                      "SELECT count(*) FROM g, prom_range('hostile', 1700000000, 1700000001, 1)")
                .integer,
            200);
  const double after = requests_seen();
  EXPECT_EQ(after - before - 1, 1) << "the join sent more than one request";
  // A new statement asks again: the cache lives only while a statement runs.
  db.scalar("SELECT count(*) FROM prom_range('hostile', 1700000000, 1700000001, 1)");
  EXPECT_EQ(requests_seen() - after - 1, 1);
}

TEST_F(PromTables, StoredViewIsRefusedTempViewWorks) {
  const std::string file = ::testing::TempDir() + "/pp_untrusted.db";
  std::remove(file.c_str());
  {
    pp_test::TestDb author(file);
    author.exec("CREATE VIEW gpu_util AS SELECT * FROM prom_range('DCGM_FI_DEV_GPU_UTIL', 1700000000, 1700000010)");
  }
  pp_test::TestDb victim(file);
  use(victim, env["prometheus_url"]);
  EXPECT_EQ(victim.error("SELECT count(*) FROM gpu_util"), "unsafe use of virtual table \"prom_range\"");
  victim.exec("CREATE TEMP VIEW mine AS SELECT * FROM prom_range('DCGM_FI_DEV_GPU_UTIL', 1700000000, 1700000010, 1)");
  EXPECT_EQ(victim.scalar("SELECT count(*) FROM mine").integer, 3 * 11);
  std::remove(file.c_str());
}

}  // namespace
