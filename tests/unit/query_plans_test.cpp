// Query plans: a table function gives the same rows under every plan SQLite may choose, IN
// lists reach a table whole, and the regular expressions sent to Prometheus for push-down mean
// what SQL means (tests/sql/query_plans.sql and prom_query_plans.sql run the same through the
// shell against real servers).
#include <gtest/gtest.h>
#include <re2/re2.h>

#include <string>
#include <vector>

#include "prometheus/promql_regex.hpp"
#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

using pp::regex_matching_exactly;
using pp::regex_means_the_same_in_go;
using pp_test::TempDir;

// The opcodes of a statement's bytecode, one per EXPLAIN row.
std::vector<std::string> opcodes(pp_test::TestDb& db, const std::string& sql, const std::vector<std::string>& params) {
  std::vector<std::string> out;
  for (const auto& row : db.query("EXPLAIN " + sql, params)) out.push_back(row[1].text);
  return out;
}

int count_of(const std::vector<std::string>& v, const std::string& s) {
  int n = 0;
  for (const auto& x : v) n += x == s;
  return n;
}

// Two jobs of 8 events each in one file.
std::string two_jobs(TempDir& dir) {
  return dir.write("run/rank0.jsonl", pp_test::header_line("a") + "\n" + pp_test::lines(0, 8) +
                                          pp_test::event_line(8, "b") + "\n" + pp_test::event_line(9, "b") + "\n");
}

TEST(QueryPlans, JobIdInListIsReadInOnePass) {
  TempDir dir;
  const std::string file = two_jobs(dir);
  pp_test::TestDb db;
  const std::string in_query =
      "SELECT count(*) FROM layer_events(?1) WHERE job_id IN ('x1','x2','x3','x4','x5','x6','x7','x8','x9','x10',"
      "'x11','x12','x13','x14','x15','x16','x17','x18','job1','b')";
  EXPECT_EQ(db.scalar(in_query, {file}).integer, 10);
  // The list is handed to xFilter whole (OP_VInitIn) and the table is filtered once.
  const auto ops = opcodes(db, in_query, {file});
  EXPECT_EQ(count_of(ops, "VInitIn"), 1);
  EXPECT_EQ(count_of(ops, "VFilter"), 1);
}

TEST(QueryPlans, JobIdInListOfOtherTypesIsLeftToSqlite) {
  TempDir dir;
  const std::string file = two_jobs(dir);
  pp_test::TestDb db;
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1) WHERE job_id IN ('b', 7, NULL)", {file}).integer, 2);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1) WHERE job_id IN (NULL)", {file}).integer, 0);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1) WHERE job_id COLLATE NOCASE IN ('B', 'JOB1')", {file}).integer, 10);
}

TEST(QueryPlans, OrOfVisibleColumnsIsNotAMissingArgument) {
  TempDir dir;
  const std::string file = two_jobs(dir);
  pp_test::TestDb db;
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1) WHERE layer = 'top_l.0' OR layer = 'top_l.1'", {file}).integer, 6);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_jobs(?1) WHERE job_id = 'a' OR pid = 0", {file}).integer, 1);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events WHERE path IS ?1", {file}).integer, 10);
  EXPECT_EQ(db.error("SELECT count(*) FROM layer_events WHERE layer = 'a' OR layer = 'b'"),
            "layer_events: missing required argument 'path'");
}

TEST(QueryPlans, ArgumentFromALaterTableIsUsedOrRefused) {
  TempDir dir;
  const std::string file = two_jobs(dir);
  pp_test::TestDb db;
  db.exec("CREATE TABLE files(p TEXT)");
  db.query("INSERT INTO files VALUES (?1), (?1)", {file});
  // SQLite reads `files` first, whichever is named first.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(f.p), files AS f").integer, 20);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM files AS f, layer_events(f.p)").integer, 20);
  // A join order that cannot supply it: SQLite offers no plan with the argument.
  EXPECT_EQ(db.error("SELECT count(*) FROM layer_events(f.p) CROSS JOIN files AS f"),
            "layer_events: missing required argument 'path'");
}

TEST(QueryPlans, RegexOfAnInListMatchesExactlyItsValues) {
  const std::vector<std::string> values = {"DCGM_FI_DEV_GPU_UTIL", "a.b", "a|b", ".*", "x\"y", "x\\y",
                                           "x{2}", "(?i)", "tab\there", "caf\xc3\xa9", "[a-z]", "$^"};
  const auto regex = regex_matching_exactly(values);
  ASSERT_TRUE(regex);
  const RE2 re(*regex);  // RE2 reads escaped punctuation and \xHH as Go's regexp does
  ASSERT_TRUE(re.ok()) << re.error();
  for (const auto& v : values) EXPECT_TRUE(RE2::FullMatch(v, re)) << v;
  for (const std::string other : {"aXb", "ab", "", "xy", "x\\\\y", "xx", "b", "DCGM_FI_DEV_GPU_UTILX", "cafe", "a"})
    EXPECT_FALSE(RE2::FullMatch(other, re)) << other;
  EXPECT_EQ(*regex_matching_exactly({"a_1", "b:c"}), "a_1|b\\:c");
  EXPECT_FALSE(regex_matching_exactly({}));
  EXPECT_FALSE(regex_matching_exactly({"ok", "\xff"}));  // Go matches runes: not UTF-8, not pushed
}

TEST(QueryPlans, RegexpIsPushedDownOnlyWhereGoReadsItTheSame) {
  for (const char* same : {"DCGM_.*", "^DCGM_FI_DEV_G", "UTIL$", "(?i)gpu_util|fb_used", "a\\.b", "[[:alpha:]]+",
                           "\\d\\s\\w\\b", "(?:a|b)+?", "(?s-i:x)", "[^_]"})
    EXPECT_TRUE(regex_means_the_same_in_go(same)) << same;
  for (const char* differs : {"GPU_UTI\\C", "\\pL", "\\p{Greek}", "a{2}", "(?P<n>a)", "(?<n>a)", "\\Q.\\E", "\\1",
                              "caf\xc3\xa9", "tab\there", "(", "a**", "\\", "(?)", "(?x)a"})
    EXPECT_FALSE(regex_means_the_same_in_go(differs)) << differs;
  EXPECT_FALSE(regex_means_the_same_in_go(std::string("a\0b", 3)));
  EXPECT_FALSE(regex_means_the_same_in_go(std::string("(?i\0)", 5)));
}

// A statement run between the rows of another (a loop that queries as it reads) does not
// renumber the other's calls: the branches of its MULTI-INDEX OR, two calls reading different
// files whose rows lie on the same lines, each keep their rows.
TEST(QueryPlans, AStatementRunBetweenTheRowsOfAnOrLosesNone) {
  TempDir dir;
  const std::string a = dir.write("a/rank0.jsonl", pp_test::header_line("a") + "\n" + pp_test::lines(0, 4, "a"));
  const std::string b = dir.write("b/rank0.jsonl", pp_test::header_line("b") + "\n" + pp_test::lines(0, 4, "b"));
  pp_test::TestDb db;
  db.exec("CREATE TEMP TABLE other(path TEXT); INSERT INTO other VALUES ('" + b + "')");
  const std::string query =
      "SELECT job_id FROM layer_events WHERE (path = ?1 AND t_start > 0) OR (path = (SELECT path FROM other) AND "
      "forward IS NOT NULL)";
  EXPECT_EQ(db.query(query, {a}).size(), 8u);  // (alone: the 4 events of each file)
  sqlite3_stmt* reading = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db.get(), query.c_str(), -1, &reading, nullptr), SQLITE_OK);
  sqlite3_bind_text(reading, 1, a.c_str(), -1, SQLITE_TRANSIENT);
  int rows = 0;
  while (sqlite3_step(reading) == SQLITE_ROW) {
    if (++rows == 2) {
      EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1)", {b}).integer, 4);
    }
  }
  sqlite3_finalize(reading);
  EXPECT_EQ(rows, 8);
}

}  // namespace
