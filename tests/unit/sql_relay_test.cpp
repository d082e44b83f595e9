// Per-GPU work on two threads from inside a SQL call, as the align, fold and retention steps of
// pp_refresh do it: the pieces compute on worker threads, and each hands its SQL to the thread
// that SQLite called (which holds the connection's mutex for the whole statement).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/sql_relay.hpp"
#include "unit/test_db.hpp"

namespace {

struct Observed {
  std::thread::id caller;
  std::set<std::thread::id> sql_threads, piece_threads;
  std::mutex mutex;
};

// value_sum(): the sum of t.value over its 8 rows, each row read by its own piece.
void value_sum(sqlite3_context* context, int, sqlite3_value**) {
  auto* observed = static_cast<Observed*>(sqlite3_user_data(context));
  sqlite3* db = sqlite3_context_db_handle(context);
  observed->caller = std::this_thread::get_id();
  std::vector<int64_t> values(8);
  pp::for_each_in_parallel(values.size(), [&](size_t i, pp::SqlRelay& sql) {
    {
      std::lock_guard<std::mutex> lock(observed->mutex);
      observed->piece_threads.insert(std::this_thread::get_id());
    }
    sql.run([&] {
      observed->sql_threads.insert(std::this_thread::get_id());
      sqlite3_stmt* read = nullptr;
      sqlite3_prepare_v2(db, "SELECT value FROM t WHERE id = ?", -1, &read, nullptr);
      sqlite3_bind_int64(read, 1, static_cast<int64_t>(i));
      if (sqlite3_step(read) == SQLITE_ROW) values[i] = sqlite3_column_int64(read, 0);
      sqlite3_finalize(read);
    });
    values[i] *= 10;  // the piece's own work, off the connection
  });
  int64_t sum = 0;
  for (int64_t v : values) sum += v;
  sqlite3_result_int64(context, sum);
}

}  // namespace

TEST(SqlRelay, PiecesComputeAsideAndTheirSqlRunsOnTheCallingThread) {
  // Debian's SQLite is serialized: the connection's mutex is held by the thread inside
  // SELECT value_sum(), and a worker that called SQLite on it would wait forever.
  ASSERT_EQ(sqlite3_threadsafe(), 1);
  pp_test::TestDb test_db;
  sqlite3* db = test_db.get();
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE t(id INTEGER PRIMARY KEY, value INTEGER);"
                         "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 7) "
                         "INSERT INTO t SELECT i, i * i FROM n;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  Observed observed;
  sqlite3_create_function(db, "value_sum", 0, SQLITE_UTF8, &observed, value_sum, nullptr, nullptr);
  sqlite3_stmt* select = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT value_sum()", -1, &select, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(select), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(select, 0), 10 * (0 + 1 + 4 + 9 + 16 + 25 + 36 + 49));
  sqlite3_finalize(select);
  EXPECT_EQ(observed.sql_threads, std::set<std::thread::id>{observed.caller});
  if (std::thread::hardware_concurrency() > 1) {
    EXPECT_EQ(observed.piece_threads.count(observed.caller), 0u) << "the pieces ran on the calling thread";
  }
}

TEST(SqlRelay, TheFirstFailureComesBackAndSqlFailuresReachTheirPiece) {
  std::atomic<int> sql_failures_seen{0};
  try {
    pp::for_each_in_parallel(6, [&](size_t i, pp::SqlRelay& sql) {
      try {
        sql.run([&] {
          if (i % 2 == 1) throw std::runtime_error("no such table");
        });
      } catch (const std::runtime_error&) {
        ++sql_failures_seen;  // the piece sees what its SQL threw
      }
      if (i == 4 || i == 2) throw std::runtime_error("piece " + std::to_string(i) + " failed");
    });
    FAIL() << "no failure came back";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "piece 2 failed");
  }
  EXPECT_GE(sql_failures_seen.load(), 1);
}

// SQLite may answer a failed write (a full disk) by rolling back the whole transaction: SQL that
// another piece sends afterwards would run outside it, each statement committing on its own. The
// relay runs none: a request after the first failure is refused with that failure.
TEST(SqlRelay, NoSqlRunsOnceARequestHasFailed) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: the first failure ends the loop";
  std::atomic<bool> failed{false}, second_started{false};
  std::atomic<int> ran_after{0};
  std::string second_saw;
  try {
    pp::for_each_in_parallel(2, [&](size_t i, pp::SqlRelay& sql) {
      if (i == 0) {
        // (once the other piece runs: a worker that starts after a failure takes no piece)
        while (!second_started) std::this_thread::yield();
        try {
          sql.run([] { throw pp::Error("database or disk is full"); });
        } catch (...) {
          failed = true;
          throw;
        }
      }
      second_started = true;
      while (!failed) std::this_thread::yield();
      try {
        sql.run([&] { ++ran_after; });  // a write that would have committed alone
      } catch (const pp::Error& e) {
        second_saw = e.what();
        throw;
      }
    });
    ADD_FAILURE() << "no failure came back";
  } catch (const pp::Error& e) {
    EXPECT_STREQ(e.what(), "database or disk is full");
  }
  EXPECT_EQ(ran_after.load(), 0);
  EXPECT_EQ(second_saw, "database or disk is full");
}

TEST(SqlRelay, OneThreadRunsEveryPieceInOrder) {
  std::vector<size_t> order;
  pp::for_each_in_parallel(5, [&](size_t i, pp::SqlRelay& sql) { sql.run([&] { order.push_back(i); }); }, 1);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
}

// A piece that computes without SQL (the fold's sweep) stops once the calling thread's watch,
// called while it waits, throws (an interrupt it saw): the pieces see stopping().
TEST(SqlRelay, PiecesStopOnceTheCallingThreadsWatchThrows) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: the pieces run on the calling thread";
  std::atomic<int> watched{0};
  const auto started = std::chrono::steady_clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  try {
    pp::for_each_in_parallel(
        4,
        [&](size_t, pp::SqlRelay& sql) {
          while (!sql.stopping()) {
            if (seconds() > 10) throw std::runtime_error("never stopped");
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          throw pp::InterruptedError();
        },
        2,
        [&] {
          if (++watched == 3) throw pp::InterruptedError();
        });
    ADD_FAILURE() << "no failure came back";
  } catch (const pp::InterruptedError&) {
  }
  EXPECT_EQ(watched.load(), 3);  // not called once it threw
  EXPECT_LT(seconds(), 5.0);
}
