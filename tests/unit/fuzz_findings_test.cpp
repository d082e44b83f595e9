// What the fuzzers (fuzz/) found, kept as tests so the fixes stay: each case names its target.
// The inputs are also in fuzz/corpus/TARGET, where every fuzz run starts.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "prometheus/response_parser.hpp"
#include "prometheus/promql.hpp"
#include "core/text.hpp"
#include "prometheus/time_parse.hpp"

namespace {

// The error a matrix body gives, or "" when it parses.
std::string matrix_error(const std::string& body, long status = 200) {
  pp::HttpResponse response;
  response.status = status;
  response.body = body;
  std::vector<std::string> warnings;
  try {
    pp::parse_matrix_body(response, "http://prom:9090/api/v1/query_range", warnings);
  } catch (const pp::Error& e) {
    return e.what();
  }
  return "";
}

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

// prom_response_fuzz: bodies that made nlohmann's own exceptions escape instead of a pp::Error
// that says what was wrong (the SQL error read "prom_range: internal error: [json.exception...]").
TEST(FuzzFindings, ResponseErrorsSayWhatWasWrong) {
  // "data" a list where an object is expected: json::value() threw type_error 306.
  EXPECT_EQ(matrix_error(R"({"status":"success","data":["0"]})"),
            "expected a matrix result from http://prom:9090/api/v1/query_range, got ''");
  // errorType and error not text: type_error 302.
  EXPECT_EQ(matrix_error(R"({"status":"error","errorType":422,"error":["x"]})", 422),
            "Prometheus error error (HTTP 422): (no error text)");
  EXPECT_EQ(matrix_error(R"({"status":"success","data":{"resultType":7,"result":[]}})"),
            "expected a matrix result from http://prom:9090/api/v1/query_range, got ''");
  // A number beyond a double: out_of_range 406, which is not a parse_error.
  const std::string overflow = matrix_error(R"({"status":"success","data":{"x":1e3080000000}})");
  EXPECT_EQ(overflow.rfind("HTTP 200 from http://prom:9090/api/v1/query_range is not a "
                           "Prometheus API response (invalid JSON: number overflow", 0), 0u)
      << overflow;
}

// prom_sample_value_fuzz: one '+' was stripped before from_chars, which then read "-11", so
// "+-11" was the number -11. Integers had the same rule.
TEST(FuzzFindings, PlusMinusIsNotANumber) {
  double d = 0;
  bool is_null = false;
  EXPECT_FALSE(pp::parse_sample_value("+-11", d, is_null));
  EXPECT_FALSE(pp::parse_double("+-0.5", d));
  EXPECT_FALSE(pp::parse_double("++1", d));
  ASSERT_TRUE(pp::parse_double("+0.5", d));
  EXPECT_EQ(d, 0.5);
  ASSERT_TRUE(pp::parse_double(" -2.5e3 ", d));
  EXPECT_EQ(d, -2500);
  int64_t i = 0;
  EXPECT_FALSE(pp::parse_int64("+-5", i));
  ASSERT_TRUE(pp::parse_int64("+5", i));
  EXPECT_EQ(i, 5);
}
