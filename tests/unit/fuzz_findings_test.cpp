// What the fuzzers (fuzz/) found, kept as tests so the fixes stay: each case names its target.
// The inputs are also in fuzz/corpus/TARGET, where every fuzz run starts.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "ext/promql.hpp"
#include "ext/time_parse.hpp"

namespace {

std::optional<std::string> push(const std::string& selector, const std::string& op = "=") {
  bool empty = false;
  return pp::add_metric_matcher(selector, op, "m", empty);
}

}  // namespace

// promql_fuzz: a string ended at any quote character, so `{a='"'} or up{b='"'}` passed as one
// brace block and the push-down gave `{__name__="m",a='"'} or up{b='"'}`: two selectors.
TEST(FuzzFindings, PushDownEndsAStringOnlyAtItsOwnQuote) {
  EXPECT_EQ(push(R"({a='"'} or up{b='"'})"), std::nullopt);
  EXPECT_EQ(push(R"({a="'"} or up{b="'"})"), std::nullopt);
  EXPECT_EQ(push(R"({a='"'})"), R"({__name__="m",a='"'})");
  EXPECT_EQ(push(R"({a="}'{"})"), R"({__name__="m",a="}'{"})");
  // Backquoted strings have no escapes: `\` is a whole string.
  EXPECT_EQ(push(R"({a=`\`})"), R"({__name__="m",a=`\`})");
  EXPECT_EQ(push(R"({a=`\`} or up{b=`\`})"), std::nullopt);
  EXPECT_EQ(push(R"({a="\"}"})", "=~"), R"({__name__=~"m",a="\"}"})");
}

// promql_fuzz: a # comment hid the end of the selector: `{*#\n}` became `{__name__="m",*#}`
// (trimming dropped the newline that ended the comment, so the comment ate the '}').
TEST(FuzzFindings, PushDownDeclinesComments) {
  EXPECT_EQ(push("{*#\n\n\n}"), std::nullopt);
  EXPECT_EQ(push("{a=\"1\" #\"\n} or up{b=\"2\"\n#\"\n}"), std::nullopt);
  EXPECT_EQ(push(R"({a="#"})"), R"({__name__="m",a="#"})");
}

// time_parse_fuzz: each number was capped at 10^12 but the product with the unit and the sum were
// not checked: "999999999999y" overflowed int64 (undefined behaviour). Now the limit is the
// int64 range of the total, as in Prometheus, so every duration format_promql_duration writes
// reads back ("66666666666m" is 3999999999960s, which the old cap refused).
TEST(FuzzFindings, DurationsStayInRange) {
  int64_t ms = 0;
  EXPECT_FALSE(pp::parse_prometheus_duration_ms("999999999999y", ms));
  EXPECT_FALSE(pp::parse_prometheus_duration_ms("106751991167y106751991167y", ms));
  EXPECT_FALSE(pp::parse_prometheus_duration_ms("9223372036854775808ms", ms));
  EXPECT_FALSE(pp::parse_prometheus_duration_ms("99999999999999999999999s", ms));
  ASSERT_TRUE(pp::parse_prometheus_duration_ms("9223372036854775807ms", ms));
  EXPECT_EQ(ms, INT64_MAX);
  ASSERT_TRUE(pp::parse_prometheus_duration_ms("292471208y", ms));
  EXPECT_EQ(ms, int64_t{292471208} * 31536000000);
  ASSERT_TRUE(pp::parse_prometheus_duration_ms("66666666666m", ms));
  EXPECT_EQ(ms, 3999999999960000);
  int64_t back = 0;
  ASSERT_TRUE(pp::parse_prometheus_duration_ms(pp::format_promql_duration(ms), back));
  EXPECT_EQ(back, ms);
}
