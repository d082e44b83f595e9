// One line of the hook client's JSON Lines: the event line parser and job headers, checked
// against nlohmann::json as the reference.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "events/event_fields.hpp"
#include "events/event_files.hpp"
#include "events/event_line.hpp"
#include "events/job_header.hpp"
#include "events/line_reader.hpp"
#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using pp::LayerEvent;
using pp::LineKind;
using pp_test::event_json;
using pp_test::event_line;
using pp_test::header_line;
using pp_test::kT0;
using pp_test::lines;
using pp_test::TempDir;

// ---- Reference: what a line means, decided from nlohmann::json's DOM ----------------------

bool is_int64(const nlohmann::json& v) {
  return v.is_number_integer() &&
         (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t{INT64_MAX});
}

// Whether a JSON value has the type of an event field (events/event_fields.hpp).
bool has_type(const nlohmann::json& v, pp::FieldType type) {
  switch (type) {
    case pp::FieldType::Text: return v.is_string();
    case pp::FieldType::NullableText: return v.is_string() || v.is_null();
    case pp::FieldType::Integer: return is_int64(v);
    case pp::FieldType::NullableInteger: return is_int64(v) || v.is_null();
    case pp::FieldType::Boolean: return v.is_boolean();
    case pp::FieldType::Number: return v.is_number();
  }
  return false;
}

// Returns nullopt for lines where the reader may legitimately differ from nlohmann (a number
// too large for a double, which nlohmann rejects as a syntax error).
std::optional<LineKind> reference_kind(const std::string& line, nlohmann::json& out) {
  if (line.find_first_not_of(" \t\r\n") == std::string::npos) return LineKind::Blank;
  try {
    out = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    if (std::string(e.what()).find("number overflow") != std::string::npos) return std::nullopt;
    return LineKind::Malformed;
  }
  if (!out.is_object()) return LineKind::Malformed;
  if (out.contains("record") && out["record"] == "job") return LineKind::JobHeader;
  if (out.contains("record") && out["record"] == "mig_device") return LineKind::MigDevice;
  for (int f = 0; f < pp::kEventFieldCount; ++f) {
    const std::string key(pp::kEventFieldKeys[f]);
    if (!out.contains(key) || !has_type(out[key], pp::kEventFieldTypes[f])) return LineKind::Malformed;
  }
  return LineKind::Event;
}

// Checks one decoded field against the JSON value it came from.
struct ExpectSameField {
  const nlohmann::json& value;
  std::string_view key;
  void operator()(const std::string& text) const { EXPECT_EQ(value.get<std::string>(), text) << key; }
  void operator()(const pp::Nullable<std::string>& text) const {
    EXPECT_EQ(value.is_null(), text.null) << key;
    if (!value.is_null()) {
      EXPECT_EQ(value.get<std::string>(), text.value) << key;
    }
  }
  void operator()(int64_t n) const { EXPECT_EQ(value.get<int64_t>(), n) << key; }
  void operator()(const pp::Nullable<int64_t>& n) const {
    EXPECT_EQ(value.is_null(), n.null) << key;
    if (!value.is_null()) {
      EXPECT_EQ(value.get<int64_t>(), n.value) << key;
    }
  }
  void operator()(bool b) const { EXPECT_EQ(value.get<bool>(), b) << key; }
  void operator()(double d) const { EXPECT_EQ(value.get<double>(), d) << key; }
};

void expect_same_event(const nlohmann::json& j, const LayerEvent& e, const std::string& line) {
  SCOPED_TRACE(line);
  for (int f = 0; f < pp::kEventFieldCount; ++f) {
    const std::string key(pp::kEventFieldKeys[f]);
    pp::visit_event_field(e, f, ExpectSameField{j[key], key});
  }
}

// Parses with the reader and checks the outcome against the reference.
void check_against_reference(const std::string& line) {
  nlohmann::json j;
  const std::optional<LineKind> expected = reference_kind(line, j);
  if (!expected) return;
  LayerEvent e;
  std::string problem;
  const LineKind kind = pp::parse_event_line(line, e, problem);
  ASSERT_EQ(static_cast<int>(*expected), static_cast<int>(kind)) << line << "\nproblem: " << problem;
  if (kind == LineKind::Malformed) {
    EXPECT_FALSE(problem.empty()) << line;
  }
  if (kind == LineKind::Event) expect_same_event(j, e, line);
}

LineKind parse(const std::string& line, std::string* problem = nullptr) {
  LayerEvent e;
  std::string p;
  const LineKind kind = pp::parse_event_line(line, e, p);
  if (problem) *problem = p;
  return kind;
}

// ---- Parser --------------------------------------------------------------------------------

TEST(LayerEventsParse, DecodesEveryField) {
  ordered_json j = event_json(5);
  j["job_id"] = "job \"ü\" \\ \u00e9\U0001F600\t";
  j["host_name"] = nullptr;
  j["gpu"] = nullptr;
  j["gpu_uuid"] = "cpu";
  j["rank"] = -3;
  j["world_size"] = 9223372036854775807LL;
  j["cpu_num"] = 0.5;
  const std::string line = j.dump();  // escapes quotes, backslash, tab; keeps UTF-8 as is
  LayerEvent e;
  std::string problem;
  ASSERT_EQ(pp::parse_event_line(line, e, problem), LineKind::Event) << problem;
  EXPECT_EQ(e.job_id, "job \"ü\" \\ \u00e9\U0001F600\t");
  EXPECT_TRUE(e.host_name.null);
  EXPECT_FALSE(e.ip.null);
  EXPECT_EQ(e.ip.value, "10.0.0.7");
  EXPECT_EQ(e.pod.value, "dlrm-0");
  EXPECT_EQ(e.namespace_.value, "ml");
  EXPECT_EQ(e.gpu_uuid, "cpu");
  EXPECT_TRUE(e.gpu.null);
  EXPECT_EQ(e.rank, -3);
  EXPECT_EQ(e.world_size, INT64_MAX);
  EXPECT_EQ(e.pid, 4242);
  EXPECT_EQ(e.batch, 1);
  EXPECT_EQ(e.layer, "top_l.1");
  EXPECT_EQ(e.layer_type, "Linear");
  EXPECT_FALSE(e.forward);
  EXPECT_EQ(e.t_start_ns, kT0 + 5000000);
  EXPECT_EQ(e.t_end_ns, kT0 + 5250000);
  EXPECT_EQ(e.cpu_num, 0.5);

  // ASCII-only output (Python's json.dumps default) decodes to the same text.
  const std::string ascii = R"({"job_id":"\u00fc\ud83d\ude00\/","host_name":"h","ip":"i","pod":"p",)"
                            R"("namespace":"n","gpu_uuid":"GPU-1","gpu":1,"rank":0,"local_rank":0,)"
                            R"("world_size":1,"pid":1,"epoch":0,"batch":0,"layer":"l","layer_type":"t",)"
                            R"("forward":true,"t_start_ns":1,"t_end_ns":2,"cpu_num":4})";
  ASSERT_EQ(pp::parse_event_line(ascii, e, problem), LineKind::Event) << problem;
  EXPECT_EQ(e.job_id, "\u00fc\U0001F600/");
  EXPECT_EQ(e.gpu.value, 1);
  EXPECT_FALSE(e.gpu.null);
  EXPECT_TRUE(e.forward);
  EXPECT_EQ(e.cpu_num, 4.0);
}

TEST(LayerEventsParse, JobHeaderBlankAndUnknownFields) {
  EXPECT_EQ(parse(header_line()), LineKind::JobHeader);
  EXPECT_EQ(parse(""), LineKind::Blank);
  EXPECT_EQ(parse(" \t\r"), LineKind::Blank);
  ordered_json j = event_json(1);
  j["stream"] = {{"id", 7}, {"ok", true}};  // a newer client's extra field is ignored
  EXPECT_EQ(parse(j.dump()), LineKind::Event);
  EXPECT_EQ(parse(event_line(1) + "\r"), LineKind::Event);  // CRLF files
  EXPECT_EQ(parse("\xEF\xBB\xBF" + event_line(1)), LineKind::Event);  // BOM
  // A second BOM is a stray character before the object (event_line_fuzz's oracle once took it,
  // as nlohmann skips a BOM of its own after the one taken off).
  std::string problem;
  EXPECT_EQ(parse("\xEF\xBB\xBF\xEF\xBB\xBF" + event_line(1), &problem), LineKind::Malformed);
  EXPECT_EQ(problem, "not a JSON object");
}

TEST(LayerEventsParse, JobHeaderFields) {
  pp::JobHeader h;
  std::string problem;
  ASSERT_TRUE(pp::parse_job_header(
      R"({"record":"job","job_id":"j\u00e9","host_name":"n","pid":7,"parameters":514363393,)"
      R"("params":{"lr":0.1},"command":["python3","x.py"],"torch_version":"2.1",)"
      R"("start_time_ns":1714000000123456789})",
      h, problem))
      << problem;
  EXPECT_EQ(h.job_id, "j\u00e9");
  EXPECT_EQ(h.host_name, "n");
  EXPECT_EQ(h.pid, 7);
  EXPECT_EQ(h.params, 514363393);  // "parameters" wins over "params"
  EXPECT_EQ(h.command, R"(["python3","x.py"])");
  EXPECT_EQ(h.torch_version, "2.1");
  EXPECT_EQ(h.start_time_ns, 1714000000123456789);
  // Absent and null are both nullopt; an integer "params" is the count.
  ASSERT_TRUE(pp::parse_job_header(R"({"record":"job","job_id":"j","host_name":null,"params":-1})", h, problem));
  EXPECT_FALSE(h.host_name || h.pid || h.command || h.torch_version || h.start_time_ns);
  EXPECT_EQ(h.params, -1);
  // Wrong types and out-of-range integers are errors, named.
  EXPECT_FALSE(pp::parse_job_header(R"({"record":"job"})", h, problem));
  EXPECT_EQ(problem, "job header without field 'job_id'");
  EXPECT_FALSE(pp::parse_job_header(R"({"record":"job","job_id":""})", h, problem));
  EXPECT_EQ(problem, "field 'job_id' is empty");
  EXPECT_FALSE(pp::parse_job_header(R"({"record":"job","job_id":7})", h, problem));
  EXPECT_EQ(problem, "field 'job_id' is not text");
  EXPECT_FALSE(pp::parse_job_header(R"({"record":"job","job_id":"j","parameters":9223372036854775808})", h, problem));
  EXPECT_EQ(problem, "field 'parameters' is out of range");
  EXPECT_FALSE(pp::parse_job_header(R"({"record":"job","job_id":"j","pid":1.0})", h, problem));
  EXPECT_EQ(problem, "field 'pid' is not an integer or null");
  EXPECT_FALSE(pp::parse_job_header(R"({"record":"job","job_id":"j","torch_version":2})", h, problem));
  EXPECT_EQ(problem, "field 'torch_version' is not text or null");
  // Largest and smallest int64 survive.
  ASSERT_TRUE(pp::parse_job_header(
      R"({"record":"job","job_id":"j","parameters":9223372036854775807,"start_time_ns":-9223372036854775808})", h,
      problem));
  EXPECT_EQ(h.params, INT64_MAX);
  EXPECT_EQ(h.start_time_ns, INT64_MIN);
}

TEST(LayerEventsParse, MissingOrMistypedFieldIsMalformed) {
  using pp::FieldType;
  for (int f = 0; f < pp::kEventFieldCount; ++f) {
    const std::string name(pp::kEventFieldKeys[f]);
    const FieldType type = pp::kEventFieldTypes[f];
    SCOPED_TRACE(name);
    ordered_json j = event_json(2);
    j.erase(name);
    std::string problem;
    EXPECT_EQ(parse(j.dump(), &problem), LineKind::Malformed);
    EXPECT_EQ(problem, "missing field '" + name + "'");

    j = event_json(2);
    j[name] = type == FieldType::Boolean ? ordered_json(1)
              : type == FieldType::Number ? ordered_json("8")
              : (type == FieldType::Text || type == FieldType::NullableText) ? ordered_json(7)
                                                                              : ordered_json(1.5);
    EXPECT_EQ(parse(j.dump(), &problem), LineKind::Malformed);
    EXPECT_EQ(problem.rfind("field '" + name + "' is not", 0), 0u) << problem;

    if (type != FieldType::NullableText && type != FieldType::NullableInteger) {
      j[name] = nullptr;
      EXPECT_EQ(parse(j.dump(), &problem), LineKind::Malformed);
    }
  }
  std::string problem;
  // The names that say whose event it is may not be empty: it would be attributed to nothing.
  for (const char* name : {"job_id", "gpu_uuid", "layer"}) {
    ordered_json j = event_json(2);
    j[name] = "";
    EXPECT_EQ(parse(j.dump(), &problem), LineKind::Malformed) << name;
    EXPECT_EQ(problem, std::string("field '") + name + "' is empty");
  }
  ordered_json j = event_json(1);
  j["t_start_ns"] = 9223372036854775808ULL;
  EXPECT_EQ(parse(j.dump(), &problem), LineKind::Malformed);
  EXPECT_EQ(problem, "field 't_start_ns' is out of range");
  EXPECT_EQ(parse("[1, 2]", &problem), LineKind::Malformed);
  EXPECT_EQ(problem, "not a JSON object");
  EXPECT_EQ(parse(R"({"job_id": "a",})", &problem), LineKind::Malformed);
  EXPECT_EQ(problem, "invalid JSON at byte 16");
}

TEST(LayerEventsParse, EveryTornPrefixIsMalformed) {
  for (const std::string& line : {event_line(3), header_line()}) {
    for (size_t n = 1; n < line.size(); ++n) {
      std::string problem;
      EXPECT_EQ(parse(line.substr(0, n), &problem), LineKind::Malformed) << line.substr(0, n);
    }
  }
}

TEST(LayerEventsParse, SyntaxAgreesWithNlohmann) {
  const std::vector<std::string> values = {
      R"("plain")", R"("esc \" \\ \/ \b \f \n \r \t")", R"("\u00e9\u20AC")", R"("\ud83d\ude00")",
      R"("\ud800")", R"("\udc00")", R"("\ud800\u0041")", R"("\u12")", R"("\x")", "\"\x01\"",
      "\"\xC3\xA9\"", "\"\xC0\x80\"", "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"", "\"\xE2\x82\"",
      "\"\xF0\x9F\x98\x80\"", "\"\xFF\"", R"(0)", R"(-0)", R"(01)", R"(-)", R"(1.)", R"(.5)",
      R"(1e5)", R"(1E+5)", R"(1e-5)", R"(1e)", R"(-1.25e-3)", R"(+1)", R"(0x10)", R"(true)",
      R"(tru)", R"(false)", R"(null)", R"(nul)", R"(NaN)", R"(Infinity)", R"([])", R"([1,2,])",
      R"([1 2])", R"({})", R"({"a":[{"b":null}]})", R"({"a"})", R"({"a":1,})", R"({a:1})",
      R"([[[[[[[[[[]]]]]]]]]])", R"([)", R"(})", R"('x')", "\"tab\there\"", R"(1e999)",
      R"(-9223372036854775808)", R"(9223372036854775807)", R"(9223372036854775808)",
      R"(-9223372036854775809)", R"(18446744073709551615)", R"(18446744073709551616)",
      R"(123456789012345678901234)", R"(9007199254740993)", R"(-0.0)", R"(1234567890123456789)",
      R"(0.1)", R"(2.5e-3)", R"(1E2)"};
  // Strings whose special byte falls at every offset of the 8-byte scan.
  std::vector<std::string> strings;
  for (int at = 0; at < 18; ++at)
    for (const char* special : {"\\\"", "\\n", "\x01", "\xC3\xA9", "\xC3", "\x7f", "\xFF"})
      strings.push_back("\"" + std::string(at, 'a') + special + std::string(11, 'b') + "\"");
  for (const std::string& value : strings) {
    ordered_json j = event_json(4);
    j.erase("layer");
    check_against_reference("{\"layer\":" + value + "," + j.dump().substr(1));
  }
  for (const std::string& value : values) {
    const std::string base = event_line(4);
    check_against_reference(base.substr(0, base.size() - 1) + ",\"extra\":" + value + "}");
    check_against_reference("{\"extra\":" + value + "," + base.substr(1));
    // the same value in a field the reader decodes
    ordered_json j = event_json(4);
    j.erase("job_id");
    check_against_reference("{\"job_id\":" + value + "," + j.dump().substr(1));
    j = event_json(4);
    j.erase("cpu_num");
    check_against_reference("{\"cpu_num\":" + value + "," + j.dump().substr(1));
    j = event_json(4);
    j.erase("rank");
    check_against_reference("{\"rank\":" + value + "," + j.dump().substr(1));
  }
  for (const std::string& line : {std::string("{}x"), std::string("{} {}"), std::string("5"),
                                  std::string("\"s\""), event_line(1) + " ", " " + event_line(1),
                                  std::string("{\"record\":\"job\"}"), std::string("{\"record\":1}")})
    check_against_reference(line);
}

// Random byte edits of valid lines: whatever the edit, the reader's verdict and decoded values
// must match the reference's.
TEST(LayerEventsParse, FuzzedLinesAgreeWithNlohmann) {
  std::mt19937 random(20240424);
  const std::string alphabet = "{}[]\",:\\/0123456789-+.eEtrufalsn ux\t\x7f\x80\xC3\xA9\xFF\x01";
  std::vector<std::string> seeds = {event_line(7), header_line()};
  ordered_json j = event_json(8);
  j["host_name"] = nullptr;
  j["gpu"] = nullptr;
  j["job_id"] = "d\u00e9j\u00e0 \"vu\"";
  seeds.push_back(j.dump());
  seeds.push_back(j.dump(-1, ' ', /*ensure_ascii=*/true));
  for (int round = 0; round < 30000; ++round) {
    std::string line = seeds[round % seeds.size()];
    const int edits = 1 + static_cast<int>(random() % 3);
    for (int k = 0; k < edits && !line.empty(); ++k) {
      const size_t at = random() % line.size();
      const char c = alphabet[random() % alphabet.size()];
      switch (random() % 4) {
        case 0: line[at] = c; break;
        case 1: line.erase(at, 1); break;
        case 2: line.insert(at, 1, c); break;
        default: line.resize(at); break;
      }
    }
    check_against_reference(line);
    if (HasFatalFailure()) return;
  }
}

// t_start/t_end are the doubles nearest the exact decimal seconds, which is what a literal
// such as 1714000000.1004 in SQL parses to.
TEST(LayerEventsParse, SecondsAreTheNearestDouble) {
  std::mt19937_64 random(7);
  for (int i = 0; i < 100000; ++i) {
    const int64_t ns = static_cast<int64_t>(random() % 4000000000000000000ULL) - (i % 2 ? 0 : 1000000000000000000);
    const int64_t whole = ns / 1000000000, fraction = ns % 1000000000;
    char decimal[64];
    std::snprintf(decimal, sizeof decimal, "%s%lld.%09lld", ns < 0 ? "-" : "",
                  static_cast<long long>(whole < 0 ? -whole : whole),
                  static_cast<long long>(fraction < 0 ? -fraction : fraction));
    double expected = 0;
    std::from_chars(decimal, decimal + std::strlen(decimal), expected);
    ASSERT_EQ(pp::ns_to_seconds(ns), expected) << decimal;
  }
}

}  // namespace
