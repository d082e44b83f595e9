// pp_deconvolve through SQL: the JSON result, groups, errors that name function and argument,
// and a large input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "unit/test_db.hpp"

namespace {

using nlohmann::json;

TEST(DeconvolveSql, TwoLayersThreeSamplesAsJson) {
  pp_test::TestDb db;
  db.exec(
      "CREATE TABLE t(s, l, w, v);"
      "INSERT INTO t VALUES ('w1','A',0.5,0.5),('w1','B',0.5,0.5),('w2','A',0.25,0.35),('w2','B',0.75,0.35),"
      "('w3','A',1.0,0.8);");
  const json r = json::parse(db.scalar("SELECT pp_deconvolve(s, l, w, v, 0, 1) FROM t").text);
  EXPECT_EQ(r["_system"]["samples"], 3);
  EXPECT_EQ(r["_system"]["unknowns"], 2);
  EXPECT_EQ(r["_system"]["dof"], 1);
  EXPECT_NEAR(r["A"]["estimate"].get<double>(), 0.8, 1e-12);
  EXPECT_NEAR(r["B"]["estimate"].get<double>(), 0.2, 1e-12);
  EXPECT_EQ(r["A"]["n"], 3);
  EXPECT_EQ(r["B"]["n"], 2);
  EXPECT_TRUE(r["A"]["identified"].get<bool>());
  EXPECT_FALSE(r["B"]["identified"].get<bool>());  // in 2 samples only
  EXPECT_TRUE(r["A"]["at_bound"].is_null());
}

TEST(DeconvolveSql, GroupsAreIndependentAndEmptyIsNull) {
  pp_test::TestDb db;
  db.exec(
      "CREATE TABLE t(metric, s, l, w, v);"
      "INSERT INTO t VALUES ('m1',1,'A',0.5,0.5),('m1',1,'B',0.5,0.5),('m1',2,'A',0.25,0.35),"
      "('m1',2,'B',0.75,0.35),('m1',3,'A',1,0.8),"
      "('m2',1,'A',0.5,3),('m2',1,'B',0.5,3),('m2',2,'A',0.25,2.5),('m2',2,'B',0.75,2.5),('m2',3,'A',1,4);");
  const auto rows = db.query(
      "SELECT metric, json_extract(d, '$.A.estimate'), json_extract(d, '$.B.estimate') "
      "FROM (SELECT metric, pp_deconvolve(s, l, w, v) AS d FROM t GROUP BY metric) ORDER BY metric");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NEAR(rows[0][1].real, 0.8, 1e-12);
  EXPECT_NEAR(rows[0][2].real, 0.2, 1e-12);
  EXPECT_NEAR(rows[1][1].real, 4, 1e-12);
  EXPECT_NEAR(rows[1][2].real, 2, 1e-12);
  EXPECT_TRUE(db.scalar("SELECT pp_deconvolve(s, l, w, v) FROM t WHERE 0").is_null());
}

TEST(DeconvolveSql, ErrorsNameFunctionAndArgument) {
  pp_test::TestDb db;
  db.exec("CREATE TABLE t(s, l, w, v); INSERT INTO t VALUES (1,'A',0.5,0.5),(1,'B',0.5,0.6);");
  EXPECT_EQ(db.error("SELECT pp_deconvolve(s, l, w, v) FROM t"),
            "pp_deconvolve: argument 'value' differs within sample 1: 0.5 and 0.6 (a sample has one value, the "
            "same on all its rows)");
  EXPECT_EQ(db.error("SELECT pp_deconvolve(1, 'A', 2, 0.5)"),
            "pp_deconvolve: argument 'weight' must be between 0 and 1 (the fraction of the sample's window)");
  EXPECT_EQ(db.error("SELECT pp_deconvolve(NULL, 'A', 0.5, 0.5)"), "pp_deconvolve: argument 'sample_id' is NULL");
  EXPECT_EQ(db.error("SELECT pp_deconvolve(1, NULL, 0.5, 0.5)"), "pp_deconvolve: argument 'layer_key' is NULL");
  EXPECT_EQ(db.error("SELECT pp_deconvolve(1, 'A', 'half', 0.5)"),
            "pp_deconvolve: argument 'weight' is not a number: 'half'");
  EXPECT_EQ(db.error("SELECT pp_deconvolve(s, l, w, 0.5, 0, v) FROM t"),
            "pp_deconvolve: argument 'upper' must be the same on every row of a group");
  EXPECT_NE(db.error("SELECT pp_deconvolve(1, 'A', 0.5)").find("wrong number of arguments"), std::string::npos);
}

// A few hundred thousand rows and 50 unknowns, through SQL, quickly.
TEST(DeconvolveSql, HundredsOfThousandsOfRowsAndFiftyUnknowns) {
  pp_test::TestDb db;
  // 6,000 samples x 50 layers = 300,000 rows; each layer's fraction varies independently.
  db.exec(
      "CREATE TABLE rows AS WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 5999),"
      " l(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM l WHERE k < 49)"
      " SELECT i AS sample, 'layer' || k AS layer, k AS k,"
      "        (1 + ((i * 7919 + k * 104729 + i * k * 31) % 97)) / 97.0 AS raw FROM s, l;"
      "CREATE TABLE sums AS SELECT sample, sum(raw) AS total FROM rows GROUP BY sample;"
      "CREATE TABLE input AS SELECT r.sample, r.layer, r.raw / s.total AS weight, r.k FROM rows r JOIN sums s USING (sample);"
      "CREATE TABLE y AS SELECT sample, sum(weight * (0.1 + k / 60.0)) AS value FROM input GROUP BY sample;");
  const auto started = std::chrono::steady_clock::now();
  const json r = json::parse(
      db.scalar("SELECT pp_deconvolve(sample, layer, weight, value, 0, 1) FROM input JOIN y USING (sample)").text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("300,000 rows, 50 unknowns: %.3f s\n", seconds);
  EXPECT_EQ(r["_system"]["samples"], 6000);
  EXPECT_EQ(r["_system"]["unknowns"], 50);
  for (int k = 0; k < 50; ++k)
    EXPECT_NEAR(r["layer" + std::to_string(k)]["estimate"].get<double>(), 0.1 + k / 60.0, 1e-9) << k;
#ifdef __SANITIZE_ADDRESS__
  EXPECT_LT(seconds, 15.0);  // AddressSanitizer (the asan stage of scripts/test.sh) costs a few times
#else
  EXPECT_LT(seconds, 3.0);  // about 0.3 s on an idle machine
#endif
}

TEST(DeconvolveSql, AnInterruptStopsTheSolveOfAThousandUnknowns) {
  pp_test::TestDb db;
  // 1,000 layer keys over 8,000 windows of two rows each: some two minutes of bounded least
  // squares, each of its steps factoring hundreds of columns. Ctrl-C in the shell (and
  // Connection.interrupt() in Python) waited for all of it.
  db.exec(
      "CREATE TABLE r AS WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < 7999)"
      " SELECT n AS s, 'L' || (n % 1000) AS k, 0.5 AS w, (n % 7) * 0.1 AS v FROM i"
      " UNION ALL SELECT n, 'L' || ((n * 7 + 3) % 1000), 0.3, (n % 7) * 0.1 FROM i;");
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    sqlite3_interrupt(db.get());
  });
  const auto started = std::chrono::steady_clock::now();
  const std::string error = db.error("SELECT pp_deconvolve(s, k, w, v, 0, 1) FROM r");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  interrupter.join();
  EXPECT_EQ(error, "interrupted");
  // The interrupt is noticed between the solve's steps: about a second here, a factorization of
  // 8,000 x 1,000 the longest.
#ifdef __SANITIZE_ADDRESS__
  EXPECT_LT(seconds, 60.0);
#else
  EXPECT_LT(seconds, 10.0);
#endif
}

}  // namespace
