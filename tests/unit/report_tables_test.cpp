// The report tables (report_layers, report_layer_types, report_jobs) hold what the views say,
// for every job, after every refresh; a refresh rewrites only the rows of the jobs whose data
// changed since the last one (pp_report_pending, kept by triggers), so a database that has seen
// many jobs does not pay for all of them on each refresh. Whatever changes a job's data (the
// fold, another database merged in, an edit) brings its rows up to date, and so does a change
// that reaches a job through another one: a span that comes to overlap it on its GPU.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "unit/test_db.hpp"

namespace {

using pp_test::kNsPerMs;
constexpr int64_t kReportT0 = 1700000000LL * 1000000000LL;
constexpr const char* kReportUuid = "GPU-4e90a700-0000-4000-8000-000000000000";

// What each report table must hold: the views' rows for every job (refreshed_at aside), in
// the report's columns.
constexpr const char* kViewRows[] = {
    "SELECT job_id, layer, layer_type, data_num, calls, mean_duration_ms, gpu_util, resolution, note FROM layer_metrics",
    "SELECT job_id, layer_type, forward, layers, data_num, calls, mean_duration_ms, gpu_util FROM layer_type_metrics",
    "SELECT job_id, parameters, gpus, layers, gpu_seconds, gpu_util, shared_with FROM job_overview"};
constexpr const char* kReportRows[] = {
    "SELECT job_id, layer, layer_type, data_num, calls, mean_duration_ms, gpu_util_percent, resolution, note FROM report_layers",
    "SELECT job_id, layer_type, direction = 'forward', layers, data_num, calls, mean_duration_ms, gpu_util_percent "
    "FROM report_layer_types",
    "SELECT job_id, parameters, gpus, layers, gpu_seconds, gpu_util_percent, shared_with FROM report_jobs"};

class ReportTables : public ::testing::Test {
 protected:
  // Job 'a' runs 'fc' for 20 ms of each 100 ms from 0 to 10 s, job 'b' from 20 to 30 s, on one
  // GPU; samples every 100 ms at their windows' ends (the offset pinned: this test is about the
  // report, not the alignment).
  void SetUp() override {
    db_.exec("SELECT pp_install_views()");
    db_.exec("SELECT pp_config('sample_offset_ms', 0)");
    db_.exec("UPDATE pp_metrics SET kind = 'window'");
    std::ostringstream sql;
    sql << "INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, "
           "source_file, line) VALUES ";
    int line = 0;
    for (const auto& [job, from_s] : {std::pair{"a", 0}, std::pair{"b", 20}})
      for (int k = 0; k < 100; ++k) {
        const int64_t start = kReportT0 + (from_s * 1000 + k * 100 + 10) * kNsPerMs;
        const int64_t end = start + 20 * kNsPerMs;
        sql << (line > 0 ? "," : "") << "('" << job << "', '" << kReportUuid << "', 'fc', 'Linear', 1, " << start << ", "
            << end << ", " << start / 1e9 << ", " << end / 1e9 << ", 'report', " << line + 1 << ")";
        ++line;
      }
    db_.exec(sql.str());
  }

  // GPU_UTIL in (from_ms, to_ms] after T0.
  void insert_samples(int from_ms, int to_ms) {
    std::ostringstream sql;
    sql << "INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES ";
    for (int t = from_ms + 100; t <= to_ms; t += 100)
      sql << (t > from_ms + 100 ? "," : "") << "('" << kReportUuid << "', 'DCGM_FI_DEV_GPU_UTIL', "
          << kReportT0 / kNsPerMs + t << ", " << 10 + (t / 100 * 37) % 50 << ")";
    db_.exec(sql.str());
  }

  void refresh() { db_.query("SELECT * FROM pp_refresh(NULL)"); }

  // Rows in one of (view, report) and not the other, over the three tables.
  int64_t rows_differing() {
    int64_t differing = 0;
    for (int t = 0; t < 3; ++t) {
      const std::string view = kViewRows[t], report = kReportRows[t];
      differing += db_.scalar("SELECT count(*) FROM (" + view + " EXCEPT " + report + ")").integer +
                   db_.scalar("SELECT count(*) FROM (" + report + " EXCEPT " + view + ")").integer;
    }
    return differing;
  }

  std::string text(const std::string& sql) { return db_.scalar(sql).text; }

  pp_test::TestDb db_;
};

TEST_F(ReportTables, EachRefreshRewritesOnlyTheJobsItChanged) {
  insert_samples(0, 15000);
  refresh();
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM report_jobs").integer, 1);  // 'b' has no samples yet
  EXPECT_EQ(rows_differing(), 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_report_pending").integer, 0);
  // Marked, so that a rewrite would show: the next refresh brings only 'b's windows.
  db_.exec("UPDATE report_jobs SET refreshed_at = 0; UPDATE report_layers SET refreshed_at = 0");
  insert_samples(15000, 35000);
  refresh();
  EXPECT_EQ(rows_differing(), 0);
  EXPECT_EQ(db_.scalar("SELECT refreshed_at FROM report_jobs WHERE job_id = 'a'").real, 0);
  EXPECT_GT(db_.scalar("SELECT refreshed_at FROM report_jobs WHERE job_id = 'b'").real, 1.7e9);
  EXPECT_EQ(db_.scalar("SELECT max(refreshed_at) FROM report_layers WHERE job_id = 'a'").real, 0);
  // A refresh with nothing new rewrites nothing.
  db_.exec("UPDATE report_jobs SET refreshed_at = 0");
  refresh();
  EXPECT_EQ(db_.scalar("SELECT max(refreshed_at) FROM report_jobs").real, 0);
  EXPECT_EQ(rows_differing(), 0);
}

TEST_F(ReportTables, ASpanThatComesToOverlapAJobOrLeavesItChangesItsRows) {
  insert_samples(0, 35000);
  refresh();
  const auto shared_with_a = [&] { return db_.scalar("SELECT shared_with FROM report_jobs WHERE job_id = 'a'"); };
  EXPECT_TRUE(shared_with_a().is_null());
  // Each change below is to another job's span; 'a's own data never change. After each refresh
  // the report holds what the views say.
  const std::string ms = " * 1000000 + " + std::to_string(kReportT0);
  const auto span = [&](const char* job, int from_ms, int to_ms) {
    return std::string("('") + job + "', '" + kReportUuid + "', " + std::to_string(from_ms) + ms + ", " +
           std::to_string(to_ms) + ms + ", 10, 20000000)";
  };
  // Another database's job on the same GPU at the same time, merged in as the estimator's state
  // table's header shows: only its span.
  db_.exec("INSERT INTO pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns) VALUES " + span("c", 5000, 6000));
  refresh();
  EXPECT_EQ(shared_with_a().text, "c");
  EXPECT_EQ(text("SELECT note FROM report_layers WHERE job_id = 'a' AND layer = 'fc'"),
            "GPU shared with another job (colocated_spans): the means blend both jobs; see layer_estimates");
  EXPECT_TRUE(db_.scalar("SELECT shared_with FROM report_jobs WHERE job_id = 'b'").is_null());
  EXPECT_EQ(rows_differing(), 0);
  db_.exec("DELETE FROM pp_gpu_spans WHERE job_id = 'c'");
  refresh();
  EXPECT_TRUE(shared_with_a().is_null());
  EXPECT_EQ(rows_differing(), 0);
  db_.exec("UPDATE pp_gpu_spans SET first_ns = first_ns - 15000 * 1000000 WHERE job_id = 'b'");  // back over 'a'
  refresh();
  EXPECT_EQ(shared_with_a().text, "b");
  EXPECT_EQ(text("SELECT shared_with FROM report_jobs WHERE job_id = 'b'"), "a");
  EXPECT_EQ(rows_differing(), 0);
  db_.exec("UPDATE pp_gpu_spans SET first_ns = first_ns + 15000 * 1000000 WHERE job_id = 'b'");  // away again
  refresh();
  EXPECT_TRUE(shared_with_a().is_null());
  EXPECT_EQ(rows_differing(), 0);
  // INSERT OR REPLACE deletes the old row without its delete trigger.
  db_.exec("INSERT OR REPLACE INTO pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns) VALUES " +
           span("b", 5000, 30000));
  refresh();
  EXPECT_EQ(shared_with_a().text, "b");
  db_.exec("INSERT OR REPLACE INTO pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns) VALUES " +
           span("b", 20000, 30000));
  refresh();
  EXPECT_TRUE(shared_with_a().is_null());
  EXPECT_EQ(rows_differing(), 0);
}

TEST_F(ReportTables, AWindowOrMetricKindAUserDeclaresChangesTheResolution) {
  insert_samples(0, 35000);
  refresh();
  const double resolution = db_.scalar("SELECT resolution FROM report_layers WHERE job_id = 'a' AND layer = 'fc'").real;
  EXPECT_NEAR(resolution, 0.2, 1e-9);  // 20 ms calls, 100 ms windows
  // 'a' without its span (as a merge that copies layers only leaves it): its layers still name
  // the GPU whose window they are measured against.
  db_.exec("DELETE FROM pp_gpu_spans WHERE job_id = 'a'");
  refresh();
  db_.exec("UPDATE pp_intervals SET interval_ms = 200, source = 'user'");
  refresh();
  EXPECT_NEAR(db_.scalar("SELECT resolution FROM report_layers WHERE job_id = 'a' AND layer = 'fc'").real, 0.1, 1e-9);
  EXPECT_EQ(rows_differing(), 0);
  // A metric that is no longer a window average leaves the GPU no window to measure against.
  db_.exec("UPDATE pp_metrics SET kind = 'driver_window' WHERE metric = 'DCGM_FI_DEV_GPU_UTIL'");
  refresh();
  EXPECT_TRUE(db_.scalar("SELECT resolution FROM report_layers WHERE job_id = 'a' AND layer = 'fc'").is_null());
  EXPECT_EQ(rows_differing(), 0);
}

TEST_F(ReportTables, ARowThatAReplaceRemovesListsItsJob) {
  insert_samples(0, 35000);
  db_.exec("INSERT INTO pp_jobs(job_id, params, source_file, line) VALUES ('a', 100, 'f', 1), ('b', 200, 'f', 2)");
  const std::string ms = " * 1000000 + " + std::to_string(kReportT0);
  db_.exec("INSERT INTO pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns) VALUES ('c', '" +
           std::string(kReportUuid) + "', 5000" + ms + ", 6000" + ms + ", 1, 1), ('c2', '" + kReportUuid + "', 50000" + ms +
           ", 60000" + ms + ", 1, 1)");
  refresh();
  EXPECT_EQ(text("SELECT parameters || ' ' || shared_with FROM report_jobs WHERE job_id = 'a'"), "100 c");
  // UPDATE OR REPLACE: c2's span takes c's key, and b's header a's file and line. Neither
  // statement touches a row of 'a', and no delete trigger fires for the rows they remove.
  db_.exec("UPDATE OR REPLACE pp_gpu_spans SET job_id = 'c' WHERE job_id = 'c2'");
  db_.exec("UPDATE OR REPLACE pp_jobs SET line = 1 WHERE job_id = 'b'");
  refresh();
  EXPECT_TRUE(db_.scalar("SELECT coalesce(parameters, shared_with) FROM report_jobs WHERE job_id = 'a'").is_null());
  EXPECT_EQ(rows_differing(), 0);
  // By rowid: a row of 'b' takes the rowid of one of 'a', which goes.
  db_.exec("UPDATE OR REPLACE layer_state SET rowid = (SELECT min(rowid) FROM layer_state WHERE job_id = 'a') "
           "WHERE rowid = (SELECT min(rowid) FROM layer_state WHERE job_id = 'b')");
  refresh();
  EXPECT_EQ(rows_differing(), 0);
  db_.exec("INSERT OR REPLACE INTO pp_layers(rowid, job_id, layer, forward) "
           "SELECT rowid, 'b', 'head', 1 FROM pp_layers WHERE job_id = 'a'");
  refresh();
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM report_layers WHERE job_id = 'a' AND layer_type IS NOT NULL").integer, 0);
  EXPECT_EQ(rows_differing(), 0);
}

TEST_F(ReportTables, OddRowsAMergeMayBringAreReportedAsTheViewsShowThem) {
  insert_samples(0, 35000);
  refresh();
  // A span with its ends reversed overlaps nothing, not even itself.
  db_.exec("INSERT INTO pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns) "
           "VALUES ('a', 'GPU-other', 1000000000, 0, 1, 1)");
  refresh();
  EXPECT_EQ(rows_differing(), 0);
  // A job id stored as a BLOB (another program's merge) is a job of its own, as in the views.
  db_.exec("INSERT INTO pp_layers(job_id, layer, forward, layer_type, gpu_uuid) "
           "SELECT CAST('z' AS BLOB), layer, forward, layer_type, gpu_uuid FROM pp_layers WHERE job_id = 'a'");
  db_.exec("INSERT INTO layer_state SELECT CAST('z' AS BLOB), layer, forward, metric, state FROM layer_state WHERE job_id = 'a'");
  refresh();
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM report_jobs WHERE job_id = CAST('z' AS BLOB)").integer, 1);
  EXPECT_EQ(rows_differing(), 0);
}

TEST_F(ReportTables, ViewsOfAnotherVersionGetEveryJobRewritten) {
  insert_samples(0, 35000);
  refresh();
  // As a database that a version with other views refreshed last: its report rows are theirs.
  db_.exec("UPDATE pp_meta SET value = 'another version' WHERE key = 'views'");
  db_.exec("UPDATE report_layers SET gpu_util_percent = -1; UPDATE report_jobs SET gpu_seconds = -1");
  EXPECT_GT(rows_differing(), 0);
  refresh();
  EXPECT_EQ(rows_differing(), 0);
}

TEST_F(ReportTables, ADatabaseFromBeforeTheListGetsEveryJobRewritten) {
  insert_samples(0, 35000);
  refresh();
  // As an earlier version left it: no list, no triggers, and report rows of its own making.
  std::string drops;
  for (const auto& row : db_.query("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'pp_report_%'"))
    drops += "DROP TRIGGER " + row[0].text + ";";
  EXPECT_EQ(db_.query("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'pp_report_%'").size(), 32u);
  db_.exec(drops + "DROP TABLE pp_report_pending; DELETE FROM pp_meta WHERE key = 'report_pending'");
  db_.exec("UPDATE report_layers SET gpu_util_percent = -1; DELETE FROM report_jobs WHERE job_id = 'b'");
  EXPECT_GT(rows_differing(), 0);
  refresh();
  EXPECT_EQ(rows_differing(), 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM report_jobs").integer, 2);
}

// Samples that stop before a job's last events (dcgm-exporter or the scrape stopped): a final
// refresh folds every window there is and says how many events lie past them, instead of
// dropping them silently; once their samples are in, a refresh folds them. Its row says how
// many wait and when the last of them ended (job 'b''s last call, at 29.93 s), for a caller
// that refreshes again while they may still fold.
TEST_F(ReportTables, EventsPastTheLastSampleAreSaidAndFoldedLater) {
  insert_samples(0, 25000);
  auto row = db_.query("SELECT events_waiting, waiting_end_time FROM pp_refresh(NULL, 1)");
  const std::string warnings = text("SELECT pp_last_warnings()");
  EXPECT_NE(warnings.find("50 events (the last 5 s) lie past the last DCGM sample of their GPU"), std::string::npos)
      << warnings;
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0][0].integer, 50);
  EXPECT_NEAR(row[0][1].real, static_cast<double>(kReportT0 + 29930 * kNsPerMs) / 1e9, 1e-6);
  EXPECT_EQ(db_.scalar("SELECT sum(calls) FROM layer_metrics WHERE job_id = 'b'").integer, 50);
  insert_samples(25000, 35000);
  row = db_.query("SELECT events_waiting, waiting_end_time FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(row[0][0].integer, 0);
  EXPECT_TRUE(row[0][1].is_null());
  EXPECT_EQ(text("SELECT pp_last_warnings()"), "[]");
  EXPECT_EQ(db_.scalar("SELECT sum(calls) FROM layer_metrics WHERE job_id = 'b'").integer, 100);
}

// A database from before the report tables' count of (call, window) pairs was named data_num:
// the column is renamed, its rows kept, and later refreshes write it.
TEST_F(ReportTables, ADatabaseWhoseReportsCountedWindowsGetsDataNum) {
  insert_samples(0, 15000);
  refresh();
  db_.exec("ALTER TABLE report_layers RENAME COLUMN data_num TO windows; "
           "ALTER TABLE report_layer_types RENAME COLUMN data_num TO windows");
  const int64_t before = db_.scalar("SELECT sum(windows) FROM report_layers").integer;
  EXPECT_GT(before, 0);
  db_.exec("SELECT pp_install_views()");
  EXPECT_EQ(db_.scalar("SELECT sum(data_num) FROM report_layers").integer, before);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pragma_table_info('report_layer_types') WHERE name = 'data_num'").integer, 1);
  insert_samples(15000, 35000);
  refresh();
  EXPECT_EQ(rows_differing(), 0);
}

}  // namespace

namespace {

// A job whose ranks ran the same layers on two hosts' GPUs: each layer's row names the host
// and GPU of its first call only, so the job's hosts come from its processes' job headers and
// its GPUs from its spans.
TEST(JobOverview, AJobOnTwoHostsCountsBothHostsAndGpus) {
  pp_test::TestDb db;
  db.exec("SELECT pp_install_views()");
  db.exec("SELECT pp_config('sample_offset_ms', 0)");
  db.exec("UPDATE pp_metrics SET kind = 'window'");
  std::ostringstream sql;
  sql << "INSERT INTO pp_events(job_id, host_name, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, "
         "t_end, source_file, line) VALUES ";
  const std::pair<const char*, const char*> ranks[] = {{"node-a", "GPU-a0000000-0000-4000-8000-000000000000"},
                                                       {"node-b", "GPU-b0000000-0000-4000-8000-000000000000"}};
  int line = 0;
  for (const auto& [host, uuid] : ranks)
    for (int k = 0; k < 10; ++k) {
      const int64_t start = kReportT0 + (k * 100 + 10) * kNsPerMs, end = start + 20 * kNsPerMs;
      sql << (line > 0 ? "," : "") << "('ddp', '" << host << "', '" << uuid << "', 'fc', 'Linear', 1, " << start << ", "
          << end << ", " << start / 1e9 << ", " << end / 1e9 << ", '" << host << "', " << line + 1 << ")";
      ++line;
    }
  db.exec(sql.str());
  db.exec("INSERT INTO pp_jobs(job_id, host_name, pid, source_file, line) VALUES ('ddp', 'node-b', 2, 'node-b', 0), "
          "('ddp', 'node-a', 1, 'node-a', 0)");
  std::ostringstream samples;
  samples << "INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES ";
  for (const auto& [host, uuid] : ranks)
    for (int t = 100; t <= 1100; t += 100)
      samples << (host == ranks[0].first && t == 100 ? "" : ",") << "('" << uuid << "', 'DCGM_FI_DEV_GPU_UTIL', "
              << kReportT0 / kNsPerMs + t << ", 40)";
  db.exec(samples.str());
  db.query("SELECT * FROM pp_refresh(NULL)");
  EXPECT_EQ(db.scalar("SELECT count(DISTINCT host_name) FROM layer_metrics WHERE job_id = 'ddp'").integer, 1);
  for (const char* table : {"job_overview", "report_jobs"}) {
    EXPECT_EQ(db.scalar(std::string("SELECT host_name FROM ") + table + " WHERE job_id = 'ddp'").text,
              "node-a,node-b")
        << table;
    EXPECT_EQ(db.scalar(std::string("SELECT gpus FROM ") + table + " WHERE job_id = 'ddp'").integer, 2) << table;
  }
}

}  // namespace
