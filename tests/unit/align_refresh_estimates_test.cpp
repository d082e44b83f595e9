// What the estimates of each metric rest on once aligned (align_refresh_fixture.hpp): their
// own values, GPU_UTIL's driver grid, a field to align with, and an estimator state that reads.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "stats/least_squares_state.hpp"
#include "unit/align_refresh_fixture.hpp"
#include "unit/test_db.hpp"

namespace pp_test::align_refresh {
namespace {

TEST_F(AlignRefresh, MetricsOfTheSameWindowsAreEachEstimatedFromTheirOwnValues) {
  // SM and DRAM activity describe the same windows (the estimator sweeps the events once for
  // both), DRAM with no value in a fifth of them: each metric's estimates are what they are
  // with the other metric's samples gone.
  insert_samples(0, last_ms());
  db_.exec("SELECT pp_config('sample_offset_ms', 37.9)");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  db_.exec("UPDATE pp_samples SET value = NULL WHERE metric = 'DCGM_FI_PROF_DRAM_ACTIVE' AND ts_ms % 5 = 0");
  db_.exec("CREATE TEMP TABLE both_metrics AS SELECT * FROM layer_type_estimates "
           "WHERE metric IN ('DCGM_FI_PROF_SM_ACTIVE', 'DCGM_FI_PROF_DRAM_ACTIVE')");
  const auto alone_as_with = [&](const std::string& metric) {
    return db_.scalar("SELECT (SELECT count(*) FROM (SELECT * FROM layer_type_estimates WHERE metric = '" + metric +
                      "' EXCEPT SELECT * FROM temp.both_metrics WHERE metric = '" + metric +
                      "')) = 0 AND (SELECT count(*) FROM layer_type_estimates WHERE metric = '" + metric +
                      "') = (SELECT count(*) FROM temp.both_metrics WHERE metric = '" + metric + "')")
               .integer;
  };
  db_.exec("CREATE TEMP TABLE dram AS SELECT * FROM pp_samples WHERE metric = 'DCGM_FI_PROF_DRAM_ACTIVE'");
  db_.exec("DELETE FROM pp_samples WHERE metric = 'DCGM_FI_PROF_DRAM_ACTIVE'");
  EXPECT_EQ(alone_as_with("DCGM_FI_PROF_SM_ACTIVE"), 1);
  db_.exec("INSERT INTO pp_samples SELECT * FROM temp.dram");
  db_.exec("DELETE FROM pp_samples WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE'");
  EXPECT_EQ(alone_as_with("DCGM_FI_PROF_DRAM_ACTIVE"), 1);
  // (and the nulls count: DRAM's windows are fewer than SM's)
  EXPECT_EQ(db_.scalar("SELECT (SELECT max(windows) FROM temp.both_metrics WHERE metric = 'DCGM_FI_PROF_DRAM_ACTIVE') < "
                       "(SELECT max(windows) FROM temp.both_metrics WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE')")
                .integer,
            1);
}

TEST_F(AlignRefresh, GpuUtilWhollyOffItsDriversGridIsNeverIdentified) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const char* identified_util =
      "SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND confidence = 'identified'";
  ASSERT_GT(db_.scalar(identified_util).integer, 0);
  // As where the align step finds no driver grid (its stretches poorly determined): GPU_UTIL's
  // samples are then placed on DCGM's 100 ms windows, not the driver's 1/6 s ones they average:
  // every window is left out, and each row says so, without an estimate.
  db_.exec("UPDATE pp_windows SET util_end_ns = NULL");
  EXPECT_EQ(db_.scalar(identified_util).integer, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL'").integer, 4);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' "
                       "AND (estimate IS NOT NULL OR confidence NOT LIKE "
                       "'not identified: % windows whose samples lie off their driver''s grid %')").integer,
            0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' "
                       "AND (lower90 <> 0 OR upper90 <> 100)").integer,
            0);  // its interval is what the bounds say
  EXPECT_GT(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE' "
                       "AND confidence = 'identified'").integer,
            0);  // DCGM's own fields are not affected
}

// Where the align step placed no driver grid in one stretch (its first, say, before the data
// told the driver's period), GPU_UTIL's windows there are not known: they are left out and
// counted, and its rows are estimated from the others, as if those samples had not been stored.
TEST_F(AlignRefresh, GpuUtilOffItsDriversGridInOneStretchLeavesOnlyThoseWindowsOut) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string first_stretch = "ts_ms <= " + std::to_string(kRefreshT0 / kMs + 10000);
  db_.exec("UPDATE pp_windows SET util_end_ns = NULL WHERE " + first_stretch);
  const std::string util =
      "SELECT layer_type, forward, estimate, lower90, upper90, windows, confidence FROM layer_type_estimates "
      "WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' ORDER BY layer_type, forward";
  const auto left_out = db_.query(util);
  db_.exec("DELETE FROM pp_samples WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND " + first_stretch);
  const auto not_stored = db_.query(util);
  ASSERT_EQ(left_out.size(), not_stored.size());
  ASSERT_EQ(left_out.size(), 4u);  // three layer types and the untracked time
  size_t identified = 0;
  for (size_t i = 0; i < left_out.size(); ++i) {
    SCOPED_TRACE(left_out[i][0].text);
    EXPECT_EQ(left_out[i][2].real, not_stored[i][2].real);
    EXPECT_EQ(left_out[i][3].real, not_stored[i][3].real);
    EXPECT_EQ(left_out[i][4].real, not_stored[i][4].real);
    EXPECT_EQ(left_out[i][5].integer, not_stored[i][5].integer);
    if (left_out[i][6].text == "identified") {
      ++identified;
      EXPECT_EQ(not_stored[i][6].text, "identified");
    } else {  // (fitted from the other windows: a longer run narrows it)
      EXPECT_EQ(left_out[i][6].text, not_stored[i][6].text);
    }
  }
  EXPECT_GT(identified, 0u);
  // Where no window of GPU_UTIL is placed, every row says how many were left out.
  db_.exec("UPDATE pp_windows SET util_end_ns = NULL");
  const int64_t stored = db_.scalar("SELECT count(*) FROM pp_windows AS w JOIN pp_samples AS s USING (uuid, ts_ms) "
                                    "WHERE s.metric = 'DCGM_FI_DEV_GPU_UTIL' AND w.copy_of_ms IS NULL").integer;
  EXPECT_GT(stored, 500);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND "
                       "estimate IS NULL AND confidence = 'not identified: " + std::to_string(stored) +
                       " windows whose samples lie off their driver''s grid (a driver-period metric: the window they "
                       "average is not known) were left out'").integer,
            4);
}

// dcgm-exporter without profiling fields serves GPU_UTIL (the driver's 1/6 s windows) and
// FB_USED (an instant) alone: nothing places DCGM's windows, no stretch's timing is
// determined, and an offset off by periods would still fit FB_USED's levels closely. No row
// is identified; each gives only what the bounds say.
TEST_F(AlignRefresh, WithoutAFieldToAlignWithNothingIsIdentified) {
  insert_samples(0, last_ms());
  db_.exec("DELETE FROM pp_samples WHERE metric NOT IN ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED')");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM pp_alignment WHERE status IN ('estimated', 'setting')").integer, 0);
  EXPECT_GT(db_.scalar("SELECT count(*) FROM layer_type_estimates").integer, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE confidence = 'identified'").integer, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE confidence NOT LIKE "
                       "'not identified: the timing of its GPU''s samples was determined in no stretch%'").integer,
            0);
  // With the offset pinned (status 'setting'), the same data is estimated as usual.
  db_.exec("SELECT pp_config('sample_offset_ms', " + std::to_string(kOffsetMs) + ")");
  db_.exec("DELETE FROM pp_alignment; DELETE FROM pp_windows; DELETE FROM pp_fold_state; DELETE FROM layer_state");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  EXPECT_GT(db_.scalar("SELECT count(*) FROM pp_alignment WHERE status = 'setting'").integer, 0);
  EXPECT_EQ(db_.scalar("SELECT count(*) FROM layer_type_estimates WHERE confidence LIKE '%determined in no stretch%'")
                .integer,
            0);
}

// A state blob that is not one (a damaged row) is an error naming the row, so that it can be
// deleted, not a wrong estimate.
TEST_F(AlignRefresh, ADamagedStateNamesItsRow) {
  insert_samples(0, last_ms());
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  db_.exec("UPDATE pp_estimator_state SET state = substr(state, 1, 20) WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE' "
           "AND grouping = 'layer_type' AND shift = 0");
  EXPECT_EQ(db_.error("SELECT count(*) FROM layer_type_estimates"),
            std::string("pp_estimates: estimator state: the blob ends early (truncated or not a state), in "
                        "pp_estimator_state row (uuid '") +
                kUuid + "', system 'job', metric 'DCGM_FI_PROF_SM_ACTIVE', grouping 'layer_type', shift 0)");
  // A whole state whose unknown no refresh names (a forged file merged in: a direction 7) was
  // estimated as one more layer of the job.
  pp::LeastSquaresState forged;
  forged.unknown("fc|7", "Linear");
  forged.add_row({{0, 0.5}}, 0.4);
  std::string hex;
  for (unsigned char c : forged.encode()) {
    static const char* digits = "0123456789abcdef";
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  db_.exec("UPDATE pp_estimator_state SET state = x'" + hex + "' WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE' "
           "AND grouping = 'layer_type' AND shift = 0");
  EXPECT_EQ(db_.error("SELECT count(*) FROM layer_type_estimates"),
            std::string("pp_estimates: estimator state: unknown 'fc|7' is named as no refresh names one (LAYER|0 or "
                        "LAYER|1, in UTF-8), in pp_estimator_state row (uuid '") +
                kUuid + "', system 'job', metric 'DCGM_FI_PROF_SM_ACTIVE', grouping 'layer_type', shift 0)");
}

// The notes of a state's row edited by hand (or a forged file merged in) are an error naming
// the row and the column, as its blob is: a text count was read as 0, a negative one reported,
// and two counts near 2^63 of one system overflowed when added.
TEST_F(AlignRefresh, AStateRowsNotesEditedByHandNameTheRow) {
  insert_samples(0, last_ms());
  db_.exec("SELECT pp_config('event_retention_minutes', 1)");
  db_.query("SELECT * FROM pp_refresh(NULL, 1)");
  const std::string row = std::string("in row (uuid '") + kUuid +
                          "', system 'job', metric 'DCGM_FI_PROF_SM_ACTIVE', grouping 'layer_type', shift 0) is ";
  const auto error_of = [&](const std::string& set, const std::string& statement) {
    db_.exec("SAVEPOINT edit; UPDATE pp_estimator_state SET " + set +
             " WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE' AND grouping = 'layer_type' AND shift = 0");
    const std::string error = db_.error(statement);
    db_.exec("ROLLBACK TO edit; RELEASE edit");
    return error;
  };
  const std::string estimates = "SELECT count(*) FROM layer_type_estimates";
  const std::string advice = ": edited by hand? Delete the row; the estimates then lack its windows";
  EXPECT_EQ(error_of("concurrent_windows = 'abc'", estimates),
            "pp_estimates: pp_estimator_state's concurrent_windows " + row + "'abc' (a count of windows, 0 to 2^53)" +
                advice);
  EXPECT_EQ(error_of("concurrent_windows = -7", estimates),
            "pp_estimates: pp_estimator_state's concurrent_windows " + row + "-7 (a count of windows, 0 to 2^53)" + advice);
  EXPECT_EQ(error_of("off_grid_windows = 9223372036854775807", estimates),
            "pp_estimates: pp_estimator_state's off_grid_windows " + row +
                "9223372036854775807 (a count of windows, 0 to 2^53)" + advice);
  EXPECT_EQ(error_of("shared_gauge = 7", estimates),
            "pp_estimates: pp_estimator_state's shared_gauge " + row + "7 (0 or 1)" + advice);
  EXPECT_EQ(error_of("failed = x'41'", estimates),
            "pp_estimates: pp_estimator_state's failed " + row +
                "a BLOB of 1 byte (why the system could not be kept: text, or NULL)" + advice);
  EXPECT_EQ(error_of("state = NULL", estimates),
            "pp_estimates: pp_estimator_state's state " + row + "NULL (the sums of the " +
                db_.scalar("SELECT windows FROM pp_estimator_state WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE' AND "
                           "grouping = 'layer_type' AND shift = 0").text +
                " windows it counts (a state), or NULL only with no windows or a reason in failed)" + advice);
  // The export and the refresh that adds windows to the row read it the same way.
  EXPECT_EQ(error_of("windows = 'zzz'", "SELECT count(*) FROM pp_estimator_states"),
            "pp_estimator_states: pp_estimator_state's windows " + row + "'zzz' (a count of windows, 0 to 2^53)" +
                advice);
  // What the refresh writes passes.
  EXPECT_EQ(error_of("windows = windows", estimates), "");
  EXPECT_EQ(error_of("windows = windows", "SELECT count(*) FROM pp_estimator_states"), "");
}

}  // namespace
}  // namespace pp_test::align_refresh
