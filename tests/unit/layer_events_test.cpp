// layer_events: the line reader, path expansion, and the table function through an in-process
// SQLite (the line parser is event_line_test.cpp).
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
    EXPECT_EQ(std::string(e.what()), "no file matches the pattern '" + (dir / "nope*") + "'");
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

TEST_F(LayerEventsSql, AJobIdWithANulByteIsMatchedWhicheverThePlan) {
  // JSON may carry "\u0000" in a string: the job id holds the byte, and job_id = and IN match it
  // when pushed down into the scan as when SQLite filters (+job_id).
  ordered_json with_nul = event_json(0);
  with_nul["job_id"] = std::string("x\0y", 3);
  dir.write("run/rank0.jsonl", with_nul.dump() + "\n" + event_line(1) + "\n");
  const std::string path = dir / "run";
  for (const std::string where : {"job_id = 'x' || char(0) || 'y'", "job_id IN ('x' || char(0) || 'y', 'z')"}) {
    EXPECT_EQ(count(path, where), 1) << where;
    EXPECT_EQ(count(path, "+" + where), 1) << where;
  }
  EXPECT_EQ(count(path, "job_id = 'x'"), 0);
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

TEST_F(LayerEventsSql, LinkBesideItsTargetIsReadOnce) {
  // A directory holding a file and a link to it (a "latest.jsonl" some launchers keep): the
  // events are read once, not counted twice.
  fs::create_directories(dir / "run");
  const std::string file = dir.write("run/events-node-1.jsonl", lines(0, 3));
  fs::create_symlink("events-node-1.jsonl", dir / "run/latest.jsonl");
  const pp_test::Rows rows = db.query("SELECT source_file, count(*) FROM layer_events(?1) GROUP BY 1", {dir / "run"});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].text, file);
  EXPECT_EQ(rows[0][1].integer, 3);
  EXPECT_EQ(warnings(), nlohmann::json({"layer_events: " + (dir / "run/latest.jsonl") + " is the same file as " + file +
                                        "; read once"})
                            .dump());
  // A link that sorts before its target: the target is still the file read and named.
  fs::create_symlink("events-node-1.jsonl", dir / "run/0-current.jsonl");
  EXPECT_EQ(db.scalar("SELECT group_concat(DISTINCT source_file) FROM layer_events(?1)", {dir / "run"}).text, file);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1)", {dir / "run"}).integer, 3);
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

// The live emulator's --mirror and analyze --emulate leave .precisionprobe-emulated in the copy
// of a run's event files they make. A folder holding both reads every call twice (pp_refresh
// counted each twice in layer_metrics, silently, where analyze refuses such a folder): say so.
TEST_F(LayerEventsSql, AFolderHoldingEventsAndAnEmulatedCopyOfThemIsWarnedOf) {
  dir.write("demo/events/events-node-1.jsonl", header_line() + "\n" + lines(0, 2));
  dir.write("demo/emulated/events-node-1.jsonl", header_line() + "\n" + lines(0, 2));
  dir.write("demo/emulated/.precisionprobe-emulated", (dir / "demo/events") + "\n");
  EXPECT_EQ(count(dir / "demo"), 4);
  EXPECT_EQ(warnings(), nlohmann::json({"layer_events: '" + (dir / "demo") +
                                        "' holds event files and an emulator's copy of them ('" +
                                        (dir / "demo/emulated") +
                                        "'), so every call is read twice: name the copy (the calls on the emulated "
                                        "GPUs) or the events' own folder"}).dump());
  EXPECT_EQ(count(dir / "demo/emulated"), 2);  // the copy alone, or the events alone: no warning
  EXPECT_EQ(warnings(), "[]");
  EXPECT_EQ(count(dir / "demo/events"), 2);
  EXPECT_EQ(warnings(), "[]");
  // Several copies: each named, and the calls read once more for each.
  dir.write("demo/again/events-node-1.jsonl", header_line() + "\n" + lines(0, 2));
  dir.write("demo/again/.precisionprobe-emulated", (dir / "demo/events") + "\n");
  EXPECT_EQ(count(dir / "demo"), 6);
  EXPECT_EQ(warnings(), nlohmann::json({"layer_events: '" + (dir / "demo") + "' holds event files and 2 emulator's "
                                        "copies of them ('" + (dir / "demo/again") + "', '" + (dir / "demo/emulated") +
                                        "'), so calls are read more than once: name the copy (the calls on the "
                                        "emulated GPUs) or the events' own folder"}).dump());
}

TEST_F(LayerEventsSql, MissingPathIsAnError) {
  EXPECT_EQ(db.error("SELECT * FROM layer_events(?1)", {dir / "nope"}),
            "layer_events: no such file or directory: '" + (dir / "nope") + "'");
  EXPECT_EQ(db.error("SELECT * FROM layer_events(?1)", {dir / "*.jsonl"}),
            "layer_events: no file matches the pattern '" + (dir / "*.jsonl") + "'");
  // A pattern under a mistyped folder names the folder.
  EXPECT_EQ(db.error("SELECT * FROM layer_events(?1)", {dir / "rnus/*/rank*.jsonl"}),
            "layer_events: no file matches the pattern '" + (dir / "rnus/*/rank*.jsonl") +
                "' (there is no folder '" + (dir / "rnus") + "')");
  EXPECT_EQ(db.error("SELECT * FROM layer_events('')"),
            "layer_events: argument 'path' is empty: name an event file, a folder of them or a glob pattern");
  // A file taken for a directory: said as such, not as a missing path.
  const std::string file = dir.write("run.jsonl", lines(0, 1));
  EXPECT_EQ(db.error("SELECT * FROM layer_events(?1)", {file + "/"}),
            "layer_events: argument 'path' ends in '/', but '" + file + "' is a file, not a directory (drop the '/')");
  EXPECT_EQ(db.error("SELECT * FROM layer_events(?1)", {file + "/events.jsonl"}),
            "layer_events: argument 'path' goes through a file: a part of '" + file +
                "/events.jsonl' before a '/' is a file, not a directory");
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
  EXPECT_NE(plan[0][3].text.find("VIRTUAL TABLE INDEX " + std::to_string(1 | 2 | 8 | (1 << 10)) + ":"),
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
