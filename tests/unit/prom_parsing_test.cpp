// Parsers under the Prometheus tables: times, durations, sample values, response envelopes,
// and the PromQL the engine writes itself.
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.hpp"
#include "prometheus/response_parser.hpp"
#include "prometheus/promql.hpp"
#include "core/text.hpp"
#include "prometheus/time_parse.hpp"

namespace {

pp::HttpResponse response(long status, const std::string& body) {
  pp::HttpResponse r;
  r.status = status;
  r.body = body;
  return r;
}

std::string error_of(const std::string& body, long status = 200) {
  std::vector<std::string> warnings;
  try {
    pp::parse_matrix_body(response(status, body), "http://prom:9090/api/v1/query", warnings);
  } catch (const pp::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(PromParsing, Rfc3339AndSqliteDatetime) {
  int64_t ms = 0;
  ASSERT_TRUE(pp::parse_rfc3339_ms("2023-11-14T22:13:20Z", ms));
  EXPECT_EQ(ms, 1700000000000);
  ASSERT_TRUE(pp::parse_rfc3339_ms("2023-11-14T23:13:20.123456+01:00", ms));
  EXPECT_EQ(ms, 1700000000123);
  ASSERT_TRUE(pp::parse_rfc3339_ms("2023-11-14 22:13:20", ms));  // datetime('now') style, UTC
  EXPECT_EQ(ms, 1700000000000);
  EXPECT_FALSE(pp::parse_rfc3339_ms("2023-11-14T22:13:20", ms));  // RFC3339 needs a zone
  EXPECT_FALSE(pp::parse_rfc3339_ms("2023-13-14T22:13:20Z", ms));
  // A leap second names a time Prometheus (Go's time package) does not read either.
  EXPECT_FALSE(pp::parse_rfc3339_ms("2023-11-14T22:13:60Z", ms));
  EXPECT_FALSE(pp::parse_rfc3339_ms("yesterday", ms));
}

TEST(PromParsing, TimesRelativeToNowAsGrafanaUsersTypeThem) {
  const int64_t now = 1700000000123;
  int64_t ms = 0;
  ASSERT_TRUE(pp::parse_relative_time_ms("now", now, ms));
  EXPECT_EQ(ms, now);
  ASSERT_TRUE(pp::parse_relative_time_ms("NOW", now, ms));
  EXPECT_EQ(ms, now);
  ASSERT_TRUE(pp::parse_relative_time_ms("-1h", now, ms));
  EXPECT_EQ(ms, now - 3600000);
  ASSERT_TRUE(pp::parse_relative_time_ms("now-15m", now, ms));
  EXPECT_EQ(ms, now - 900000);
  ASSERT_TRUE(pp::parse_relative_time_ms("now+1m30s", now, ms));
  EXPECT_EQ(ms, now + 90000);
  ASSERT_TRUE(pp::parse_relative_time_ms("-2d", now, ms));
  EXPECT_EQ(ms, now - 2 * 86400000);
  EXPECT_FALSE(pp::parse_relative_time_ms("now-", now, ms));
  EXPECT_FALSE(pp::parse_relative_time_ms("now - 1h", now, ms));
  EXPECT_FALSE(pp::parse_relative_time_ms("-", now, ms));
  EXPECT_FALSE(pp::parse_relative_time_ms("1h", now, ms));  // a duration is not a time
  EXPECT_FALSE(pp::parse_relative_time_ms("nowish", now, ms));
  EXPECT_FALSE(pp::parse_relative_time_ms("yesterday", now, ms));
}

TEST(PromParsing, PrometheusDurations) {
  int64_t ms = 0;
  ASSERT_TRUE(pp::parse_prometheus_duration_ms("1m30s", ms));
  EXPECT_EQ(ms, 90000);
  ASSERT_TRUE(pp::parse_prometheus_duration_ms("250ms", ms));
  EXPECT_EQ(ms, 250);
  ASSERT_TRUE(pp::parse_prometheus_duration_ms("1h5m", ms));
  EXPECT_EQ(ms, 3900000);
  EXPECT_FALSE(pp::parse_prometheus_duration_ms("5 minutes", ms));
  EXPECT_FALSE(pp::parse_prometheus_duration_ms("s", ms));
  EXPECT_EQ(pp::format_seconds(1700000000123), "1700000000.123");
  EXPECT_EQ(pp::format_seconds(1700000000000), "1700000000");
  EXPECT_EQ(pp::format_promql_duration(3600000), "3600s");
  EXPECT_EQ(pp::format_promql_duration(1500), "1500ms");
}

TEST(PromParsing, SampleValuesIncludingSpecials) {
  double v = 0;
  bool is_null = false;
  ASSERT_TRUE(pp::parse_sample_value("0.512000", v, is_null));
  EXPECT_DOUBLE_EQ(v, 0.512);
  ASSERT_TRUE(pp::parse_sample_value("1e-07", v, is_null));
  EXPECT_DOUBLE_EQ(v, 1e-07);
  ASSERT_TRUE(pp::parse_sample_value("+Inf", v, is_null));
  EXPECT_TRUE(std::isinf(v) && v > 0);
  ASSERT_TRUE(pp::parse_sample_value("-Inf", v, is_null));
  EXPECT_TRUE(std::isinf(v) && v < 0);
  ASSERT_TRUE(pp::parse_sample_value("NaN", v, is_null));
  EXPECT_TRUE(is_null);
  EXPECT_FALSE(pp::parse_sample_value("twelve", v, is_null));
  EXPECT_FALSE(pp::parse_sample_value("", v, is_null));
  EXPECT_FALSE(pp::parse_sample_value("1e999", v, is_null));  // overflow is not a value
}

TEST(PromParsing, MatrixBodyWithLabelsAndWarnings) {
  std::vector<std::string> warnings;
  const auto matrix = pp::parse_matrix_body(
      response(200, R"({"status":"success","warnings":["w1"],"data":{"resultType":"matrix","result":[
        {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","UUID":"GPU-1"},
         "values":[[1714000000.123,"65"],[1714000001,"NaN"]]}]}})"),
      "u", warnings);
  ASSERT_EQ(matrix.series.size(), 1u);
  EXPECT_EQ(*matrix.series[0].metric, "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(matrix.series[0].labels_json, R"({"UUID":"GPU-1","gpu":"0"})");
  EXPECT_EQ(matrix.series[0].points[0].ts_ms, 1714000000123);
  EXPECT_EQ(matrix.series[0].points[0].value, 65);
  EXPECT_TRUE(matrix.series[0].points[1].is_null);
  EXPECT_EQ(warnings, std::vector<std::string>{"w1"});
}

TEST(PromParsing, ErrorsSayWhatWasWrong) {
  EXPECT_EQ(error_of(R"({"status":"error","errorType":"bad_data","error":"parse error"})", 400),
            "Prometheus error bad_data (HTTP 400): parse error");
  EXPECT_EQ(error_of("<html>Bad Gateway</html>", 502),
            "HTTP 502 from http://prom:9090/api/v1/query is not a Prometheus API "
            "response: <html>Bad Gateway</html>");
  EXPECT_EQ(error_of("", 503), "HTTP 503 with an empty body from http://prom:9090/api/v1/query");
  EXPECT_EQ(error_of(R"({"status":"success","data":{"resultType":"vector","result":[]}})"),
            "expected a matrix result from http://prom:9090/api/v1/query, got 'vector'");
  EXPECT_EQ(error_of(R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,2]]}]}})"),
            "malformed sample [1,2] (expected [unix_seconds, \"value\"])");
  EXPECT_EQ(error_of(R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":1},"values":[]}]}})"),
            "label 'a' is not a string");
  EXPECT_NE(error_of(R"({"status":"success","data":{"resultType":"matrix","result":[)"), "");
}

// A value of another type is said, never left out: a name that is a number read as a series of
// no metric, and a label value that is not a string shortened the list, both in silence.
TEST(PromParsing, ANameOrLabelValueOfAnotherTypeIsAnError) {
  std::vector<std::string> warnings;
  try {
    pp::parse_series_body(response(200, R"({"status":"success","data":[{"__name__":5,"gpu":"0"}]})"), "u",
                          warnings);
    ADD_FAILURE() << "a __name__ of 5 was read";
  } catch (const pp::Error& e) {
    EXPECT_STREQ(e.what(), "label '__name__' is not a string");
  }
  EXPECT_EQ(error_of(R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":null},"values":[]}]}})"),
            "label '__name__' is not a string");
  try {
    pp::parse_label_values_body(response(200, R"({"status":"success","data":["a",5,null]})"),
                                "http://prom:9090/api/v1/label/gpu/values", warnings);
    ADD_FAILURE() << "the values 5 and null were left out";
  } catch (const pp::Error& e) {
    EXPECT_STREQ(e.what(), "label values from http://prom:9090/api/v1/label/gpu/values hold 5, not a string");
  }
  const auto values =
      pp::parse_label_values_body(response(200, R"({"status":"success","data":["a","b"]})"), "u", warnings);
  EXPECT_EQ(values, (std::vector<std::string>{"a", "b"}));
}

TEST(PromParsing, AnOverlongErrorTypeLeavesTheErrorTextInTheMessage) {
  const std::string type(1 << 20, 'x');
  const std::string message =
      error_of(R"({"status":"error","errorType":")" + type + R"(","error":"query timed out in expression evaluation"})", 503);
  EXPECT_EQ(message, "Prometheus error " + std::string(64, 'x') +
                         "... (1048576 bytes) (HTTP 503): query timed out in expression evaluation");
}

TEST(PromParsing, ALabelSetListedAgainIsCountedNotMerged) {
  // The same labels with and without a name are two series; {a="1"} named "m" comes three times.
  std::vector<std::string> warnings;
  const auto matrix = pp::parse_matrix_body(
      response(200, R"({"status":"success","data":{"resultType":"matrix","result":[
        {"metric":{"__name__":"m","a":"1"},"values":[[1,"1"]]},
        {"metric":{"a":"1"},"values":[[1,"2"]]},
        {"metric":{"a":"1","__name__":"m"},"values":[[1,"3"]]},
        {"metric":{"__name__":"m","a":"1"},"values":[[1,"4"]]}]}})"),
      "u", warnings);
  ASSERT_EQ(matrix.series.size(), 4u);  // every listing's rows are kept
  EXPECT_EQ(matrix.repeated_series, 2u);
  EXPECT_EQ(matrix.first_repeated, R"(m{"a":"1"})");
  EXPECT_EQ(warnings, std::vector<std::string>{
                          R"(the answer lists 2 series again that it listed before (the first: m{"a":"1"}); a )"
                          "server lists each label set once, so a proxy before it may merge replicas without "
                          "deduplicating: each listing's rows are given"});
  // The series API's answer, the same way (one row a listing).
  warnings.clear();
  const auto series = pp::parse_series_body(
      response(200, R"({"status":"success","data":[{"__name__":"m","a":"1"},{"__name__":"m","a":"1"}]})"), "u",
      warnings);
  ASSERT_EQ(series.size(), 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(R"(lists 1 series again that it listed before (the first: m{"a":"1"}))"),
            std::string::npos);
  EXPECT_NE(warnings[0].find("each listing's row is given"), std::string::npos);
}

TEST(PromParsing, ARepeatedListingsWarningHidesEchoedCredentials) {
  // A proxy that labels what it saw, the request's Authorization header, and merges replicas.
  auto r = response(200, R"({"status":"success","data":{"resultType":"matrix","result":[
        {"metric":{"__name__":"m","seen":"Bearer s3cret-token"},"values":[[1,"1"]]},
        {"metric":{"__name__":"m","seen":"Bearer s3cret-token"},"values":[[1,"2"]]}]}})");
  r.secrets = {"s3cret-token"};
  std::vector<std::string> warnings;
  const auto matrix = pp::parse_matrix_body(r, "u", warnings);
  EXPECT_EQ(matrix.first_repeated, R"(m{"seen":"Bearer ***"})");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].find("s3cret"), std::string::npos) << warnings[0];
}

TEST(PromParsing, MatrixSeriesAreConvertedWhileParsing) {
  // resultType after result, an object under another key that also says "result", histograms.
  std::vector<std::string> warnings;
  const auto matrix = pp::parse_matrix_body(
      response(200, R"({"status":"success","data":{"result":[
        {"metric":{"__name__":"a"},"values":[[1,"1"]]},
        {"metric":{"__name__":"b"},"values":[[2,"2"]],"histograms":[[3,{}]]}],
        "resultType":"matrix"},"other":{"result":[{"metric":7}]}})"),
      "u", warnings);
  ASSERT_EQ(matrix.series.size(), 2u);
  EXPECT_EQ(*matrix.series[0].metric, "a");
  EXPECT_EQ(*matrix.series[1].metric, "b");
  EXPECT_EQ(matrix.series[1].points[0].ts_ms, 2000);
  EXPECT_EQ(matrix.skipped_histograms, 1u);
  EXPECT_EQ(matrix.repeated_series, 0u);
  EXPECT_EQ(warnings, std::vector<std::string>{"1 native histogram samples are not supported and were skipped"});
  // A repeated key replaces the earlier value, as in a document.
  const auto last = pp::parse_matrix_body(
      response(200, R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"a"}}],
        "result":[{"metric":{"__name__":"b"}}]}})"),
      "u", warnings);
  ASSERT_EQ(last.series.size(), 1u);
  EXPECT_EQ(*last.series[0].metric, "b");
  // Items that are not objects, and an object without "metric".
  EXPECT_EQ(error_of(R"({"status":"success","data":{"resultType":"matrix","result":[1]}})"),
            "matrix item without a 'metric' object");
  EXPECT_EQ(error_of(R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[]}]}})"),
            "matrix item without a 'metric' object");
}

TEST(PromParsing, ErrorMessagesAreValidUtf8) {
  const std::string message =
      error_of("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"\xff\xfe\"}}]}}");
  EXPECT_EQ(pp::valid_utf8(message), message);
  EXPECT_NE(message.find("is not a Prometheus API response (invalid JSON: parse error at line 1, column "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("ill-formed UTF-8 byte"), std::string::npos) << message;
  EXPECT_EQ(pp::valid_utf8("a\xff" "b\xe2\x82"), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(pp::valid_utf8("\xc3\xa9\xc3\xa9\xc3\xa9", 5), "\xc3\xa9\xc3\xa9...");  // never half a character
  EXPECT_EQ(pp::valid_utf8("abc", 3), "abc");
}

TEST(PromQL, QuotingCannotChangeASelector) {
  EXPECT_EQ(pp::promql_quote(R"(say "hi" C:\gpu {x})"), R"("say \"hi\" C:\\gpu {x}")");
  bool empty = false;
  EXPECT_EQ(*pp::add_metric_matcher(R"({gpu="0"})", "=", "up", empty), R"({__name__="up",gpu="0"})");
  EXPECT_EQ(*pp::add_metric_matcher("{}", "=~", "DCGM.*", empty), R"({__name__=~"DCGM.*"})");
  EXPECT_EQ(*pp::add_metric_matcher(R"(up{a="}"})", "=", "up", empty), R"(up{a="}"})");
  EXPECT_FALSE(empty);
  pp::add_metric_matcher("up", "=", "down", empty);
  EXPECT_TRUE(empty);
  EXPECT_FALSE(pp::add_metric_matcher("rate(up[1m])", "=", "up", empty).has_value());
  EXPECT_FALSE(pp::add_metric_matcher("up", "=~", "u.*", empty).has_value());
}

// prom_samples appends a range to its selector: only a series selector can take one.
TEST(PromQL, ASeriesSelectorIsANameOrMatchersInBracesAndNothingMore) {
  for (const char* selector : {"up", " up ", "up{}", R"(up{job="x"})", R"( up {job="x"} )", R"({gpu="0"})",
                               R"({a="}{#", b='"', c=`\`})", "{a=\"b\", # a comment\n c=\"d\"}", "ns:metric_name_1"})
    EXPECT_TRUE(pp::is_series_selector(selector)) << selector;
  for (const char* selector : {"", "  ", "sum(up)", "rate(up[1m])", "up[5m]", "up offset 1m", "up # a comment",
                               "(up)", "up or down", R"({a="b"} and up)", R"({a="b"}})", R"({a="b"}{c="d"})",
                               R"({a="b})", "{a=\"b\" # hides the brace}", "1up", "{", "up{"})
    EXPECT_FALSE(pp::is_series_selector(selector)) << selector;
}

// A large answer's parse takes seconds: it calls its poll as it goes, so that an interrupt (the
// poll's InterruptedError) ends it there, for each kind of answer.
TEST(PromQL, AtStartAndEndArePinnedToTheCallsTimesOutsideLiteralsOnly) {
  const auto pin = [](const char* q) { return pp::pin_at_modifiers(q, "1700000000", "1700000100.5"); };
  EXPECT_EQ(pin("up @ end()"), "up @ 1700000100.5");
  EXPECT_EQ(pin("max_over_time(up[1h] @start ( ) )"), "max_over_time(up[1h] @ 1700000000 )");
  EXPECT_EQ(pin("rate(x[5m] @ end())\n/ rate(x[5m] @ start())"), "rate(x[5m] @ 1700000100.5)\n/ rate(x[5m] @ 1700000000)");
  // A time already given, text in strings and comments, and names that merely begin so.
  for (const char* same : {"up @ 1700000000", R"q(up{a="@ end()"})q", "up{a=`@ start()`} # @ end()",
                           R"q(up{a='it\'s @ end()'})q", "up @ ending()", "up @ end(1)", "up @ end"})
    EXPECT_EQ(pin(same), same);
}

TEST(PromParsing, TheParseOfALargeAnswerCanBeInterrupted) {
  std::string values;
  for (int i = 0; i < 100000; ++i) values += (i ? "," : "") + ("[" + std::to_string(1700000000 + i) + ",\"1\"]");
  const std::string matrix =
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"m"},"values":[)" + values +
      "]}]}}";
  std::string names;
  for (int i = 0; i < 100000; ++i) names += (i ? "," : "") + ("\"gpu-" + std::to_string(i) + "\"");
  const std::string list = R"({"status":"success","data":[)" + names + "]}";
  for (int kind = 0; kind < 2; ++kind) {
    int polls = 0;
    const pp::ParsePoll poll = [&] {
      if (++polls == 10) throw pp::InterruptedError();
    };
    std::vector<std::string> warnings;
    EXPECT_THROW(kind == 0 ? (void)pp::parse_matrix_body(response(200, matrix), "u", warnings, poll)
                           : (void)pp::parse_label_values_body(response(200, list), "u", warnings, poll),
                 pp::InterruptedError);
    EXPECT_EQ(polls, 10);
  }
  // Without an interrupt the same answers parse whole.
  std::vector<std::string> warnings;
  EXPECT_EQ(pp::parse_matrix_body(response(200, matrix), "u", warnings, [] {}).series.at(0).points.size(), 100000u);
  EXPECT_EQ(pp::parse_label_values_body(response(200, list), "u", warnings, [] {}).size(), 100000u);
}
