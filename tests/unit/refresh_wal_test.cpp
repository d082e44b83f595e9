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
  // Checkpointed as the warning says, the next refresh is quiet again, also where the -wal
  // file keeps its size (a checkpoint does not shrink it).
  const long long before = wal_bytes();
  db.exec("PRAGMA wal_checkpoint");
  EXPECT_EQ(wal_bytes(), before);
  EXPECT_EQ(write_and_refresh(round++, false), "[]");
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

// A reader (export, serve, analyze) installs the views before it reads: where they are this
// version's, that writes nothing, so in WAL mode it does not wait for a refresh's write lock.
TEST_F(RefreshWal, InstallingCurrentViewsDoesNotWaitForAWriter) {
  db.query("SELECT pp_install_views()");
  pp_test::TestDb writer{database};
  writer.exec("BEGIN IMMEDIATE; INSERT INTO pp_meta(key, value) VALUES ('note', 'writing');");
  pp_test::TestDb reader{database};
  reader.exec("PRAGMA busy_timeout = 0");
  reader.query("SELECT pp_install_views()");
  EXPECT_EQ(reader.scalar("SELECT count(*) FROM layer_metrics").integer, 0);
  // One that would write (a view that is not this version's) meets the lock, and says so.
  writer.exec("COMMIT; DROP VIEW layer_metrics; BEGIN IMMEDIATE; INSERT INTO pp_meta(key, value) VALUES ('n2', 'w')");
  EXPECT_NE(reader.error("SELECT pp_install_views()").find("locked"), std::string::npos);
  writer.exec("COMMIT");
  reader.query("SELECT pp_install_views()");
  // A default metric deleted by hand is put back, as every install did.
  reader.exec("DELETE FROM pp_metrics WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE'");
  reader.query("SELECT pp_install_views()");
  EXPECT_EQ(reader.scalar("SELECT count(*) FROM pp_metrics").integer, 6);
}

// The connection's transaction began before another connection committed (WAL): no wait lets
// it write, and the error says what to do instead of "run it again".
TEST_F(RefreshWal, RefreshInAStaleSnapshotSaysToEndTheTransaction) {
  db.query("SELECT pp_install_views()");
  dir.write("job1/rank0.jsonl", pp_test::cpu_lines(0, 50));
  pp_test::TestDb reader{database};
  reader.exec("BEGIN");
  reader.query("SELECT count(*) FROM report_jobs");
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 50);
  dir.write("job1/rank0.jsonl", pp_test::cpu_lines(50, 50), /*append=*/true);
  const std::string error = reader.error("SELECT * FROM pp_refresh(?1)", {dir / "job1"});
  EXPECT_NE(error.find("SQLITE_BUSY_SNAPSHOT); nothing was changed: end the transaction (COMMIT or ROLLBACK), "
                       "then run pp_refresh again"),
            std::string::npos)
      << error;
  reader.exec("ROLLBACK");
  EXPECT_EQ(reader.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 50);
}

// In rollback-journal mode a reader's transaction blocks the commit: the refresh says so, ends
// the transaction it began (no lock is left to keep other connections out), and the next one,
// once the reader is done, commits.
TEST(RefreshJournal, AReaderThatBlocksTheCommitLeavesNoLockBehind) {
  pp_test::TempDir dir;
  const std::string database = dir / "runs.db";
  pp_test::TestDb db{database};
  db.query("SELECT pp_install_views()");
  dir.write("job1/rank0.jsonl", pp_test::cpu_lines(0, 50));
  pp_test::TestDb reader{database};
  reader.exec("BEGIN");
  reader.query("SELECT count(*) FROM report_jobs");
  db.exec("PRAGMA busy_timeout = 50");
  const std::string error = db.error("SELECT * FROM pp_refresh(?1)", {dir / "job1"});
  EXPECT_NE(error.find("could not commit: another connection is reading the database"), std::string::npos) << error;
  EXPECT_NE(error.find("(busy_timeout ran out)"), std::string::npos) << error;
  EXPECT_EQ(sqlite3_errcode(db.get()) & 0xFF, SQLITE_BUSY);
  EXPECT_NE(sqlite3_get_autocommit(db.get()), 0);  // no transaction, no lock left
  // Without a busy_timeout the refresh did not wait at all, and says so.
  db.exec("PRAGMA busy_timeout = 0");
  EXPECT_NE(db.error("SELECT * FROM pp_refresh(?1)", {dir / "job1"}).find("no busy_timeout is set"), std::string::npos);
  reader.exec("COMMIT");
  pp_test::TestDb other{database};
  EXPECT_EQ(other.scalar("SELECT count(*) FROM pp_events").integer, 0);
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {dir / "job1"}).integer, 50);
  EXPECT_EQ(other.scalar("SELECT count(*) FROM pp_events").integer, 50);  // committed
}

// An interrupt that comes after the refresh committed cannot undo it: the statement may still
// end "interrupted", and the warnings say the changes are in.
TEST_F(RefreshWal, AnInterruptAfterTheCommitSaysTheRefreshIsIn) {
  db.query("SELECT pp_install_views()");
  dir.write("job1/rank0.jsonl", pp_test::cpu_lines(0, 50));
  // The first statement after the commit: interrupt there, as a Ctrl-C at that moment would.
  sqlite3_trace_v2(
      db.get(), SQLITE_TRACE_STMT,
      [](unsigned, void* context, void*, void* sql) {
        if (std::string(static_cast<const char*>(sql)).find("wal_autocheckpoint") != std::string::npos)
          sqlite3_interrupt(static_cast<sqlite3*>(context));
        return 0;
      },
      db.get());
  db.error("SELECT * FROM pp_refresh(?1)", {dir / "job1"});
  sqlite3_trace_v2(db.get(), 0, nullptr, nullptr);
  EXPECT_NE(db.scalar("SELECT pp_last_warnings()").text.find("interrupted after the refresh committed: its changes "
                                                             "are in the database"),
            std::string::npos);
  pp_test::TestDb other{database};
  EXPECT_EQ(other.scalar("SELECT count(*) FROM pp_events").integer, 50);
}

}  // namespace
