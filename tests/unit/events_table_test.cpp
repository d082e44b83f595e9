// pp_events as users see it: a table of one row per event, stored in blocks. Rows read back as
// they were inserted, every constraint SQLite may hand the table gives the rows a plain table
// would, deletes and updates touch only their rows, a rolled back transaction leaves nothing,
// bad rows are refused by column, a damaged block is an error, and a database made when
// pp_events was a plain table is moved into blocks once.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

constexpr const char* kColumns =
    "job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, epoch, batch, layer, layer_type, forward, "
    "t_start_ns, t_end_ns, t_start, t_end, cpu_num, source_file, line, folded";

// Two jobs on two GPUs and the CPU, 300 events each, some folded, some with NULLs, some
// layers' type `no_type` (pp_events takes '', not NULL: every line layer_events reads has one).
std::string insert_events(const char* no_type = "''") {
  std::string sql = "INSERT INTO pp_events(" + std::string(kColumns) + ") VALUES ";
  for (int i = 0; i < 900; ++i) {
    const int gpu = i % 3;
    const long long start = pp_test::kT0 + i * 1000000LL + (i % 7) * 333;
    sql += std::string(i ? ", " : "") + "('job-" + std::to_string(i % 2) + "', " + (i % 5 ? "'node-1'" : "NULL") +
           ", '10.0.0.7', NULL, NULL, " + (gpu == 2 ? "'cpu', NULL" : "'GPU-" + std::to_string(gpu) + "', " + std::to_string(gpu)) +
           ", 0, 42, " + (i % 11 ? std::to_string(i / 42) : "NULL") + ", " + std::to_string(i) + ", 'layer." +
           std::to_string(i % 42) + "', " + (i % 13 ? "'Linear'" : no_type) + ", " + std::to_string(i % 2) + ", " +
           std::to_string(start) + ", " + std::to_string(start + 250000 + i) + ", 0, 0, 8.0, 'run/rank" +
           std::to_string(gpu) + ".jsonl', " + std::to_string(i + 1) + ", " + (i < 450 ? "1" : "0") + ")";
  }
  return sql;
}

class EventsTable : public ::testing::Test {
 protected:
  void SetUp() override {
    db.exec("SELECT pp_install_views()");
    db.exec(insert_events());
    db.exec("CREATE TEMP TABLE plain AS SELECT * FROM pp_events");
  }
  // The rows of `where` from pp_events and from a plain copy of it, as text.
  std::pair<std::string, std::string> both(const std::string& where) {
    const std::string select = "SELECT group_concat(" + std::string("id || '|' || ") +
                               "quote(job_id) || quote(host_name) || quote(gpu) || quote(epoch) || quote(layer_type) || "
                               "t_start_ns || '|' || folded, ',') FROM (SELECT * FROM ";
    return {db.scalar(select + "main.pp_events WHERE " + where + " ORDER BY id)").text,
            db.scalar(select + "temp.plain WHERE " + where + " ORDER BY id)").text};
  }
  pp_test::TestDb db;
};

TEST_F(EventsTable, RowsReadBackAsInserted) {
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 900);
  // t_start and t_end are the ns in seconds, whatever was inserted for them.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events WHERE abs(t_start - t_start_ns / 1e9) < 1e-6 AND abs(t_end - t_end_ns / 1e9) < 1e-6").integer, 900);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events WHERE epoch IS NULL").integer, 82);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events WHERE layer_type = ''").integer, 70);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events WHERE host_name IS NULL AND gpu_uuid = 'cpu' AND gpu IS NULL").integer, 60);
  EXPECT_EQ(db.scalar("SELECT sum(folded) FROM pp_events").integer, 450);
  EXPECT_EQ(db.scalar("SELECT count(DISTINCT id) FROM pp_events").integer, 900);
  // A block holds events of the same job, host, GPU, file (and folded or not): 2 x 2 x 3 x 2 here.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events_blocks").integer, 24);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events_layers").integer, 84);
}

TEST_F(EventsTable, EveryConstraintGivesThePlainTablesRows) {
  const long long mid = pp_test::kT0 + 450 * 1000000LL;
  const std::vector<std::string> constraints = {
       std::string("gpu_uuid = 'GPU-1'"), "gpu_uuid = 'GPU-1' AND t_start_ns >= " + std::to_string(mid),
        "gpu_uuid = 'GPU-0' AND t_start_ns > " + std::to_string(mid) + " AND t_start_ns < " + std::to_string(mid + 90000000),
        "t_start_ns <= " + std::to_string(mid), "t_start_ns BETWEEN " + std::to_string(mid) + ".5 AND " + std::to_string(mid) + ".5e0 + 5e7",
        std::string("folded = 0"), "folded = 1", "folded = 0 AND gpu_uuid = 'cpu'", "source_file = 'run/rank2.jsonl'",
        "job_id = 'job-1' AND gpu_uuid = 'GPU-0'", "id = (SELECT max(id) FROM temp.plain)", "id = 3.5", "gpu_uuid IS NULL",
        "gpu_uuid = 'GPU-0' AND t_start_ns >= 'soon'", "folded = '0'", "id IN (SELECT id FROM temp.plain WHERE line % 97 = 0)",
        "gpu_uuid IN ('GPU-0', 'cpu') AND t_start_ns < " + std::to_string(mid),
        // Another collation than the blocks' BINARY is SQLite's to check on every row.
        "gpu_uuid = 'gpu-1' COLLATE NOCASE", "job_id = 'JOB-0 ' COLLATE RTRIM", "source_file = 'RUN/RANK0.JSONL' COLLATE NOCASE"};
  for (const std::string& where : constraints) {
    const auto [events, plain] = both(where);
    EXPECT_EQ(events, plain) << where;
  }
  // The hidden block column narrows by an integer's value, whatever its type.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events WHERE block = (SELECT min(id) FROM pp_events_blocks) + 0.0").integer,
            db.scalar("SELECT events FROM pp_events_blocks ORDER BY id LIMIT 1").integer);
  // A join that hands the table its constraints from the other side, row by row.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM temp.plain AS p JOIN main.pp_events AS e "
                      "ON e.gpu_uuid = p.gpu_uuid AND e.t_start_ns = p.t_start_ns AND e.id = p.id").integer, 900);
}

TEST_F(EventsTable, DeletesAndUpdatesTouchOnlyTheirRows) {
  db.exec("DELETE FROM pp_events WHERE job_id = 'job-0' AND gpu_uuid = 'GPU-1'");
  db.exec("DELETE FROM temp.plain WHERE job_id = 'job-0' AND gpu_uuid = 'GPU-1'");
  EXPECT_EQ(both("true").first, both("true").second);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 750);
  // An update is a delete and an insert: the rows change, and get new ids.
  db.exec("UPDATE pp_events SET folded = 0, layer = 'renamed' WHERE gpu_uuid = 'cpu' AND folded = 1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events WHERE layer = 'renamed' AND folded = 0 AND gpu_uuid = 'cpu'").integer, 150);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 750);
  EXPECT_EQ(db.scalar("SELECT sum(folded) FROM pp_events").integer, 450 - 75 - 150);
  // A block all of whose events went is gone.
  db.exec("DELETE FROM pp_events WHERE gpu_uuid = 'GPU-0'");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events_blocks WHERE gpu_uuid = 'GPU-0'").integer, 0);
}

TEST_F(EventsTable, RolledBackWritesLeaveNothing) {
  db.exec("BEGIN; " + insert_events() + "; DELETE FROM pp_events WHERE gpu_uuid = 'GPU-1'; ROLLBACK");
  EXPECT_EQ(both("true").first, both("true").second);
  db.exec("BEGIN; SAVEPOINT a; " + insert_events() + "; ROLLBACK TO a; RELEASE a; " + insert_events() + "; COMMIT");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 1800);
  // Rows inserted earlier in a transaction are read by its later statements.
  db.exec("BEGIN; DELETE FROM pp_events; " + insert_events());
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events WHERE folded = 0").integer, 450);
  db.exec("COMMIT");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 900);
}

TEST(EventsTableTransactions, RowsInsertedInATransactionAreReadByTheEngineToo) {
  pp_test::TestDb db;
  db.exec("SELECT pp_install_views();"
          "INSERT INTO pp_intervals(uuid, metric, interval_ms) VALUES ('GPU-0', 'DCGM_FI_PROF_SM_ACTIVE', 1000);"
          "INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES ('GPU-0', 'DCGM_FI_PROF_SM_ACTIVE', 1700000001000, 0.5),"
          "  ('GPU-0', 'DCGM_FI_PROF_SM_ACTIVE', 1700000002000, 0.7);"
          "INSERT INTO pp_windows(uuid, ts_ms, end_ns) VALUES ('GPU-0', 1700000001000, 1700000001000000000),"
          "  ('GPU-0', 1700000002000, 1700000002000000000);"
          "BEGIN;"
          "INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, source_file, line)"
          "  VALUES ('j', 'GPU-0', 'fc', 'Linear', 1, 1700000000500000000, 1700000001500000000, 'f', 1)");
  // The interval join reads the blocks itself, before any statement has read pp_events.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_overlaps('GPU-0') WHERE event_id IS NOT NULL").integer, 2);
  db.exec("ROLLBACK");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_overlaps('GPU-0') WHERE event_id IS NOT NULL").integer, 0);
}

TEST_F(EventsTable, BadRowsAreRefusedByColumn) {
  const std::string insert =
      "INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, source_file, line) VALUES ";
  EXPECT_EQ(db.error(insert + "(NULL, 'GPU-0', 'fc', 'Linear', 1, 1, 2, 'f', 1)"), "pp_events: job_id may not be NULL");
  EXPECT_EQ(db.error(insert + "('j', 'GPU-0', 'fc', 'Linear', 1, 1.5, 2, 'f', 1)"), "pp_events: t_start_ns must be an integer");
  EXPECT_EQ(db.error(insert + "('j', 'GPU-0', 'fc', 'Linear', 1, 'soon', 2, 'f', 1)"), "pp_events: t_start_ns must be an integer");
  EXPECT_EQ(db.error(insert + "('j', 'GPU-0', NULL, 'Linear', 1, 1, 2, 'f', 1)"), "pp_events: layer may not be NULL");
  EXPECT_EQ(db.error(insert + "('j', 'GPU-0', 'fc', 'Linear', 1, 1, 2, 'f', NULL)"), "pp_events: line may not be NULL");
  // What layer_events refuses as a malformed line: stored, a direction of 2 read back as 1, a
  // BLOB as '' or NULL, and an empty job or layer named nothing.
  EXPECT_EQ(db.error(insert + "('j', 'GPU-0', 'fc', 'Linear', 2, 1, 2, 'f', 1)"),
            "pp_events: forward must be 1 (forward) or 0 (backward), got 2");
  EXPECT_EQ(db.error(insert + "('j', 'GPU-0', 'fc', 'Linear', -1, 1, 2, 'f', 1)"),
            "pp_events: forward must be 1 (forward) or 0 (backward), got -1");
  EXPECT_EQ(db.error(insert + "('j', x'00', 'fc', 'Linear', 1, 1, 2, 'f', 1)"), "pp_events: gpu_uuid may not be a BLOB");
  EXPECT_EQ(db.error("INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, source_file, line, "
                     "rank) VALUES ('j', 'GPU-0', 'fc', 'Linear', 1, 1, 2, 'f', 1, x'01')"),
            "pp_events: rank may not be a BLOB");
  EXPECT_EQ(db.error(insert + "('', 'GPU-0', 'fc', 'Linear', 1, 1, 2, 'f', 1)"), "pp_events: job_id may not be empty");
  EXPECT_EQ(db.error(insert + "('j', '', 'fc', 'Linear', 1, 1, 2, 'f', 1)"), "pp_events: gpu_uuid may not be empty");
  EXPECT_EQ(db.error(insert + "('j', 'GPU-0', '', 'Linear', 1, 1, 2, 'f', 1)"), "pp_events: layer may not be empty");
  // Text that reads as an integer is one, as in an INTEGER column.
  db.exec(insert + "('j', 'GPU-0', 'fc', 'Linear', '1', '100', 2e2, 'f', '1')");
  EXPECT_EQ(db.scalar("SELECT t_start_ns + t_end_ns FROM pp_events WHERE job_id = 'j'").integer, 300);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 901);
}

TEST_F(EventsTable, DamagedBlockIsAnErrorNamingIt) {
  const std::string id = std::to_string(db.scalar("SELECT min(id) FROM pp_events_blocks").integer);
  const std::string cannot = "): its events cannot be read";
  db.exec("SAVEPOINT s; UPDATE pp_events_blocks SET data = x'0105ff' WHERE id = " + id);
  EXPECT_EQ(db.error("SELECT count(*) FROM pp_events"),
            "pp_events: block " + id + " of pp_events_blocks is damaged (its event count is more than its bytes can hold" + cannot);
  // A row that disagrees with its events would make range reads miss rows: refused too.
  db.exec("ROLLBACK TO s; UPDATE pp_events_blocks SET last_start_ns = last_start_ns + 1 WHERE id = " + id);
  EXPECT_NE(db.error("SELECT count(*) FROM pp_events WHERE gpu_uuid = 'GPU-0'").find("is damaged (its events start from "),
            std::string::npos);
  db.exec("ROLLBACK TO s; UPDATE pp_events_blocks SET id = (1 << 48) - 1 WHERE id = " + id);
  EXPECT_EQ(db.error("SELECT count(*) FROM pp_events"), "pp_events: block " + std::to_string((1LL << 48) - 1) +
                                                            " of pp_events_blocks is damaged (its id is not in 1 .. 2^47 - 1" + cannot);
  db.exec("ROLLBACK TO s; DELETE FROM pp_events_layers WHERE layer = 'layer.0'");
  EXPECT_NE(db.error("SELECT layer FROM pp_events").find("of pp_events_blocks names layer id "), std::string::npos);
}

TEST_F(EventsTable, NamesReadInARolledBackTransactionAreNotKept) {
  db.exec("BEGIN; UPDATE pp_events_layers SET layer = 'rolled back' WHERE layer = 'layer.0'");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events WHERE layer = 'rolled back'").integer, 22);
  db.exec("ROLLBACK");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events WHERE layer = 'layer.0'").integer, 22);
}

TEST_F(EventsTable, IsTheOneTableOfItsModuleAndKeepsItsName) {
  EXPECT_EQ(db.error("CREATE VIRTUAL TABLE scratch USING pp_event_store"),
            "pp_events: the table of module pp_event_store is pp_events, not scratch");
  EXPECT_EQ(db.error("ALTER TABLE pp_events RENAME TO old_events"),
            "pp_events: cannot be renamed (its shadow tables are named after it)");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 900);
}

TEST(EventsTableUpgrade, PlainTableOfAnEarlierVersionIsMovedIntoBlocksOnce) {
  pp_test::TestDb db;
  db.exec("CREATE TABLE pp_events(id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, host_name TEXT, ip TEXT, "
          "pod TEXT, namespace TEXT, gpu_uuid TEXT NOT NULL, gpu INTEGER, rank INTEGER, pid INTEGER, "
          "epoch INTEGER, batch INTEGER, layer TEXT NOT NULL, layer_type TEXT, forward INTEGER NOT NULL, "
          "t_start_ns INTEGER NOT NULL, t_end_ns INTEGER NOT NULL, t_start REAL NOT NULL, t_end REAL NOT NULL, "
          "cpu_num REAL, source_file TEXT NOT NULL, line INTEGER NOT NULL, folded INTEGER NOT NULL DEFAULT 0, "
          "UNIQUE (source_file, line));"
          "CREATE INDEX pp_events_by_gpu_time ON pp_events(gpu_uuid, t_start_ns);"
          "CREATE INDEX pp_events_unfolded ON pp_events(gpu_uuid, t_start_ns) WHERE folded = 0;"
          "CREATE VIEW my_layers AS SELECT DISTINCT layer FROM pp_events;");
  db.exec(insert_events("NULL"));
  // A row of an earlier version without a type (a user's insert) is kept with the type ''.
  db.exec("CREATE TEMP TABLE plain AS SELECT * FROM pp_events");
  db.exec("UPDATE temp.plain SET layer_type = '' WHERE layer_type IS NULL");
  db.exec("SELECT pp_install_views()");
  EXPECT_EQ(db.scalar("SELECT type FROM sqlite_schema WHERE name = 'pp_events'").text, "table");
  EXPECT_NE(db.scalar("SELECT sql FROM sqlite_schema WHERE name = 'pp_events'").text.find("USING pp_event_store"),
            std::string::npos);
  const std::string columns = "job_id, host_name, gpu, epoch, batch, layer, layer_type, forward, t_start_ns, t_end_ns, line, folded";
  EXPECT_EQ(db.scalar("SELECT count(*) FROM (SELECT " + columns + " FROM pp_events EXCEPT SELECT " + columns +
                      " FROM temp.plain)").integer, 0);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 900);
  // A user's view of pp_events reads the new table.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM my_layers").integer, 42);
  db.exec("SELECT pp_install_views()");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events").integer, 900);
}

TEST(EventsTableImport, FilesAreStoredInBlocksOfAtMostASecond) {
  pp_test::TempDir dir;
  pp_test::TestDb db;
  std::string lines;
  for (int i = 0; i < 10000; ++i) {
    nlohmann::ordered_json event = pp_test::event_json(i);
    event["gpu_uuid"] = "cpu";  // no samples to fetch
    event["gpu"] = nullptr;
    event["t_start_ns"] = pp_test::kT0 + i * 400000LL;
    event["t_end_ns"] = pp_test::kT0 + i * 400000LL + 300000;
    lines += event.dump() + "\n";
  }
  const std::string file = dir.write("job1/rank0.jsonl", lines);
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1, 1)", {file}).integer, 10000);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_events_blocks").integer, 4);
  EXPECT_EQ(db.scalar("SELECT max(last_start_ns - first_start_ns) <= 1000000000 AND max(events) <= 4096 "
                      "AND sum(events) = 10000 FROM pp_events_blocks").integer, 1);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1) AS f JOIN pp_events AS e "
                      "ON e.gpu_uuid = 'cpu' AND e.t_start_ns = f.t_start_ns "
                      "WHERE e.line = f.line AND e.layer = f.layer AND e.forward = f.forward", {file}).integer,
            10000);
}

}  // namespace
