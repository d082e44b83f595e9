// The compact event format: each record type decodes, a compact file gives exactly the rows its
// events give as JSON Lines (alone or mixed in one directory), torn and malformed lines are
// reported as in JSON Lines, an unknown version is an error, and pp_refresh reads on from any
// stored position (mid-block included) with the context it recorded.
#include <gtest/gtest.h>

#include <string>

#include "events/compact_line.hpp"
#include "events/event_decoder.hpp"
#include "unit/compact_files.hpp"
#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

using pp::CompactKind;
using pp::CompactRecord;
using pp::LineKind;
using pp_test::TempDir;

// Every column of layer_events but where a row came from (source_file, line), in file order.
const char* kRowsOf =
    "SELECT job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, local_rank, world_size, pid, epoch, "
    "batch, layer, layer_type, forward, t_start_ns, t_end_ns, cpu_num, t_start, t_end FROM layer_events(?1)";

std::string as_text(const pp_test::Rows& rows) {
  std::string out;
  for (const auto& row : rows) {
    for (const auto& value : row) out += (value.is_null() ? "NULL" : std::to_string(value.type) + ":" + value.text) + "|";
    out += "\n";
  }
  return out;
}

TEST(CompactLine, EachRecordType) {
  CompactRecord r;
  std::string problem;
  ASSERT_EQ(pp::parse_compact_line("12 b3 -1500 250000", r, problem), CompactKind::Event) << problem;
  EXPECT_EQ(r.layer, 12);
  EXPECT_EQ(r.device, 3);
  EXPECT_FALSE(r.forward);
  EXPECT_EQ(r.start, -1500);
  EXPECT_EQ(r.duration, 250000);

  ASSERT_EQ(pp::parse_compact_line("@ 1714000000000000000 2 -1", r, problem), CompactKind::Block) << problem;
  EXPECT_EQ(r.base_ns, 1714000000000000000);
  EXPECT_EQ(r.epoch, 2);
  EXPECT_EQ(r.batch, -1);

  ASSERT_EQ(pp::parse_compact_line("D 1 null \"cpu\"", r, problem), CompactKind::Device) << problem;
  EXPECT_TRUE(r.gpu.null);
  EXPECT_EQ(r.second, "cpu");
  ASSERT_EQ(pp::parse_compact_line("D 0 7 \"GPU-5c2ab3a4\"", r, problem), CompactKind::Device) << problem;
  EXPECT_EQ(r.gpu.value, 7);
  EXPECT_FALSE(r.gpu.null);

  // Names are JSON strings: spaces, quotes and non-ASCII survive.
  ASSERT_EQ(pp::parse_compact_line(R"(L 4 "blocks.\"a b\".\u00e9" "Linear")", r, problem), CompactKind::Layer) << problem;
  EXPECT_EQ(r.id, 4);
  EXPECT_EQ(r.first, "blocks.\"a b\".\xC3\xA9");
  EXPECT_EQ(r.second, "Linear");
}

TEST(CompactLine, MalformedLinesSayWhy) {
  CompactRecord r;
  std::string problem;
  const std::pair<const char*, const char*> cases[] = {
      {"12 f0 100", "bad start or duration"},
      {"12 f0 100 5 7", "bad start or duration"},
      {"12  f0 100 5", "bad direction or device"},
      {"12 x0 100 5", "bad direction or device"},
      {"-1 f0 100 5", "unknown record type '-'"},
      {"12 f0 9223372036854775808 5", "bad start or duration"},   // 2^63: out of int64
      {"12 f0 -9223372036854775808 5", nullptr},                   // -2^63 fits
      {"@ 1714000000000000000 0", "a block line is '@ BASE_NS EPOCH BATCH'"},
      {"@1714000000000000000 0 0", "a block line is '@ BASE_NS EPOCH BATCH'"},
      {"D 0 0 GPU-1", "a device line is"},
      {"L 0 \"a\"", "a layer line is"},
      {"L 0 \"a\" \"b\\x\"", "a layer line is"},
      {"Z 1", "unknown record type 'Z'"},
      {"\x01", "unknown record type '\\x01'"},
  };
  for (const auto& [line, why] : cases) {
    const CompactKind kind = pp::parse_compact_line(line, r, problem);
    if (!why) {
      EXPECT_EQ(kind, CompactKind::Event) << line;
      continue;
    }
    EXPECT_EQ(kind, CompactKind::Malformed) << line;
    EXPECT_NE(problem.find(why), std::string::npos) << line << ": " << problem;
  }
}

TEST(CompactDecoder, StateRestoresTheContextAtAnyLine) {
  pp_test::CompactWriter writer;
  const std::string text = pp_test::concat({writer.file_start(), writer.events(0, 6), writer.events(6, 6)});
  // Decode the whole file once; then for every line boundary, save the state there and decode
  // the rest with a fresh decoder restored from it: the same events.
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(text.substr(at, nl - at));
  std::vector<std::string> whole;
  pp::EventDecoder decoder;
  decoder.reset("f.jsonl");
  pp::LayerEvent event;
  std::string problem;
  std::vector<std::string> states;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (decoder.decode(lines[i], static_cast<int64_t>(i + 1), true, event, problem) == LineKind::Event)
      whole.push_back(event.layer + "@" + std::to_string(event.t_start_ns) + "/" + std::to_string(event.batch));
    states.push_back(decoder.state());
  }
  ASSERT_EQ(whole.size(), 12u);
  for (size_t stop = 1; stop < lines.size(); ++stop) {
    pp::EventDecoder resumed;
    resumed.reset("f.jsonl");
    ASSERT_TRUE(resumed.restore(states[stop - 1], problem)) << problem;
    std::vector<std::string> rest;
    for (size_t i = stop; i < lines.size(); ++i)
      if (resumed.decode(lines[i], static_cast<int64_t>(i + 1), true, event, problem) == LineKind::Event)
        rest.push_back(event.layer + "@" + std::to_string(event.t_start_ns) + "/" + std::to_string(event.batch));
    EXPECT_EQ(rest, std::vector<std::string>(whole.end() - static_cast<long>(rest.size()), whole.end())) << "stop " << stop;
  }
  pp::EventDecoder other;
  other.reset("f.jsonl");
  EXPECT_FALSE(other.restore("12 f0 1 2\n", problem));
  EXPECT_EQ(problem, "the saved state is not of a compact file");
}

// Readers decode millions of events into one LayerEvent, and the decoder copies the job, device
// and layer texts only when their definitions change: a redefinition, a new job header, another
// file, a JSON Lines event in between each show in the next event.
TEST(CompactDecoder, OneEventObjectFollowsEveryDefinitionAcrossFilesAndFormats) {
  pp::LayerEvent event;
  std::string problem;
  const auto header = [](const std::string& job) { return pp_test::compact_header_line(job); };
  const auto decoded = [&](pp::EventDecoder& decoder, const std::vector<std::string>& lines) {
    std::vector<std::string> out;
    for (size_t i = 0; i < lines.size(); ++i)
      if (decoder.decode(lines[i], static_cast<int64_t>(i + 1), true, event, problem) == LineKind::Event)
        out.push_back(event.job_id + " " + event.gpu_uuid + " " + std::to_string(event.gpu.value) + " " + event.layer +
                      " " + event.layer_type);
    return out;
  };
  pp::EventDecoder compact;
  compact.reset("a.jsonl");
  EXPECT_EQ(decoded(compact, {"#precisionprobe-events compact 1", header("jobA"), "D 0 0 \"GPU-a\"",
                              "L 0 \"l0\" \"Linear\"", "@ 1714000000000000000 0 0", "0 f0 0 100",
                              "D 0 1 \"GPU-b\"", "0 f0 200 100", "L 0 \"l9\" \"ReLU\"", "0 f0 400 100", header("jobB"),
                              "0 f0 600 100", pp_test::event_line(0, "jobJ"), "0 f0 800 100"}),
            (std::vector<std::string>{"jobA GPU-a 0 l0 Linear", "jobA GPU-b 1 l0 Linear", "jobA GPU-b 1 l9 ReLU",
                                      "jobB GPU-b 1 l9 ReLU", "jobJ " + pp_test::event_json(0)["gpu_uuid"].get<std::string>() +
                                      " " + std::to_string(pp_test::event_json(0)["gpu"].get<int64_t>()) + " " +
                                      pp_test::event_json(0)["layer"].get<std::string>() + " " +
                                      pp_test::event_json(0)["layer_type"].get<std::string>(),
                                      "jobB GPU-b 1 l9 ReLU"}));
  pp::EventDecoder json;
  json.reset("b.jsonl");
  EXPECT_EQ(decoded(json, {pp_test::event_line(0)}).size(), 1u);
  EXPECT_EQ(event.job_id, "job1");
  // Another file with the same-looking definitions, read into the same object after JSON.
  pp::EventDecoder again;
  again.reset("c.jsonl");
  EXPECT_EQ(decoded(again, {"#precisionprobe-events compact 1", header("jobC"), "D 0 0 \"GPU-a\"",
                            "L 0 \"l0\" \"Linear\"", "@ 1714000000000000000 0 0", "0 f0 0 100"}),
            (std::vector<std::string>{"jobC GPU-a 0 l0 Linear"}));
}

class CompactEvents : public ::testing::Test {
 protected:
  std::string warnings() { return db.scalar("SELECT pp_last_warnings()").text; }
  TempDir dir;
  pp_test::TestDb db;
};

TEST_F(CompactEvents, SameRowsAsJsonLinesAloneAndMixedInOneDirectory) {
  pp_test::CompactWriter writer;
  const std::string compact = dir.write("compact/rank0.jsonl", pp_test::concat({writer.file_start(), writer.events(0, 7), writer.events(7, 9)}));
  const std::string json = dir.write("json/rank0.jsonl", pp_test::compact_header_line() + "\n" + pp_test::lines(0, 16));
  const std::string expected = as_text(db.query(kRowsOf, {json}));
  ASSERT_EQ(db.query(kRowsOf, {json}).size(), 16u);
  EXPECT_EQ(as_text(db.query(kRowsOf, {compact})), expected);
  EXPECT_EQ(warnings(), "[]");

  // One directory with both: each file read in its own format, in path order.
  dir.write("mixed/a.jsonl", pp_test::compact_header_line() + "\n" + pp_test::lines(0, 16));
  pp_test::CompactWriter second;
  dir.write("mixed/b.jsonl", pp_test::concat({second.file_start(), second.events(0, 16)}));
  EXPECT_EQ(as_text(db.query(kRowsOf, {dir / "mixed"})), expected + expected);
  // Lines are the file's own: line 1 is the format line, 2 the header.
  EXPECT_EQ(db.scalar("SELECT min(line) FROM layer_events(?1)", {compact}).integer, 6);  // after L, D and block lines
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_jobs(?1) WHERE params = 1234 AND line = 2", {compact}).integer, 1);
}

TEST_F(CompactEvents, TornLastLineIsSkippedWithOneWarningAndNeverReadAsAShorterEvent) {
  pp_test::CompactWriter writer;
  const std::string whole = pp_test::concat({writer.file_start(), writer.events(0, 4)});
  const std::string last = "3 b0 3000000 250000";
  ASSERT_EQ(whole.substr(whole.size() - last.size() - 1), last + "\n");
  // Every prefix of the last line without its newline ("3 b0 3000000 25" would parse).
  for (size_t cut = 1; cut <= last.size(); ++cut) {
    const std::string file = dir.write("torn.jsonl", whole.substr(0, whole.size() - last.size() - 1) + last.substr(0, cut));
    EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1)", {file}).integer, 3) << cut;
    EXPECT_EQ(warnings(), "[\"layer_events: skipped 1 malformed line in " + file +
                              " (first at line 12: incomplete last line (no newline))\"]")
        << cut;
  }
}

TEST_F(CompactEvents, MalformedLinesNameTheFileTheLineAndTheProblem) {
  pp_test::CompactWriter writer;
  const std::string start = pp_test::concat({writer.file_start(), writer.events(0, 2)});  // lines 1-8
  const std::string file = dir.write("bad.jsonl", start +
                                                      "9 f0 10 20\n"             // line 9: layer 9 undefined
                                                      "@ 1714000000 0\n"         // line 10: damaged block line
                                                      "0 f0 10 20\n"             // line 11: no block to place it
                                                      "@ 1714000000000000000 0 5\n"
                                                      "0 f0 10 20\n");           // line 13: fine again
  EXPECT_EQ(as_text(db.query("SELECT line, batch, t_start_ns FROM layer_events(?1)", {file})),
            "1:6|1:0|1:1714000000000000000|\n1:8|1:0|1:1714000000001000000|\n1:13|1:5|1:1714000000000000010|\n");
  EXPECT_EQ(warnings(), "[\"layer_events: skipped 3 malformed lines in " + file +
                            " (first at line 9: layer id 9 is not defined)\"]");

  const std::string no_header = dir.write("no_header.jsonl", "#precisionprobe-events compact 1\nL 0 \"a\" \"b\"\nD 0 null \"cpu\"\n@ 5 0 0\n0 f0 1 2\n");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1)", {no_header}).integer, 0);
  EXPECT_EQ(warnings(), "[\"layer_events: skipped 1 malformed line in " + no_header +
                            " (first at line 5: an event before the job header)\"]");
}

TEST_F(CompactEvents, AnUnreadableLineMayHaveBeenABlockLineAndADamagedDefinitionCostsOnlyItsOwnEvents) {
  pp_test::CompactWriter writer;
  const std::string start = pp_test::concat({writer.file_start(), writer.events(0, 2)});  // lines 1-8: layers 0, 1
  const std::string file = dir.write("damaged.jsonl", start +
                                                          "x 1714000000000000000 0 5\n"  // line 9: a damaged '@'
                                                          "0 f0 10 20\n"                 // line 10: its time unknown
                                                          "@ 1714000000000000000 0 5\n"
                                                          "0 f0 10 20\n"                 // line 12: fine
                                                          "L 2 \"fc2\"\n"                // line 13: damaged definition
                                                          "L 3 \"fc3\" \"Linear\"\n"     // line 14: skips id 2
                                                          "@ 1714000000000000000 0 6\n"
                                                          "3 f0 30 20\n"                 // line 16: fine
                                                          "2 f0 40 20\n"                 // line 17: layer 2 undefined
                                                          "1 b0 50 20\n"                 // line 18: fine
                                                          "L 1030 \"far\" \"Linear\"\n"  // line 19: skips too many ids
                                                          "1 f0 60 20\n");               // line 20: fine
  EXPECT_EQ(as_text(db.query("SELECT line, batch, layer, t_start_ns FROM layer_events(?1)", {file})),
            "1:6|1:0|3:top_l.0|1:1714000000000000000|\n1:8|1:0|3:top_l.1|1:1714000000001000000|\n"
            "1:12|1:5|3:top_l.0|1:1714000000000000010|\n1:16|1:6|3:fc3|1:1714000000000000030|\n"
            "1:18|1:6|3:top_l.1|1:1714000000000000050|\n1:20|1:6|3:top_l.1|1:1714000000000000060|\n");
  EXPECT_EQ(warnings(), "[\"layer_events: skipped 5 malformed lines in " + file +
                            " (first at line 9: unknown record type 'x')\"]");
}

TEST_F(CompactEvents, DefinitionWithAnEmptyNameMakesItsEventsMalformedAndNothingElse) {
  // Device 0 and layer 1 have empty names: their events are skipped with the reason; the ids
  // after them stay in order, and a redefinition with a name makes the id usable again.
  pp_test::CompactWriter writer;
  const std::string file = dir.write("empty_names.jsonl", writer.file_start() +
                                                              "D 0 0 \"\"\n"
                                                              "D 1 1 \"GPU-1\"\n"
                                                              "L 0 \"fc\" \"Linear\"\n"
                                                              "L 1 \"\" \"ReLU\"\n"
                                                              "@ 1714000000000000000 0 0\n"
                                                              "0 f0 10 20\n"    // line 8: device 0 has no UUID
                                                              "1 f1 30 20\n"    // line 9: layer 1 has no name
                                                              "0 f1 50 20\n"    // line 10: fine
                                                              "D 0 0 \"GPU-0\"\n"
                                                              "0 f0 70 20\n");  // line 12: fine again
  EXPECT_EQ(as_text(db.query("SELECT line, gpu_uuid, layer FROM layer_events(?1)", {file})),
            "1:10|3:GPU-1|3:fc|\n1:12|3:GPU-0|3:fc|\n");
  EXPECT_EQ(warnings(), "[\"layer_events: skipped 2 malformed lines in " + file +
                            " (first at line 8: device id 0 has an empty GPU_UUID)\"]");
}

TEST_F(CompactEvents, UnknownVersionIsAnErrorNamingTheFileAndTheVersion) {
  const std::string file = dir.write("v2.jsonl", "#precisionprobe-events compact 2\n{\"record\":\"job\",\"job_id\":\"j\"}\n");
  EXPECT_EQ(db.error("SELECT count(*) FROM layer_events(?1)", {file}),
            "layer_events: " + file + ": event file format 'compact 2' is not one this reader knows (it reads JSON Lines "
            "and 'compact 1'); was it written by a newer precisionprobe?");
  EXPECT_NE(db.error("SELECT count(*) FROM layer_jobs(?1)", {file}).find("'compact 2' is not one this reader knows"),
            std::string::npos);
  // The rest of the line is quoted printable and short, whatever bytes it holds.
  const std::string odd = dir.write("odd.jsonl", std::string("#precisionprobe-events co\0\x01", 27) + std::string(60, 'x') + "\n");
  EXPECT_EQ(db.error("SELECT count(*) FROM layer_events(?1)", {odd}),
            "layer_events: " + odd + ": event file format 'co??" + std::string(36, 'x') +
                "...' is not one this reader knows (it reads JSON Lines and 'compact 1'); was it written by a newer "
                "precisionprobe?");
}

// pp_refresh reading on from a stored position, with CPU events (no Prometheus needed).
class CompactImport : public CompactEvents {
 protected:
  int64_t refresh(const std::string& path, bool final = false) {
    return db.scalar("SELECT events_added FROM pp_refresh(?1, ?2)", {path, final ? "1" : "0"}).integer;
  }
  std::string imported(const std::string& file) {
    return as_text(db.query("SELECT job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, epoch, batch, layer, "
                            "layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, cpu_num FROM pp_events "
                            "WHERE source_file = ?1 ORDER BY line", {file}));
  }
};

TEST_F(CompactImport, ReadsOnFromEveryLineBoundaryWithTheSameRowsAsJsonLines) {
  const std::string json = dir.write("json/rank0.jsonl", pp_test::compact_header_line() + "\n" + pp_test::cpu_lines(0, 12));
  EXPECT_EQ(refresh(json), 12);
  const std::string expected = imported(json);

  pp_test::CompactWriter writer(/*cpu=*/true);
  const std::string text = pp_test::concat({writer.file_start(), writer.events(0, 5), writer.events(5, 7)});
  // Written up to each line boundary (mid-block included), refreshed, then written to the end.
  int boundaries = 0;
  for (size_t cut = text.find('\n') + 1; cut < text.size(); cut = text.find('\n', cut) + 1, ++boundaries) {
    const std::string name = "compact" + std::to_string(cut) + "/rank0.jsonl";
    const std::string file = dir.write(name, text.substr(0, cut));
    refresh(file);
    dir.write(name, text.substr(cut), /*append=*/true);
    refresh(file);
    EXPECT_EQ(imported(file), expected) << "cut at byte " << cut;
    EXPECT_EQ(warnings(), "[]") << "cut at byte " << cut;
  }
  EXPECT_GT(boundaries, 20);
  // The context is recorded per compact file, nothing for JSON Lines.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_event_file_state WHERE source_file = ?1", {json}).integer, 0);
}

TEST_F(CompactImport, LineBeingWrittenIsImportedOnceWhole) {
  pp_test::CompactWriter writer(/*cpu=*/true);
  const std::string text = pp_test::concat({writer.file_start(), writer.events(0, 3)});
  const std::string file = dir.write("rank0.jsonl", text.substr(0, text.size() - 5));  // last event torn
  EXPECT_EQ(refresh(file), 2);
  EXPECT_EQ(warnings(), "[]");  // the writer is not done with it
  EXPECT_EQ(refresh(file, /*final=*/true), 0);
  EXPECT_NE(warnings().find("skipped 1 malformed line in " + file + " (first at line 10: incomplete last line"), std::string::npos)
      << warnings();
  dir.write("rank0.jsonl", text.substr(text.size() - 5), /*append=*/true);
  EXPECT_EQ(refresh(file), 1);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 3);
}

TEST_F(CompactImport, DamagedStoredContextMeansReadingFromTheStart) {
  pp_test::CompactWriter writer(/*cpu=*/true);
  const std::string file = dir.write("rank0.jsonl", pp_test::concat({writer.file_start(), writer.events(0, 4)}));
  EXPECT_EQ(refresh(file), 4);
  db.exec("UPDATE pp_event_file_state SET state = 'garbage'");
  dir.write("rank0.jsonl", writer.events(4, 4), /*append=*/true);
  EXPECT_EQ(refresh(file), 4);  // read again from the start; the first four are in already
  EXPECT_NE(warnings().find(file + ": cannot read on from byte"), std::string::npos) << warnings();
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 8);
}

TEST_F(CompactImport, ReplacedCompactFileIsToldByItsHeaderLine) {
  pp_test::CompactWriter first(/*cpu=*/true, "job1");
  const std::string file = dir.write("rank0.jsonl", pp_test::concat({first.file_start(), first.events(0, 4)}));
  EXPECT_EQ(refresh(file), 4);
  // Another process's file under the same name: the same format line, another header.
  pp_test::CompactWriter second(/*cpu=*/true, "job2");
  dir.write("rank0.jsonl", pp_test::concat({second.file_start(), second.events(0, 6)}));
  EXPECT_EQ(refresh(file), 6);
  EXPECT_NE(warnings().find("was replaced since it was last read"), std::string::npos) << warnings();
  EXPECT_EQ(db.scalar("SELECT group_concat(DISTINCT job_id) FROM pp_events WHERE source_file = ?1", {file}).text, "job2");
}

}  // namespace
