// The align and retention steps on several threads (align_refresh_fixture.hpp): the same rows
// as one thread, and a damaged block or an interrupt stops them all, keeping nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "unit/align_refresh_fixture.hpp"
#include "unit/test_db.hpp"

namespace pp_test::align_refresh {
namespace {

// Two GPUs with the same events and samples: the align and retention steps take them at once on
// two threads, and the second GPU gets the rows the first one gets, bit for bit.
TEST_F(AlignRefresh, GpusAlignedAndKeptOnTwoThreadsGetTheSameRows) {
  insert_samples(0, last_ms());
  add_gpu_like_the_first(1);
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const auto per_gpu = [&](const std::string& sql) {
    std::vector<std::string> out;
    for (const auto& uuid : db_.query("SELECT DISTINCT uuid FROM pp_samples ORDER BY uuid")) {
      std::string rows;
      for (const auto& row : db_.query(sql, {uuid[0].text}))
        for (const auto& v : row) rows += v.text + "|";
      out.push_back(rows);
    }
    return out;
  };
  for (const char* sql :
       {"SELECT from_ms, through_ms, offset_ns, timing_ns, drift_ppm, util_phase_ns, util_timing_ns, samples, repeats, "
        "skipped, moved, status FROM pp_alignment WHERE uuid = ?1 ORDER BY from_ms",
        "SELECT ts_ms, end_ns, util_end_ns, copy_of_ms, util_copy FROM pp_windows WHERE uuid = ?1 ORDER BY ts_ms",
        "SELECT system, metric, grouping, shift, windows, hex(state) FROM pp_estimator_state WHERE uuid = ?1 "
        "ORDER BY system, metric, grouping, shift"}) {
    SCOPED_TRACE(sql);
    const auto rows = per_gpu(sql);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_GT(rows[0].size(), 100u);
    for (size_t g = 1; g < rows.size(); ++g) EXPECT_EQ(rows[g], rows[0]) << "GPU " << g;
  }
  EXPECT_GT(db_.scalar("SELECT count(*) FROM pp_estimator_state").integer, 0);
  // pp_alignment's rows went in in GPU order, whichever thread finished first: a view over it
  // without ORDER BY reads them as one thread wrote them.
  std::vector<std::string> inserted;
  for (const auto& row : db_.query("SELECT uuid || ' ' || from_ms FROM pp_alignment ORDER BY rowid"))
    inserted.push_back(row[0].text);
  std::vector<std::string> sorted = inserted;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(inserted, sorted);
}

// A block that cannot be read, met by the steps whose workers decode the GPUs' events (the
// connection's thread only copies the blocks): the refresh fails with an error naming the
// block, keeps nothing, and refreshes once the block is whole again. The block is an early one
// marked folded, which the reads of what is new pass by: the align step's stretch meets it,
// or, with the offset pinned and no driver metric (no stretch reads events), the fold's.
TEST_F(AlignRefresh, ADamagedBlockStopsTheThreadedStepsWithAnErrorNamingIt) {
  insert_samples(0, last_ms());
  add_gpu_like_the_first(1);
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  const std::string block =
      std::to_string(db_.scalar("SELECT min(id) FROM pp_events_blocks WHERE gpu_uuid <> '" + std::string(kUuid) + "'").integer);
  for (const char* pinned : {"", "SELECT pp_config('sample_offset_ms', 40); UPDATE pp_metrics SET kind = 'window';"}) {
    for (const char* damage : {"data = x'0105ff'", "last_start_ns = last_start_ns - 1"}) {
      SCOPED_TRACE(std::string(pinned) + damage);
      db_.exec(std::string("SAVEPOINT damaged; ") + pinned + "UPDATE pp_events_blocks SET folded_through_ns = last_start_ns, " +
               damage + " WHERE id = " + block);
      const std::string error = db_.error("SELECT * FROM pp_refresh(NULL, 1)");
      EXPECT_EQ(error.rfind("pp_refresh: block " + block + " of pp_events_blocks is damaged (", 0), 0u) << error;
      EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment").integer, 0);
      EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_state").integer, 0);
      db_.exec("ROLLBACK TO damaged; RELEASE damaged");
    }
  }
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_GT(db_.scalar("SELECT count(*) FROM layer_state").integer, 0);
}

// Ctrl-C during a refresh whose align and retention steps run on two threads: whichever step
// the interrupt meets, the refresh stops with the interrupt's error (no thread left waiting on
// another), keeps nothing, and the next refresh gets the rows of one never interrupted.
TEST_F(AlignRefresh, AnInterruptStopsTheThreadedStepsAndKeepsNothing) {
  insert_samples(0, last_ms());
  add_gpu_like_the_first(1);
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  const auto results = [&] {
    std::string rows;
    for (const char* sql : {"SELECT * FROM pp_alignment ORDER BY uuid, from_ms", "SELECT * FROM pp_windows",
                            "SELECT uuid, system, metric, grouping, shift, hex(state) FROM pp_estimator_state",
                            "SELECT * FROM layer_state"})
      for (const auto& row : db_.query(sql))
        for (const auto& v : row) rows += v.text + "|";
    return rows;
  };
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  // An uninterrupted refresh, rolled back, times the refresh and gives the rows to expect.
  db_.exec("BEGIN");
  const Clock::time_point started = Clock::now();
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const double whole = seconds_since(started);
  const std::string expected = results();
  db_.exec("ROLLBACK");
  ASSERT_GT(expected.size(), 1000u);
  int interrupted = 0;
  // A later refresh may run faster than the timed one (a busy machine, a warmer cache), so an
  // interrupt late in it may come after its end: four moments, of which two must land.
  for (double at : {0.1, 0.3, 0.5, 0.8}) {
    SCOPED_TRACE(at);
    db_.exec("BEGIN");
    Clock::time_point sent;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::duration<double>(at * whole));
      sent = Clock::now();
      sqlite3_interrupt(db_.get());
    });
    try {
      db_.query("SELECT * FROM pp_refresh(NULL, 1)");  // done before the interrupt came: allowed
      stopper.join();
    } catch (const std::runtime_error& e) {
      stopper.join();
      ++interrupted;
      EXPECT_NE(std::string(e.what()).find("pp_refresh: interrupted; nothing was committed"), std::string::npos)
          << e.what();
      EXPECT_LT(seconds_since(sent), 5.0);  // each worker stops at its next read or write
    }
    // An interrupt in the middle of a write ends the whole transaction in SQLite itself; then
    // there is nothing left to roll back.
    if (!sqlite3_get_autocommit(db_.get())) db_.exec("ROLLBACK");
    EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment").integer, 0);
  }
  EXPECT_GE(interrupted, 2);
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(results(), expected);
}

// A refresh run in autocommit mode and interrupted leaves its writes in an open transaction
// (SQLite runs no ROLLBACK while the interrupt is in force): an application's COMMIT after it
// (Python's conn.commit(), its own write) must not store that part of a refresh, which the next
// refresh would then import again.
TEST_F(AlignRefresh, ACommitAfterAnInterruptedRefreshStoresNothingOfIt) {
  insert_samples(0, last_ms());
  const auto stored = [&] {
    return db_.scalar("SELECT (SELECT count(*) FROM pp_alignment) + (SELECT count(*) FROM pp_windows) + "
                      "(SELECT count(*) FROM layer_state) + (SELECT count(*) FROM pp_gpu_spans)").integer;
  };
  ASSERT_EQ(stored(), 0);
  int left_open = 0;
  for (const int callbacks : {20, 200, 2000, 20000}) {
    SCOPED_TRACE(callbacks);
    int count = 0;
    struct Stop {
      int* count;
      int at;
      sqlite3* db;
    } stop{&count, callbacks, db_.get()};
    sqlite3_progress_handler(
        db_.get(), 100,
        [](void* arg) {
          auto* s = static_cast<Stop*>(arg);
          if (++*s->count == s->at) sqlite3_interrupt(s->db);
          return 0;
        },
        &stop);
    bool interrupted = false;
    const sqlite3_int64 changes = sqlite3_total_changes64(db_.get());
    try {
      db_.query("SELECT * FROM pp_refresh(NULL, 1)");
    } catch (const std::runtime_error& e) {
      interrupted = true;
      EXPECT_NE(std::string(e.what()).find("a COMMIT on it rolls back"), std::string::npos) << e.what();
    }
    sqlite3_progress_handler(db_.get(), 0, nullptr, nullptr);
    if (!interrupted) break;  // the refresh ended before the interrupt: it committed
    if (sqlite3_get_autocommit(db_.get())) continue;  // SQLite rolled the transaction back itself
    if (sqlite3_total_changes64(db_.get()) == changes) {  // stopped before its first row
      EXPECT_EQ(sqlite3_exec(db_.get(), "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
      EXPECT_EQ(stored(), 0);
      continue;
    }
    ++left_open;
    EXPECT_NE(sqlite3_exec(db_.get(), "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
    EXPECT_NE(db_.scalar("SELECT pp_last_warnings()").text.find("COMMIT was turned into ROLLBACK"), std::string::npos);
    EXPECT_EQ(stored(), 0);
  }
  EXPECT_GE(left_open, 1);
  // Inside an application's own transaction, a refresh stopped before its first row leaves the
  // application's writes to its COMMIT.
  db_.exec("BEGIN; CREATE TABLE before_refresh(x); INSERT INTO before_refresh VALUES (1)");
  {
    sqlite3* db = db_.get();
    sqlite3_progress_handler(db, 1, [](void* d) { sqlite3_interrupt(static_cast<sqlite3*>(d)); return 0; }, db);
    EXPECT_THROW(db_.query("SELECT * FROM pp_refresh(NULL, 1)"), std::runtime_error);
    sqlite3_progress_handler(db, 0, nullptr, nullptr);
  }
  ASSERT_EQ(sqlite3_get_autocommit(db_.get()), 0);  // the application's transaction is still open
  EXPECT_EQ(sqlite3_exec(db_.get(), "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM before_refresh").integer, 1);
  // A COMMIT of the connection's own later transactions is not held back.
  db_.exec("BEGIN; CREATE TABLE mine(x); INSERT INTO mine VALUES (1); COMMIT");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM mine").integer, 1);
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_GT(stored(), 0);
}

}  // namespace
}  // namespace pp_test::align_refresh
