// Events whose times cannot be a layer's call: one that ends before it starts (the wall clock
// stepped back between the two readings), and times so extreme that ns arithmetic would
// overflow. pp_refresh counts and warns about them and never folds them: a mean duration stays
// the mean of real calls.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

using pp_test::TempDir;

std::string cpu_event(int i, int64_t t_start_ns, int64_t t_end_ns) {
  nlohmann::ordered_json event = pp_test::cpu_event_json(i);
  event["t_start_ns"] = t_start_ns;
  event["t_end_ns"] = t_end_ns;
  return event.dump() + "\n";
}

class ImpossibleTimes : public ::testing::Test {
 protected:
  TempDir dir;
  pp_test::TestDb db;
  std::string file = dir / "job1/rank0.jsonl";
};

TEST_F(ImpossibleTimes, EventEndingBeforeItStartsIsCountedAndNeverFolded) {
  const int64_t t = pp_test::kT0;
  dir.write("job1/rank0.jsonl", cpu_event(0, t, t + 2000000) + cpu_event(4, t + 5000000, t + 1000000) +
                                    cpu_event(8, t + 6000000, t + 8000000));
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1, 1)", {file}).integer, 2);
  EXPECT_EQ(db.scalar("SELECT pp_last_warnings()").text,
            "[\"pp_refresh: skipped 1 malformed line in " + file +
                " (first at line 2: t_end_ns is before t_start_ns (a clock step?))\"]");
  // top_l.0 forward: two calls of 2 ms each.
  EXPECT_DOUBLE_EQ(db.scalar("SELECT avg(t_end_ns - t_start_ns) FROM pp_events").real, 2000000);
  EXPECT_NEAR(db.scalar("SELECT pp_mean_value(state) FROM layer_state WHERE metric = '_duration'").real, 0.002, 1e-12);
  // layer_events shows the file as it is: the line is there.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1) WHERE t_end_ns < t_start_ns", {file}).integer, 1);
}

TEST_F(ImpossibleTimes, ExtremeTimesAreRefusedBeforeAnyArithmetic) {
  const int64_t min = std::numeric_limits<int64_t>::min(), max = std::numeric_limits<int64_t>::max();
  const int64_t t = pp_test::kT0;
  dir.write("job1/rank0.jsonl", cpu_event(0, min, max) + cpu_event(4, -1, t) + cpu_event(8, t, max) +
                                    cpu_event(12, t, t + 1000000));
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1, 1)", {file}).integer, 1);
  EXPECT_EQ(db.scalar("SELECT pp_last_warnings()").text,
            "[\"pp_refresh: skipped 3 malformed lines in " + file +
                " (first at line 1: t_start_ns or t_end_ns outside 1970-2116)\"]");
  EXPECT_NEAR(db.scalar("SELECT pp_mean_value(state) FROM layer_state WHERE metric = '_duration'").real, 0.001, 1e-12);
}

TEST_F(ImpossibleTimes, RowsAnEarlierVersionImportedAreLeftOutOfTheFoldWithAWarning) {
  const int64_t t = pp_test::kT0;
  dir.write("job1/rank0.jsonl", cpu_event(0, t, t + 2000000));
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {file}).integer, 1);
  // As an earlier version would have imported them: an inverted event and an extreme one.
  db.exec("INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, "
          "source_file, line) VALUES ('job1', 'cpu', 'top_l.0', 'Linear', 1, " + std::to_string(t + 9000000) + ", " +
          std::to_string(t) + ", 0, 0, 'old.jsonl', 1), ('job1', 'cpu', 'top_l.0', 'Linear', 1, -9223372036854775808, "
          "9223372036854775807, 0, 0, 'old.jsonl', 2)");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_refresh(?1, 1)", {file}).integer, 1);
  EXPECT_EQ(db.scalar("SELECT pp_last_warnings()").text,
            "[\"pp_refresh: 2 events in pp_events end before they start or lie outside 1970-2116; they are not folded\"]");
  EXPECT_NEAR(db.scalar("SELECT pp_mean_value(state) FROM layer_state WHERE metric = '_duration'").real, 0.002, 1e-12);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pp_refresh(?1, 1)", {file}).integer, 1);
  EXPECT_EQ(db.scalar("SELECT pp_last_warnings()").text, "[]");  // said once
}

}  // namespace
