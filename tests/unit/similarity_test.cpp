// Dedup by similarity: the comparison (src/stats/similarity.hpp) and pp_similar / pp_novel run in an
// in-process SQLite, including statements abandoned half-way (run under PP_SANITIZE for leaks).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "stats/similarity.hpp"
#include "unit/test_db.hpp"

namespace {

using pp::Components;
using pp::Tolerance;

TEST(Similarity, WithinTolerance) {
  const Tolerance five_percent{0.05, 0};
  EXPECT_TRUE(pp::within_tolerance(100, 104, five_percent));
  EXPECT_TRUE(pp::within_tolerance(104, 100, five_percent));
  EXPECT_FALSE(pp::within_tolerance(100, 106, five_percent));
  EXPECT_TRUE(pp::within_tolerance(3, 4, {0.25, 0}));  // the bound itself is within
  EXPECT_FALSE(pp::within_tolerance(0, 1e-9, five_percent));
  EXPECT_TRUE(pp::within_tolerance(0, 1e-9, {0.05, 1e-6}));
  EXPECT_TRUE(pp::within_tolerance(0.3, 0.3, {0, 0}));
  EXPECT_FALSE(pp::within_tolerance(0.3, std::nextafter(0.3, 1.0), {0, 0}));
  EXPECT_TRUE(pp::within_tolerance(INFINITY, INFINITY, five_percent));
  EXPECT_FALSE(pp::within_tolerance(INFINITY, 1e308, {10, 0}));
  EXPECT_FALSE(pp::within_tolerance(-INFINITY, INFINITY, {10, 10}));
  EXPECT_FALSE(pp::within_tolerance(NAN, NAN, {10, 10}));
}

TEST(Similarity, ParseComponents) {
  EXPECT_EQ(pp::parse_components("0.5"), (Components{0.5}));
  EXPECT_EQ(pp::parse_components(" [65, 24870, 0.31, null] "), (Components{65, 24870, 0.31, std::nullopt}));
  EXPECT_EQ(pp::parse_components("[]"), Components{});
  EXPECT_EQ(pp::parse_components("[-1e-7, 18446744073709551615]"), (Components{-1e-7, 18446744073709551615.0}));
  for (const char* bad : {"", "x", "[1,", "[\"1\"]", "[true]", "[[1]]", "{\"a\":1}", "null", "\"1\""})
    EXPECT_FALSE(pp::parse_components(bad)) << bad;
}

TEST(Similarity, Vectors) {
  const Tolerance t{0.05, 0};
  EXPECT_TRUE(pp::similar({1.0, 2.0, 3.0}, {1.01, 2.0, 3.1}, t));
  EXPECT_FALSE(pp::similar({1.0, 2.0, 3.0}, {1.01, 2.0, 3.2}, t));
  EXPECT_FALSE(pp::similar({1.0, 2.0}, {1.0, 2.0, 3.0}, t));  // lengths differ: not similar
  EXPECT_TRUE(pp::similar({}, {}, t));
  EXPECT_TRUE(pp::similar({1.0, std::nullopt}, {1.0, std::nullopt}, t));
  EXPECT_FALSE(pp::similar({1.0, std::nullopt}, {1.0, 0.0}, {1, 1}));
}

// The reference for pp_novel: 1 when a row is not similar to the last kept row.
std::vector<int> novel_reference(const std::vector<double>& values, double rel_tol) {
  std::vector<int> out;
  bool have = false;
  double kept = 0;
  for (double v : values) {
    if (have && pp::within_tolerance(v, kept, {rel_tol, 0})) {
      out.push_back(0);
    } else {
      out.push_back(1);
      kept = v;
      have = true;
    }
  }
  return out;
}

TEST(SimilarSql, NovelMatchesTheReferenceOnRandomWalks) {
  pp_test::TestDb db;
  db.exec("CREATE TABLE walk(part INTEGER, i INTEGER, v REAL, PRIMARY KEY (part, i))");
  std::mt19937_64 rng(42);
  std::normal_distribution<double> step(0, 0.02);
  std::vector<std::vector<double>> parts(5);
  for (size_t p = 0; p < parts.size(); ++p) {
    double v = 100.0 * (p + 1);
    for (int i = 0; i < 400; ++i) {
      v *= 1 + step(rng);
      parts[p].push_back(v);
      db.query("INSERT INTO walk VALUES (?, ?, ?)", {std::to_string(p), std::to_string(i), std::to_string(v)});
    }
  }
  for (double rel_tol : {0.0, 0.01, 0.05, 0.1}) {
    // Read back the stored values (REAL text round trip) for the reference.
    const auto rows = db.query("SELECT part, v, pp_novel(v, ?) OVER (PARTITION BY part ORDER BY i) FROM walk "
                               "ORDER BY part, i",
                               {std::to_string(rel_tol)});
    ASSERT_EQ(rows.size(), 2000u);
    std::vector<std::vector<double>> stored(parts.size());
    std::vector<std::vector<int>> got(parts.size());
    for (const auto& row : rows) {
      stored[row[0].integer].push_back(row[1].real);
      got[row[0].integer].push_back(static_cast<int>(row[2].integer));
    }
    for (size_t p = 0; p < parts.size(); ++p)
      EXPECT_EQ(got[p], novel_reference(stored[p], rel_tol)) << "part " << p << " rel_tol " << rel_tol;
  }
}

TEST(SimilarSql, AbandonedAndFailingStatementsReleaseTheirState) {
  pp_test::TestDb db;
  db.exec("CREATE TABLE t(i INTEGER PRIMARY KEY, v); "
          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) "
          "INSERT INTO t SELECT i, json_array(i % 7, i % 3) FROM n;");
  // Stepped twice, then finalized in the middle of the partition.
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db.get(), "SELECT pp_novel(v, 0.1) OVER (ORDER BY i) FROM t", -1, &stmt, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  sqlite3_finalize(stmt);
  // Errors half-way (a bad row, a sliding frame) still free the state; the leak checker of a
  // PP_SANITIZE build fails this test otherwise.
  db.exec("UPDATE t SET v = 'oops' WHERE i = 50");
  EXPECT_NE(db.error("SELECT pp_novel(v, 0.1) OVER (ORDER BY i) FROM t").find("argument 'v'"), std::string::npos);
  EXPECT_NE(db.error("SELECT pp_novel(i, 0.1) OVER (ORDER BY i ROWS 3 PRECEDING) FROM t").find("drops rows"),
            std::string::npos);
  EXPECT_EQ(db.scalar("SELECT sum(n) FROM (SELECT pp_novel(i, 0) OVER (ORDER BY i) AS n FROM t)").integer, 100);
}

TEST(SimilarSql, NovelRefusesAnExcludeBeforeItsFirstRow) {
  // Under EXCLUDE each row's frame is evaluated afresh, the first one empty: no row may come
  // back before the error, since its value would not be pp_novel's.
  pp_test::TestDb db;
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db.get(),
                               "SELECT pp_novel(x, 0.1) OVER (ORDER BY x ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW "
                               "EXCLUDE CURRENT ROW) FROM (SELECT 1 AS x UNION ALL SELECT 2)",
                               -1, &stmt, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_ERROR);
  EXPECT_NE(std::string(sqlite3_errmsg(db.get())).find("without EXCLUDE"), std::string::npos);
  sqlite3_finalize(stmt);
  // As a plain aggregate, over no rows too; a window over no rows has no rows.
  EXPECT_NE(db.error("SELECT pp_novel(1, 0.1) WHERE 0").find("use it as a window function"), std::string::npos);
  EXPECT_TRUE(db.query("SELECT pp_novel(1, 0.1) OVER (ORDER BY 1) WHERE 0").empty());
}

TEST(SimilarSql, SimilarFunction) {
  pp_test::TestDb db;
  EXPECT_EQ(db.scalar("SELECT pp_similar('[1, 2]', '[1.04, 2]', 0.05)").integer, 1);
  EXPECT_EQ(db.scalar("SELECT pp_similar('[1, 2]', '[1, 2, 3]', 0.05)").integer, 0);
  EXPECT_TRUE(db.scalar("SELECT pp_similar(NULL, 1, 0.05)").is_null());
  EXPECT_EQ(db.error("SELECT pp_similar(1, 2, -1)"), "pp_similar: argument 'rel_tol' must be >= 0");
}

}  // namespace
