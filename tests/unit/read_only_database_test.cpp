// A database opened read-only (an archived results file, a file on a read-only mount) is read
// as it is when its attribution schema is this version's: pp_install_views writes nothing and
// succeeds. One that would need writing (made by an earlier version) is refused with what to do,
// not with SQLite's bare "attempt to write a readonly database".
#include <gtest/gtest.h>

#include <string>

#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

TEST(ReadOnlyDatabase, IsReadAsItIsWhenItsSchemaIsThisVersions) {
  pp_test::TempDir dir;
  const std::string file = dir / "results.db";
  std::string installed;
  {
    pp_test::TestDb writer{file};
    installed = writer.scalar("SELECT pp_install_views()").text;
  }
  pp_test::TestDb reader{file, SQLITE_OPEN_READONLY};
  EXPECT_EQ(reader.scalar("SELECT pp_install_views()").text, installed);
  EXPECT_EQ(reader.query("SELECT * FROM layer_type_metrics").size(), 0u);
}

// A refresh always writes; on a read-only database it is refused with what to do before it
// reads anything, and the database is read as it was.
TEST(ReadOnlyDatabase, RefreshIsRefusedWithWhatToDo) {
  pp_test::TempDir dir;
  const std::string file = dir / "results.db";
  { pp_test::TestDb writer{file}; writer.query("SELECT pp_install_views()"); }
  pp_test::TestDb reader{file, SQLITE_OPEN_READONLY};
  const std::string refused =
      "pp_refresh: the database is read-only (opened with -readonly or mode=ro, on a read-only mount, or a file this "
      "user may not write): a refresh writes the events, samples and results into it. Open it writable, or read its "
      "views as they are without refreshing";
  EXPECT_EQ(reader.error("SELECT * FROM pp_refresh(NULL, 1)"), refused);
  EXPECT_EQ(reader.error("SELECT * FROM pp_refresh('tests/data/events/job1')"), refused);
  EXPECT_EQ(reader.error("SELECT count(*) FROM layer_metrics"), "");
}

TEST(ReadOnlyDatabase, MadeByAnEarlierVersionIsRefusedWithWhatToDo) {
  pp_test::TempDir dir;
  const std::string file = dir / "results.db";
  {
    pp_test::TestDb writer{file};
    writer.query("SELECT pp_install_views()");
    // An earlier version's view, and the fingerprint it left.
    writer.exec("DROP VIEW job_overview; CREATE VIEW job_overview AS SELECT 1 AS job_id;"
                "UPDATE pp_meta SET value = 'earlier' WHERE key = 'views'");
  }
  const std::string refused =
      "pp_install_views: the database is read-only and its attribution tables or views are not this version's (made "
      "by an earlier version of precisionprobe, or never installed): installing them writes to it. Open it writable "
      "once, or work on a writable copy";
  {
    pp_test::TestDb reader{file, SQLITE_OPEN_READONLY};
    EXPECT_EQ(reader.error("SELECT pp_install_views()"), refused);
  }
  {
    // Only the fingerprint differs (an earlier version whose views read alike): refused too.
    pp_test::TestDb writer{file};
    writer.query("SELECT pp_install_views()");
    writer.exec("UPDATE pp_meta SET value = 'earlier' WHERE key = 'views'");
  }
  {
    pp_test::TestDb reader{file, SQLITE_OPEN_READONLY};
    EXPECT_EQ(reader.error("SELECT pp_install_views()"), refused);
  }
  // Opened writable once, it is upgraded, and then read as it is.
  { pp_test::TestDb writer{file}; writer.query("SELECT pp_install_views()"); }
  pp_test::TestDb reader{file, SQLITE_OPEN_READONLY};
  EXPECT_EQ(reader.error("SELECT pp_install_views()"), "");
  EXPECT_EQ(reader.error("SELECT job_id, gpus FROM job_overview"), "");
}

// A table an earlier version made without a column: refused until upgraded; once upgraded (its
// CREATE TABLE then reads as the upgrade leaves it, not as a new database's), read as it is.
TEST(ReadOnlyDatabase, ATableMadeBeforeAColumnIsReadAsItIsOnceUpgraded) {
  pp_test::TempDir dir;
  const std::string file = dir / "results.db";
  {
    pp_test::TestDb writer{file};
    writer.query("SELECT pp_install_views()");
    writer.exec("ALTER TABLE pp_gpu_spans DROP COLUMN longest_ns");
  }
  {
    pp_test::TestDb reader{file, SQLITE_OPEN_READONLY};
    EXPECT_NE(reader.error("SELECT pp_install_views()").find("installing them writes to it"), std::string::npos);
  }
  {
    pp_test::TestDb writer{file};
    writer.query("SELECT pp_install_views()");
    EXPECT_NE(writer.scalar("SELECT sql FROM sqlite_schema WHERE name = 'pp_gpu_spans'").text.find(
                  "longest_ns INTEGER NOT NULL DEFAULT 0"),
              std::string::npos);
  }
  pp_test::TestDb reader{file, SQLITE_OPEN_READONLY};
  EXPECT_EQ(reader.error("SELECT pp_install_views()"), "");
}

TEST(ReadOnlyDatabase, WithoutTheSchemaIsRefusedAlike) {
  pp_test::TempDir dir;
  const std::string file = dir / "empty.db";
  { pp_test::TestDb writer{file}; writer.exec("CREATE TABLE notes(x)"); }
  pp_test::TestDb reader{file, SQLITE_OPEN_READONLY};
  EXPECT_NE(reader.error("SELECT pp_install_views()").find("installing them writes to it"), std::string::npos);
}

}  // namespace
