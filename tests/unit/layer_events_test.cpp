// layer_events: the JSON Lines parser (checked against nlohmann::json as the reference), the
// line reader, path expansion, and the table function through an in-process SQLite.
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

// ---- Line reader and path expansion ---------------------------------------------------------

TEST(LayerEventsReader, LinesAcrossBufferBoundsAndLongLines) {
  TempDir dir;
  std::string content;
  for (int i = 0; i < 3000; ++i) content += event_line(i) + "\n";  // ~1.3 MB: many buffer fills
  ordered_json big = event_json(3000);
  big["extra"] = std::string(700000, 'x');  // longer than the read buffer
  content += big.dump() + "\r\n";
  content += event_line(3001);  // no final newline
  const std::string file = dir.write("a.jsonl", content);

  pp::LineReader reader(file);
  std::string_view line;
  bool complete = false;
  int count = 0;
  LayerEvent e;
  std::string problem;
  while (reader.next(line, complete)) {
    ++count;
    ASSERT_EQ(pp::parse_event_line(line, e, problem), LineKind::Event) << count << ": " << problem;
    EXPECT_EQ(e.t_start_ns, kT0 + int64_t{count - 1} * 1000000);
    EXPECT_EQ(reader.line_number(), count);
    EXPECT_EQ(complete, count != 3002);
  }
  EXPECT_EQ(count, 3002);
  EXPECT_THROW(pp::LineReader(dir / "missing.jsonl"), std::runtime_error);  // pp::Error
}

TEST(LayerEventsReader, PathExpansion) {
  TempDir dir;
  dir.write("b.jsonl", "");
  dir.write("a.jsonl", "");
  dir.write("notes.txt", "");
  dir.write("sub/c.jsonl", "");
  std::vector<std::string> notes;
  EXPECT_EQ(pp::event_files(dir.path(), notes),
            (std::vector<std::string>{dir / "a.jsonl", dir / "b.jsonl", dir / "sub/c.jsonl"}));
  EXPECT_EQ(pp::event_files(dir / "*.jsonl", notes),
            (std::vector<std::string>{dir / "a.jsonl", dir / "b.jsonl"}));
  EXPECT_EQ(pp::event_files(dir / "notes.txt", notes), std::vector<std::string>{dir / "notes.txt"});
  EXPECT_TRUE(notes.empty());
  fs::create_directories(dir / "empty");
  EXPECT_TRUE(pp::event_files(dir / "empty", notes).empty());
  EXPECT_EQ(notes.size(), 1u);
  try {
    pp::event_files(dir / "nope*", notes);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {  // pp::Error
    EXPECT_EQ(std::string(e.what()), "no such file or directory: '" + (dir / "nope*") + "'");
  }
}

// ---- The table function ---------------------------------------------------------------------

class LayerEventsSql : public ::testing::Test {
 protected:
  int64_t count(const std::string& path, const std::string& where = "1") {
    return db.scalar("SELECT count(*) FROM layer_events(?1) WHERE " + where, {path}).integer;
  }
  std::string warnings() { return db.scalar("SELECT pp_last_warnings()").text; }

  TempDir dir;
  pp_test::TestDb db;
};

TEST_F(LayerEventsSql, EveryColumnTypeAndValue) {
  ordered_json cpu = event_json(1, "job-cpu");
  cpu["gpu_uuid"] = "cpu";
  cpu["gpu"] = nullptr;
  cpu["pod"] = nullptr;
  cpu["cpu_num"] = 2;
  const std::string file = dir.write("run.jsonl", header_line() + "\n" + event_line(6) + "\n" + cpu.dump() + "\n");
  const pp_test::Rows rows = db.query("SELECT *, path FROM layer_events(?1)", {file});
  ASSERT_EQ(rows.size(), 2u);
  const pp_test::Row& r = rows[0];
  ASSERT_EQ(r.size(), 24u);
  const std::vector<std::pair<int, std::string>> expected = {
      {SQLITE_TEXT, "job1"}, {SQLITE_TEXT, "node-1"}, {SQLITE_TEXT, "10.0.0.7"},
      {SQLITE_TEXT, "dlrm-0"}, {SQLITE_TEXT, "ml"},
      {SQLITE_TEXT, "GPU-5c2ab3a4-0000-1111-2222-333344445555"}, {SQLITE_INTEGER, "0"},
      {SQLITE_INTEGER, "0"}, {SQLITE_INTEGER, "0"}, {SQLITE_INTEGER, "1"}, {SQLITE_INTEGER, "4242"},
      {SQLITE_INTEGER, "0"}, {SQLITE_INTEGER, "1"}, {SQLITE_TEXT, "top_l.2"}, {SQLITE_TEXT, "Linear"},
      {SQLITE_INTEGER, "1"}, {SQLITE_INTEGER, "1714000000006000000"},
      {SQLITE_INTEGER, "1714000000006250000"}, {SQLITE_FLOAT, "8.0"},
      {SQLITE_FLOAT, "1714000000.006"}, {SQLITE_FLOAT, "1714000000.00625"}, {SQLITE_TEXT, file},
      {SQLITE_INTEGER, "2"}, {SQLITE_TEXT, file}};
  for (size_t c = 0; c < expected.size(); ++c) {
    EXPECT_EQ(r[c].type, expected[c].first) << "column " << c;
    EXPECT_EQ(r[c].text, expected[c].second) << "column " << c;
  }
  EXPECT_DOUBLE_EQ(r[19].real, 1714000000.006);
  // A double holds unix seconds to about 0.24 us; t_start_ns/t_end_ns are exact.
  EXPECT_NEAR(r[20].real - r[19].real, 0.00025, 1e-6);

  const pp_test::Row& c = rows[1];
  EXPECT_EQ(c[0].text, "job-cpu");
  EXPECT_TRUE(c[3].is_null());  // pod
  EXPECT_EQ(c[5].text, "cpu");
  EXPECT_TRUE(c[6].is_null());  // gpu
  EXPECT_EQ(c[15].integer, 0);  // backward
  EXPECT_EQ(c[18].type, SQLITE_FLOAT);
  EXPECT_EQ(c[18].real, 2.0);
  EXPECT_EQ(c[22].integer, 3);

  const pp_test::Rows names = db.query("SELECT name, type FROM pragma_table_xinfo('layer_events')");
  std::string declared;
  for (const auto& n : names) declared += n[0].text + ":" + n[1].text + " ";
  EXPECT_EQ(declared,
            "job_id:TEXT host_name:TEXT ip:TEXT pod:TEXT namespace:TEXT gpu_uuid:TEXT gpu:INTEGER "
            "rank:INTEGER local_rank:INTEGER world_size:INTEGER pid:INTEGER epoch:INTEGER "
            "batch:INTEGER layer:TEXT layer_type:TEXT forward:INTEGER t_start_ns:INTEGER "
            "t_end_ns:INTEGER cpu_num:REAL t_start:REAL t_end:REAL source_file:TEXT line:INTEGER "
            "path: ");
}

TEST_F(LayerEventsSql, DirectoryOfTwoFilesInNameOrder) {
  dir.write("run/rank1.jsonl", header_line() + "\n" + lines(100, 3));
  dir.write("run/rank0.jsonl", header_line() + "\n" + lines(0, 2));
  dir.write("run/README.txt", "not events\n");
  const pp_test::Rows rows =
      db.query("SELECT substr(source_file, length(?1) + 2), line, batch FROM layer_events(?1)",
               {dir / "run"});
  std::string seen;
  for (const auto& r : rows) seen += r[0].text + ":" + r[1].text + ":" + r[2].text + " ";
  EXPECT_EQ(seen, "rank0.jsonl:2:0 rank0.jsonl:3:0 rank1.jsonl:2:25 rank1.jsonl:3:25 rank1.jsonl:4:25 ");
  EXPECT_EQ(warnings(), "[]");
}

TEST_F(LayerEventsSql, Glob) {
  dir.write("job1/rank0.jsonl", lines(0, 2, "job1"));
  dir.write("job2/rank0.jsonl", lines(0, 3, "job2"));
  dir.write("job2/rank1.jsonl", lines(0, 4, "job2"));
  EXPECT_EQ(count(dir / "job*/rank0.jsonl"), 5);
  EXPECT_EQ(count(dir / "*"), 9);  // directories that match are read whole
  EXPECT_EQ(db.scalar("SELECT group_concat(DISTINCT job_id) FROM layer_events(?1)",
                      {dir / "job?/rank[1-9].jsonl"}).text, "job2");
}

TEST_F(LayerEventsSql, TornLastLineIsSkippedWithOneWarning) {
  const std::string complete = lines(0, 4);
  const std::string torn = event_line(4).substr(0, 60);
  const std::string file = dir.write("torn.jsonl", complete + torn);
  EXPECT_EQ(count(file), 4);
  EXPECT_EQ(warnings(), nlohmann::json({"layer_events: skipped 1 malformed line in " + file +
                                        " (first at line 5: incomplete last line (invalid JSON at byte 61))"})
                            .dump());
  // A last line without '\n' that is complete is an event.
  const std::string whole = dir.write("whole.jsonl", complete + event_line(4));
  EXPECT_EQ(count(whole), 5);
  EXPECT_EQ(warnings(), "[]");
}

TEST_F(LayerEventsSql, MalformedLinesInTheMiddle) {
  ordered_json no_layer = event_json(2);
  no_layer.erase("layer");
  const std::string file = dir.write("bad.jsonl", lines(0, 2) + "{not json\n" + lines(2, 1) +
                                                      no_layer.dump() + "\n" + lines(3, 2));
  const pp_test::Rows rows = db.query("SELECT line FROM layer_events(?1)", {file});
  std::string seen;
  for (const auto& r : rows) seen += r[0].text + " ";
  EXPECT_EQ(seen, "1 2 4 6 7 ");
  EXPECT_EQ(warnings(), nlohmann::json({"layer_events: skipped 2 malformed lines in " + file +
                                        " (first at line 3: invalid JSON at byte 2)"})
                            .dump());
}

TEST_F(LayerEventsSql, EmptyFileAndEmptyDirectory) {
  EXPECT_EQ(count(dir.write("empty.jsonl", "")), 0);
  EXPECT_EQ(warnings(), "[]");
  EXPECT_EQ(count(dir.write("blank.jsonl", "\n\n")), 0);
  EXPECT_EQ(warnings(), "[]");
  fs::create_directories(dir / "nothing");
  EXPECT_EQ(count(dir / "nothing"), 0);
  EXPECT_EQ(warnings(), nlohmann::json({"layer_events: no *.jsonl files in directory '" +
                                        (dir / "nothing") + "'"}).dump());
}

TEST_F(LayerEventsSql, MissingPathIsAnError) {
  EXPECT_EQ(db.error("SELECT * FROM layer_events(?1)", {dir / "nope"}),
            "layer_events: no such file or directory: '" + (dir / "nope") + "'");
  EXPECT_EQ(db.error("SELECT * FROM layer_events(?1)", {dir / "*.jsonl"}),
            "layer_events: no such file or directory: '" + (dir / "*.jsonl") + "'");
  EXPECT_EQ(db.error("SELECT * FROM layer_events"), "layer_events: missing required argument 'path'");
  EXPECT_EQ(db.error("SELECT * FROM layer_events(NULL)"), "layer_events: argument 'path' is NULL");
}

TEST_F(LayerEventsSql, JobHeaderIsSkippedSilently) {
  const std::string file = dir.write("h.jsonl", header_line() + "\n" + lines(0, 3) + header_line("job1b") + "\n");
  EXPECT_EQ(count(file), 3);
  EXPECT_EQ(warnings(), "[]");
}

TEST_F(LayerEventsSql, PushDownGivesTheSameRows) {
  std::string content;
  for (int i = 0; i < 600; ++i) content += event_line(i, i % 3 == 0 ? "job-a" : "job-b") + "\n";
  const std::string file = dir.write("many.jsonl", content);
  const double t = static_cast<double>(kT0) / 1e9;
  const std::vector<std::string> predicates = {
      "job_id = 'job-a'",
      "job_id = 'JOB-A' COLLATE NOCASE",
      "job_id = 'job-a' AND job_id = 'job-b'",
      "t_start > " + std::to_string(t + 0.2),
      "t_start >= 1714000000.2 AND t_start < 1714000000.3",
      "t_end <= 1714000000.10025 AND t_end > 1714000000.05",
      "t_start >= 1714000000.2 AND t_start >= 1714000000.4 AND t_end <= 1714000000.5",
      "job_id = 'job-b' AND t_start BETWEEN 1714000000.1 AND 1714000000.2",
      "t_start > '1714000000.5'",
      "t_start > NULL",
      "job_id = NULL",
      "t_start >= 1714000000",
      "t_end < 1714000001 AND t_start > 1713999999 AND job_id = 'job-a'",
  };
  for (const std::string& where : predicates) {
    SCOPED_TRACE(where);
    // Through a subquery with a LIMIT, the WHERE clause is not pushed into the scan: SQLite
    // filters every row itself (with the same column affinities).
    const pp_test::Value pushed =
        db.scalar("SELECT group_concat(line) FROM layer_events(?1) WHERE " + where, {file});
    const pp_test::Value filtered = db.scalar(
        "SELECT group_concat(line) FROM (SELECT * FROM layer_events(?1) LIMIT -1) WHERE " + where,
        {file});
    EXPECT_EQ(pushed.text, filtered.text);
  }
  // The plan passes the constraints down (idxNum bits beyond the path's).
  const pp_test::Rows plan = db.query(
      "EXPLAIN QUERY PLAN SELECT * FROM layer_events(?1) WHERE job_id = 'a' AND t_start > 1 "
      "AND t_end <= 2", {file});
  ASSERT_FALSE(plan.empty());
  EXPECT_NE(plan[0][3].text.find("VIRTUAL TABLE INDEX " + std::to_string(1 | 2 | 4 | (1 << 9)) + ":"),
            std::string::npos) << plan[0][3].text;
  EXPECT_EQ(count(file, "job_id = 'job-a'"), 200);
}

TEST_F(LayerEventsSql, FileAppendedBetweenQueries) {
  const std::string file = dir.write("live.jsonl", header_line() + "\n" + lines(0, 3));
  EXPECT_EQ(count(file), 3);
  dir.write("live.jsonl", lines(3, 2) + event_line(5).substr(0, 40), /*append=*/true);
  EXPECT_EQ(count(file), 5);  // the half-written line is not an event yet
  EXPECT_NE(warnings().find("incomplete last line"), std::string::npos);
  dir.write("live.jsonl", event_line(5).substr(40) + "\n", /*append=*/true);
  EXPECT_EQ(count(file), 6);
  EXPECT_EQ(warnings(), "[]");
}

TEST_F(LayerEventsSql, ArgumentFromAnotherTable) {
  dir.write("a/x.jsonl", lines(0, 2));
  dir.write("b/x.jsonl", lines(0, 5));
  db.exec("CREATE TEMP TABLE runs(p TEXT)");
  db.query("INSERT INTO runs VALUES (?1), (?2)", {dir / "a", dir / "b"});
  const pp_test::Rows rows = db.query(
      "SELECT count(*) FROM runs, layer_events(runs.p) GROUP BY runs.p ORDER BY 1");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0].integer, 2);
  EXPECT_EQ(rows[1][0].integer, 5);
}

TEST_F(LayerEventsSql, DirectOnlyRefusesPersistentViews) {
  const std::string file = dir.write("v.jsonl", lines(0, 3));
  const std::string database = dir / "hostile.db";
  {
    pp_test::TestDb writer(database);
    writer.exec("CREATE TABLE t(x)");
    writer.query("CREATE VIEW v AS SELECT count(*) FROM layer_events('" + file + "')");
    EXPECT_NE(writer.error("SELECT * FROM v").find("unsafe use of virtual table"), std::string::npos);
  }
  pp_test::TestDb reader(database);  // whoever opens the file later
  EXPECT_NE(reader.error("SELECT * FROM v").find("unsafe use of virtual table"), std::string::npos);
  reader.query("CREATE TEMP VIEW tv AS SELECT count(*) FROM layer_events('" + file + "')");
  EXPECT_EQ(reader.scalar("SELECT * FROM tv").integer, 3);
}

}  // namespace
