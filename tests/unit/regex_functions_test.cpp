// regexp and prom_match as SQL calls them: an invalid pattern is an error naming the function
// and argument, and quotes only so much of a long pattern.
#include <gtest/gtest.h>

#include <string>

#include "unit/test_db.hpp"

namespace {

TEST(RegexFunctions, AnInvalidPatternIsNamedAndALongOneCutShort) {
  pp_test::TestDb db;
  EXPECT_EQ(db.error("SELECT 'x' REGEXP '('"),
            "regexp: argument 'pattern' is not a valid regular expression: missing ): (");
  // RE2 quotes the pattern from where it failed: 100,000 bytes of it were echoed (up to the
  // 4,000 bytes every message is cut to) where 200 tell what is wrong.
  const std::string error = db.error("SELECT 'x' REGEXP '(' || printf('%.*c', 100000, 'a')");
  EXPECT_EQ(error.rfind("regexp: argument 'pattern' is not a valid regular expression: missing ): (aaaa", 0), 0u)
      << error;
  EXPECT_LE(error.size(), 300u) << error;
  EXPECT_EQ(error.substr(error.size() - 4), "a...");
  EXPECT_EQ(db.error("SELECT prom_match('[', 'x')"),
            "prom_match: argument 'regex' is not a valid regular expression: missing ]: [");
}

}  // namespace
