// pp_refresh's import of event files: each refresh reads only what was written since the last
// one, a line still being written is imported once it is whole, a file that was truncated is
// read again from the start (its lines still as they were read kept once), and a file replaced by new content under its name (told by its
// first line, not by where its lines end) has its new events imported while the rows read
// from it before are kept. CPU events, so no Prometheus is needed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "unit/compact_files.hpp"
#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

using pp_test::cpu_line;
using pp_test::cpu_lines;
using pp_test::TempDir;

class EventImport : public ::testing::Test {
 protected:
  // pp_refresh(path, final)'s events_added.
  int64_t refresh(bool final = false) {
    return db.scalar("SELECT events_added FROM pp_refresh(?1, ?2)", {file, final ? "1" : "0"}).integer;
  }
  std::string warnings() { return db.scalar("SELECT pp_last_warnings()").text; }
  int64_t count(const std::string& sql) { return db.scalar(sql).integer; }

  TempDir dir;
  pp_test::TestDb db;
  std::string file = dir / "job1/rank0.jsonl";
};

TEST_F(EventImport, RefreshReadsOnlyWhatWasWrittenSince) {
  const std::string first = pp_test::header_line() + "\n" + cpu_lines(0, 3);
  dir.write("job1/rank0.jsonl", first);
  EXPECT_EQ(refresh(), 3);
  EXPECT_EQ(count("SELECT count(*) FROM pp_jobs"), 1);
  const pp_test::Rows position = db.query("SELECT bytes, lines FROM pp_event_files WHERE source_file = ?1", {file});
  ASSERT_EQ(position.size(), 1u);
  EXPECT_EQ(position[0][0].integer, static_cast<int64_t>(first.size()));
  EXPECT_EQ(position[0][1].integer, 4);

  // Spoil line 2 in place (same length): a refresh that read the file again would skip it
  // with a warning; one that reads on from its position never sees it.
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(pp_test::header_line().size() + 1));
    f << std::string(cpu_line(0).size(), 'x');
  }
  dir.write("job1/rank0.jsonl", cpu_lines(3, 2), /*append=*/true);
  EXPECT_EQ(refresh(), 2);
  EXPECT_EQ(warnings(), "[]");
  EXPECT_EQ(count("SELECT max(line) FROM pp_events"), 6);
  EXPECT_EQ(refresh(), 0);  // nothing new
}

// A writer that kept only whole milliseconds (a converted trace, not the hook client): its
// short calls last 0 or 1 ms, which no estimate undoes, so the refresh says so; ns times
// (the hook client's, here 0.25 ms calls) and a handful of events say nothing.
TEST_F(EventImport, EventTimesInWholeMillisecondsAreSaid) {
  std::string whole_ms;
  for (int i = 0; i < 150; ++i) {
    auto event = pp_test::cpu_event_json(i);
    event["t_end_ns"] = event["t_start_ns"].get<int64_t>() + 1000000;
    whole_ms += event.dump() + "\n";
  }
  dir.write("job1/rank0.jsonl", whole_ms);
  EXPECT_EQ(refresh(), 150);
  EXPECT_NE(warnings().find("rank0.jsonl: the times of its 150 events read now are all whole milliseconds"),
            std::string::npos)
      << warnings();
  dir.write("job2/rank0.jsonl", cpu_lines(0, 150));
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job2"}).integer, 150);
  EXPECT_EQ(warnings(), "[]");
}

// One line whose clock was 30 days off: the job's span would run over the month between, so the
// refresh names the line, wherever it is: in the middle (a step back, then one ahead), first,
// last, or the first line a later refresh reads. Calls of two threads ending in another order,
// seconds apart, say nothing.
TEST_F(EventImport, AnEventTimeFarFromTheLineBeforeIsSaid) {
  constexpr int64_t kMonthNs = 30LL * 86400 * 1000000000;
  const auto lines = [](int first, int count, int off, int64_t by_ns) {
    std::string text;
    for (int i = first; i < first + count; ++i) {
      auto event = pp_test::cpu_event_json(i);
      if (i == off) {
        event["t_start_ns"] = event["t_start_ns"].get<int64_t>() + by_ns;
        event["t_end_ns"] = event["t_end_ns"].get<int64_t>() + by_ns;
      }
      text += event.dump() + "\n";
    }
    return text;
  };
  const auto refresh_of = [&](const std::string& job) {
    return db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / job}).integer;
  };
  dir.write("middle/rank0.jsonl", lines(0, 6, 3, -kMonthNs));
  EXPECT_EQ(refresh_of("middle"), 6);
  EXPECT_NE(warnings().find("rank0.jsonl line 4: its event ends 30.0 days before the one on line 3 (and 1 more such "
                            "jumps in the lines read now): a clock step or a corrupt time, which stretches its job's "
                            "span, and its GPU seconds, over the time between"),
            std::string::npos)
      << warnings();

  dir.write("first/rank0.jsonl", lines(0, 6, 0, -kMonthNs));
  EXPECT_EQ(refresh_of("first"), 6);
  EXPECT_NE(warnings().find("rank0.jsonl line 2: its event starts 30.0 days after the one on line 1 ended: a clock "
                            "step or a corrupt time (or a job paused that long)"),
            std::string::npos)
      << warnings();

  dir.write("last/rank0.jsonl", lines(0, 6, 5, kMonthNs));
  EXPECT_EQ(refresh_of("last"), 6);
  EXPECT_NE(warnings().find("rank0.jsonl line 6: its event starts 30.0 days after the one on line 5 ended"),
            std::string::npos)
      << warnings();

  dir.write("later/rank0.jsonl", lines(0, 4, -1, 0));
  EXPECT_EQ(refresh_of("later"), 4);
  EXPECT_EQ(warnings(), "[]");
  dir.write("later/rank0.jsonl", lines(4, 2, 4, -kMonthNs), /*append=*/true);
  EXPECT_EQ(refresh_of("later"), 2);
  EXPECT_NE(warnings().find("rank0.jsonl line 5: its event ends 30.0 days before the one on line 4"), std::string::npos)
      << warnings();

  std::string swapped;
  for (int i : {0, 2, 1, 3}) {
    auto event = pp_test::cpu_event_json(i);
    event["t_end_ns"] = event["t_end_ns"].get<int64_t>() + (i == 2 ? 5000000000LL : 0);
    swapped += event.dump() + "\n";
  }
  dir.write("swapped/rank0.jsonl", swapped);
  EXPECT_EQ(refresh_of("swapped"), 4);
  EXPECT_EQ(warnings(), "[]");
}

TEST_F(EventImport, LayersWhoseNameAndTypeRunTogetherAlikeStayApart) {
  // A NUL written as \u0000 is part of a name: ("a\0b", "c") and ("a", "b\0c") are two layers.
  const auto line = [](int i, const std::string& layer, const std::string& type) {
    nlohmann::ordered_json event = pp_test::cpu_event_json(i);
    event["layer"] = layer;
    event["layer_type"] = type;
    return event.dump() + "\n";
  };
  dir.write("job1/rank0.jsonl", line(0, std::string("a\0b", 3), "c") + line(1, "a", std::string("b\0c", 3)));
  EXPECT_EQ(refresh(), 2);
  EXPECT_EQ(count("SELECT count(*) FROM pp_events_layers"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM pp_events WHERE (line = 1 AND layer = CAST(x'610062' AS TEXT) AND layer_type = 'c') "
                  "OR (line = 2 AND layer = 'a' AND layer_type = CAST(x'620063' AS TEXT))"),
            2);
}

TEST_F(EventImport, LineBeingWrittenIsImportedOnceWhole) {
  dir.write("job1/rank0.jsonl", cpu_lines(0, 2) + cpu_line(2).substr(0, 40));
  EXPECT_EQ(refresh(), 2);
  EXPECT_EQ(warnings(), "[]");  // not malformed: the writer is not done with it
  dir.write("job1/rank0.jsonl", cpu_line(2).substr(40) + "\n" + cpu_line(3).substr(0, 10), /*append=*/true);
  EXPECT_EQ(refresh(), 1);
  EXPECT_EQ(count("SELECT count(*) FROM pp_events WHERE line = 3"), 1);
  // With final = 1 the writer is done: the torn last line is reported.
  EXPECT_EQ(refresh(/*final=*/true), 0);
  EXPECT_NE(warnings().find("pp_refresh: skipped 1 malformed line in " + file + " (first at line 4: incomplete"),
            std::string::npos)
      << warnings();
}

TEST_F(EventImport, TruncatedFileIsReadFromTheStart) {
  dir.write("job1/rank0.jsonl", cpu_lines(0, 4));
  EXPECT_EQ(refresh(), 4);
  dir.write("job1/rank0.jsonl", cpu_lines(0, 2));  // truncated: shorter than it was
  EXPECT_EQ(refresh(), 0);                         // its lines are already in
  EXPECT_NE(warnings().find("no longer ends a line at byte"), std::string::npos) << warnings();
  dir.write("job1/rank0.jsonl", cpu_lines(2, 4), /*append=*/true);  // written on: lines 3-6
  EXPECT_EQ(refresh(), 2);
  EXPECT_EQ(count("SELECT max(line) FROM pp_events"), 6);
}

TEST_F(EventImport, FileRewrittenUnderItsFirstLineHasItsNewEventsImported) {
  const std::string head = pp_test::header_line() + "\n" + cpu_line(0) + "\n";
  dir.write("job1/rank0.jsonl", head + cpu_lines(1, 3));
  EXPECT_EQ(refresh(), 4);
  // Rewritten, shorter: the same first two lines, then other events. Read again from the start,
  // line 2 is the event stored from it (kept once), line 3 is not: the file's rows read before
  // are kept under another name, and its lines from 3 on are read.
  dir.write("job1/rank0.jsonl", head + cpu_lines(10, 2));
  EXPECT_EQ(refresh(), 2);
  const std::string kept = file + " (replaced 1)";
  EXPECT_NE(warnings().find("no longer ends a line at byte"), std::string::npos) << warnings();
  EXPECT_NE(warnings().find(file + " was rewritten since it was last read (line 3 is not the event read from it "
                                   "then); the rows read from it before are kept as source_file '" + kept +
                            "', and its lines from 3 on are read"),
            std::string::npos)
      << warnings();
  EXPECT_EQ(db.scalar("SELECT group_concat(t_start_ns, ',') FROM (SELECT t_start_ns FROM pp_events WHERE source_file = ?1 "
                      "ORDER BY line)", {file}).text,
            db.scalar("SELECT group_concat(t_start_ns, ',') FROM (SELECT t_start_ns FROM layer_events(?1) "
                      "WHERE line >= 3 ORDER BY line)", {file}).text);
  EXPECT_EQ(count("SELECT count(*) FROM pp_events WHERE source_file = '" + kept + "'"), 4);
  EXPECT_EQ(refresh(), 0);  // then read on as usual
  EXPECT_EQ(warnings(), "[]");
}

TEST_F(EventImport, AnEventWhereALineWithoutOneWasIsANewEvent) {
  // Line 2 was a second job header (no event stored from it); rewritten, it is an event: the
  // file was rewritten from there, not a line already read.
  const std::string header = pp_test::header_line() + "\n";
  dir.write("job1/rank0.jsonl", header + header + cpu_lines(0, 3));
  EXPECT_EQ(refresh(), 3);
  dir.write("job1/rank0.jsonl", header + cpu_lines(10, 2));
  EXPECT_EQ(refresh(), 2);
  EXPECT_NE(warnings().find("(line 2 is not the event read from it then)"), std::string::npos) << warnings();
  EXPECT_EQ(count("SELECT count(*) FROM pp_events WHERE source_file = '" + file + "'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM pp_events WHERE source_file = '" + file + " (replaced 1)'"), 3);
}

TEST_F(EventImport, ReplacedFileHasItsNewEventsImportedAndTheOldOnesKept) {
  dir.write("job1/rank0.jsonl", cpu_lines(0, 4));
  EXPECT_EQ(refresh(), 4);
  // New content of the same line lengths: every old position still ends a line.
  const std::string replacement = cpu_lines(10, 4);
  ASSERT_EQ(replacement.size(), cpu_lines(0, 4).size());
  dir.write("job1/rank0.jsonl", replacement + cpu_lines(14, 1));
  EXPECT_EQ(refresh(), 5);
  const std::string kept = file + " (replaced 1)";
  EXPECT_EQ(warnings(), "[\"pp_refresh: " + file +
                            " was replaced since it was last read (its first line is not the one read then); reading "
                            "it from the start; the rows read from it before are kept as source_file '" + kept + "'\"]");
  EXPECT_EQ(db.scalar("SELECT group_concat(batch, ',') FROM (SELECT batch FROM pp_events WHERE source_file = ?1 "
                      "ORDER BY line)", {file}).text,
            "2,2,3,3,3");
  EXPECT_EQ(count("SELECT count(*) FROM pp_events WHERE source_file = '" + kept + "'"), 4);
  EXPECT_EQ(refresh(), 0);  // then read on as usual
  EXPECT_EQ(warnings(), "[]");
  dir.write("job1/rank0.jsonl", cpu_lines(20, 4));  // replaced again
  EXPECT_EQ(refresh(), 4);
  EXPECT_EQ(count("SELECT count(*) FROM pp_events WHERE source_file = '" + file + " (replaced 2)'"), 5);
}

TEST_F(EventImport, DatabaseFromBeforeFileHeadsIsUpgradedAndReadOn) {
  // pp_event_files as an earlier version made it, with a position in a file imported then.
  dir.write("job1/rank0.jsonl", cpu_lines(0, 4));
  EXPECT_EQ(refresh(), 4);
  db.exec("DROP TABLE pp_event_files; "
          "CREATE TABLE pp_event_files(source_file TEXT PRIMARY KEY, bytes INTEGER NOT NULL, lines INTEGER NOT NULL);");
  db.exec("INSERT INTO pp_event_files VALUES ('" + file + "', " + std::to_string(cpu_lines(0, 4).size()) + ", 4)");
  dir.write("job1/rank0.jsonl", cpu_lines(4, 1), /*append=*/true);
  EXPECT_EQ(refresh(), 1);  // read on from the old position; the head is recorded from now on
  EXPECT_EQ(count("SELECT head_bytes FROM pp_event_files"), static_cast<int64_t>(cpu_line(0).size() + 1));
  dir.write("job1/rank0.jsonl", cpu_lines(10, 5));
  EXPECT_EQ(refresh(), 5);  // and a replacement is noticed
}

TEST_F(EventImport, AFileNamedAnotherWayIsTheSameFile) {
  dir.write("job1/rank0.jsonl", pp_test::header_line() + "\n" + cpu_lines(0, 3));
  EXPECT_EQ(refresh(), 3);
  // Relative to the working directory, through "..", with a doubled slash, through a link:
  // each is the file read above, read on from where it was and recorded under its first name.
  const std::string relative = std::filesystem::relative(file).string();
  ASSERT_NE(relative, file);
  ASSERT_EQ(::symlink(file.c_str(), (dir / "link.jsonl").c_str()), 0);
  int added = 3;
  for (const std::string& other : {relative, dir / "job1/../job1/rank0.jsonl", dir / "job1//rank0.jsonl",
                                   dir / "link.jsonl"}) {
    SCOPED_TRACE(other);
    dir.write("job1/rank0.jsonl", cpu_line(added++) + "\n", /*append=*/true);
    EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {other}).integer, 1);
    EXPECT_EQ(warnings(), "[]");
  }
  EXPECT_EQ(count("SELECT count(*) FROM pp_events"), 7);
  EXPECT_EQ(count("SELECT count(DISTINCT source_file) FROM pp_events"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM pp_jobs"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM pp_event_files"), 1);
  // A folder holding the link beside its target reads the file once, by the target's name
  // (though the link sorts first), and says why.
  dir.write("job1/rank0.jsonl", cpu_line(added++) + "\n", /*append=*/true);
  ASSERT_EQ(::symlink(file.c_str(), (dir / "job1/latest.jsonl").c_str()), 0);
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 1);
  EXPECT_EQ(warnings(), "[\"pp_refresh: " + dir / "job1/latest.jsonl" + " is the same file as " + dir / "job1/rank0.jsonl" +
                            "; read once\"]");
  EXPECT_EQ(count("SELECT count(*) FROM pp_events"), 8);
}

TEST_F(EventImport, AFileRecordedBeforeRealPathsIsKnownByAnotherName) {
  dir.write("job1/rank0.jsonl", cpu_lines(0, 4));
  EXPECT_EQ(refresh(), 4);
  db.exec("ALTER TABLE pp_event_files DROP COLUMN real_path");  // as a version before them left it
  dir.write("job1/rank0.jsonl", cpu_lines(4, 1), /*append=*/true);
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1/./rank0.jsonl"}).integer, 1);
  EXPECT_EQ(count("SELECT count(*) FROM pp_events"), 5);
  EXPECT_EQ(db.scalar("SELECT real_path FROM pp_event_files").text, std::filesystem::canonical(file).string());
}

TEST_F(EventImport, ARenamedFileIsReadOnFromWhereItWas) {
  // A folder refreshed as a whole; the file is renamed between refreshes (moved aside, a
  // writer that names its file by the hour): its events are not imported again under the
  // new name, and what was written on after the rename is.
  dir.write("job1/rank0.jsonl", pp_test::header_line() + "\n" + cpu_lines(0, 3));
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 3);
  std::filesystem::rename(file, dir / "job1/rank0-old.jsonl");
  dir.write("job1/rank0-old.jsonl", cpu_lines(3, 2), /*append=*/true);
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 2);
  EXPECT_EQ(warnings(), "[\"pp_refresh: " + file + " was renamed to " + dir / "job1/rank0-old.jsonl" +
                            " since it was last read; reading it on from line 5 (its rows keep source_file '" + file +
                            "')\"]");
  EXPECT_EQ(count("SELECT count(*) FROM pp_events"), 5);
  EXPECT_EQ(count("SELECT count(*) FROM pp_jobs"), 1);
  EXPECT_EQ(count("SELECT count(DISTINCT source_file) FROM pp_events"), 1);
  // Known by its new real path from then on: read on quietly.
  dir.write("job1/rank0-old.jsonl", cpu_lines(5, 1), /*append=*/true);
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 1);
  EXPECT_EQ(warnings(), "[]");
  // A file of other content under the old name is a new file, read from its start.
  dir.write("job1/rank0.jsonl", cpu_lines(10, 2));
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 2);
  EXPECT_EQ(count("SELECT count(*) FROM pp_events"), 8);
}

TEST_F(EventImport, ARenamedCompactFileIsReadOnFromWhereItWas) {
  pp_test::CompactWriter writer(/*cpu=*/true);
  const std::string compact = dir / "job1/rank0c.jsonl";
  dir.write("job1/rank0c.jsonl", pp_test::concat({writer.file_start(), writer.events(0, 8)}));
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 8);
  std::filesystem::rename(compact, dir / "job1/rank0c.1.jsonl");
  dir.write("job1/rank0c.1.jsonl", writer.events(8, 4), /*append=*/true);
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 4);
  EXPECT_NE(warnings().find(compact + " was renamed to "), std::string::npos) << warnings();
  EXPECT_EQ(count("SELECT count(*) FROM pp_events"), 12);
  EXPECT_EQ(count("SELECT count(DISTINCT t_start_ns) FROM pp_events"), 12);
}

TEST_F(EventImport, AFileRemovedAfterTheListingIsSkippedWithAWarning) {
  // The files of a folder are listed first and opened one after another: a file removed (or
  // renamed) by a cleanup in between is passed over with a warning, not the whole read failed.
  dir.write("job1/rank0.jsonl", cpu_lines(0, 2));
  dir.write("job1/rank1.jsonl", cpu_lines(2, 2));
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db.get(), "SELECT line FROM layer_events(?1)", -1, &stmt, nullptr), SQLITE_OK);
  const std::string folder = dir / "job1";
  sqlite3_bind_text(stmt, 1, folder.c_str(), -1, SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);  // rank0.jsonl is open, rank1.jsonl listed
  std::filesystem::remove(dir / "job1/rank1.jsonl");
  int rows = 1, rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) ++rows;
  EXPECT_EQ(rc, SQLITE_DONE) << sqlite3_errmsg(db.get());
  sqlite3_finalize(stmt);
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(warnings(), "[\"layer_events: " + dir / "job1/rank1.jsonl" +
                            " was removed or renamed after the files were listed; skipped (a later refresh reads it "
                            "on under its new name, if it was renamed)\"]");
}

TEST_F(EventImport, DeletedRowsAreImportedAgain) {
  dir.write("job1/rank0.jsonl", pp_test::header_line() + "\n" + cpu_lines(0, 3));
  EXPECT_EQ(refresh(), 3);
  db.exec("DELETE FROM pp_events; DELETE FROM pp_jobs;");
  EXPECT_EQ(refresh(), 3);
  EXPECT_EQ(count("SELECT count(*) FROM pp_jobs"), 1);
}

}  // namespace
