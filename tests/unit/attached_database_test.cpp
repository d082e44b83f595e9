// The estimator's and the overlaps' table functions read the main database's tables. Their
// views pass their own database's identity (pp_meta's database_id), so that a view read
// through ATTACH is refused with what to do, never answered with main's rows.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

TEST(AttachedDatabase, ItsViewsAreRefusedNotAnsweredFromMain) {
  pp_test::TempDir dir;
  {
    pp_test::TestDb host_b{dir / "host-b.db"};
    host_b.query("SELECT pp_install_views()");
    // A GPU with aligned samples, so that each view calls its function for it.
    host_b.exec("INSERT INTO pp_intervals(uuid, metric, interval_ms) VALUES ('GPU-b', 'DCGM_FI_DEV_GPU_UTIL', 100);"
                "INSERT INTO pp_alignment(uuid, from_ms, through_ms, offset_ns, timing_ns, drift_ppm, samples, repeats, "
                "skipped, moved, status) VALUES ('GPU-b', 0, 1000, 0, 0, 0, 10, 0, 0, 0, 'setting');");
  }
  pp_test::TestDb host_a{dir / "host-a.db"};
  host_a.query("SELECT pp_install_views()");
  host_a.exec("ATTACH '" + (dir / "host-b.db") + "' AS b");
  EXPECT_NE(host_a.scalar("SELECT value FROM main.pp_meta WHERE key = 'database_id'").text,
            host_a.scalar("SELECT value FROM b.pp_meta WHERE key = 'database_id'").text);
  for (const auto& [view, function] : {std::pair{"layer_estimates", "pp_estimates"}, {"layer_type_estimates", "pp_estimates"},
                                       {"pp_window_fractions", "pp_fractions"}, {"layer_attribution", "pp_overlaps"}}) {
    EXPECT_EQ(host_a.error(std::string("SELECT * FROM b.") + view).rfind(
                  std::string(function) + ": reads the main database's tables, and this call comes from a view of "
                                          "another, ATTACHed, database",
                  0),
              0u)
        << view;
    EXPECT_EQ(host_a.query(std::string("SELECT * FROM main.") + view).size(), 0u) << view;  // main's own: fine
  }
  // Plain views of b read b's tables, as SQLite resolves them.
  EXPECT_EQ(host_a.query("SELECT * FROM b.layer_metrics").size(), 0u);
  // A database with no attribution tables as main, the results attached: refused alike.
  pp_test::TestDb scheduler{dir / "scheduler.db"};
  scheduler.exec("ATTACH '" + (dir / "host-b.db") + "' AS pp");
  EXPECT_NE(scheduler.error("SELECT * FROM pp.layer_type_estimates").find("comes from a view of another, ATTACHed"),
            std::string::npos);
}

TEST(AttachedDatabase, ACopyOfMainIsRefusedUntilItHasAnIdentityOfItsOwn) {
  pp_test::TempDir dir;
  {
    pp_test::TestDb original{dir / "results.db"};
    original.query("SELECT pp_install_views()");
    original.exec("INSERT INTO pp_intervals(uuid, metric, interval_ms) VALUES ('GPU-a', 'DCGM_FI_DEV_GPU_UTIL', 100);"
                  "INSERT INTO pp_alignment(uuid, from_ms, through_ms, offset_ns, timing_ns, drift_ppm, samples, "
                  "repeats, skipped, moved, status) VALUES ('GPU-a', 0, 1000, 0, 0, 0, 10, 0, 0, 0, 'setting');");
  }
  std::filesystem::copy_file(dir / "results.db", dir / "backup.db");
  pp_test::TestDb current{dir / "results.db"};
  current.exec("ATTACH '" + (dir / "backup.db") + "' AS \"the backup\"");
  // The backup's views pass the id main has: answered from main, they would show main's rows
  // twice in a before-and-after comparison. Both sides are refused, naming the fix.
  for (const char* query : {"SELECT * FROM \"the backup\".layer_estimates", "SELECT * FROM main.layer_estimates"})
    EXPECT_NE(current.error(query).find("pp_estimates: reads the main database's tables, and the ATTACHed database "
                                        "'the backup' has the main database's database_id (a copy of it): a call "
                                        "from a view cannot tell which of the two it comes from. Open the copy on "
                                        "its own, or give it an identity of its own first: UPDATE \"the backup\""
                                        ".pp_meta SET value = lower(hex(randomblob(16))) WHERE key = 'database_id'"),
              std::string::npos)
        << query;
  current.exec("UPDATE \"the backup\".pp_meta SET value = lower(hex(randomblob(16))) WHERE key = 'database_id'");
  EXPECT_EQ(current.query("SELECT * FROM main.layer_estimates").size(), 0u);
  EXPECT_NE(current.error("SELECT * FROM \"the backup\".layer_estimates").find("comes from a view of another, ATTACHed"),
            std::string::npos);
}

}  // namespace
