// pp_refresh in a WAL database: a refresh that commits on its own cannot let SQLite checkpoint
// (its SELECT still reads), so a loop of them alone grows the -wal file, and pp_refresh says so;
// inside BEGIN IMMEDIATE ... COMMIT the automatic checkpoint runs and the log stays small.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

class RefreshWal : public ::testing::Test {
 protected:
  void SetUp() override {
    db.exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 50;");  // 200 KiB of pages
  }
  // Appends a batch of events and refreshes; returns pp_last_warnings().
  std::string write_and_refresh(int round, bool in_transaction) {
    dir.write("job1/rank0.jsonl", pp_test::cpu_lines(round * 500, 500), /*append=*/true);
    if (in_transaction) db.exec("BEGIN IMMEDIATE");
    db.query("SELECT * FROM pp_refresh(?1)", {dir / "job1"});
    const std::string warnings = db.scalar("SELECT pp_last_warnings()").text;
    if (in_transaction) db.exec("COMMIT");
    return warnings;
  }
  long long wal_bytes() {
    struct stat st;
    return ::stat((database + "-wal").c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : 0;
  }

  pp_test::TempDir dir;
  std::string database = dir / "runs.db";
  pp_test::TestDb db{database};
};

TEST_F(RefreshWal, RefreshesThatCommitThemselvesWarnThatTheLogGrows) {
  std::string warnings = "[]";
  int round = 0;
  while (warnings == "[]" && round < 40) warnings = write_and_refresh(round++, /*in_transaction=*/false);
  EXPECT_GT(wal_bytes(), 4 * 50 * 4096);
  EXPECT_NE(warnings.find("pp_refresh: the write-ahead log " + database + "-wal holds"), std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("run PRAGMA wal_checkpoint after refreshing"), std::string::npos);
  // Checkpointed as the warning says, the next refresh is quiet again.
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  EXPECT_EQ(write_and_refresh(round, false), "[]");
}

TEST_F(RefreshWal, RefreshesInsideBeginImmediateKeepTheLogSmall) {
  for (int round = 0; round < 20; ++round) EXPECT_EQ(write_and_refresh(round, /*in_transaction=*/true), "[]");
  // The automatic checkpoint ran at each COMMIT: the log holds about one refresh, not twenty.
  EXPECT_LT(wal_bytes(), 4 * 50 * 4096);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 20 * 500);
}

// Another connection holds the write lock: a refresh whose SELECT cannot wait says what was
// busy and what to do (never a bare "database is locked"), fails with SQLITE_BUSY, and changed
// nothing; once the writer commits, the same refresh succeeds.
TEST_F(RefreshWal, RefreshMeetingAnotherWriterSaysWhatWasBusy) {
  db.query("SELECT pp_install_views()");
  dir.write("job1/rank0.jsonl", pp_test::cpu_lines(0, 50));
  pp_test::TestDb writer{database};
  writer.exec("BEGIN IMMEDIATE; INSERT INTO pp_meta(key, value) VALUES ('note', 'writing');");
  db.exec("PRAGMA busy_timeout = 50");
  const std::string error = db.error("SELECT * FROM pp_refresh(?1)", {dir / "job1"});
  EXPECT_NE(error.find("pp_refresh: database is locked by another connection's write; nothing was changed"),
            std::string::npos)
      << error;
  EXPECT_EQ(sqlite3_errcode(db.get()) & 0xFF, SQLITE_BUSY);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 0);
  writer.exec("COMMIT");
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 50);
}

}  // namespace
