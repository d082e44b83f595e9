// read_event_extent (src/attribution/alignment_data.hpp): each job's span of a GPU's events and a
// bound on the longest one, what the align step reads before it places a stretch. The unfolded
// events' spans come from the blocks' rows where a block can give them, else from its events.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "attribution/alignment_data.hpp"
#include "unit/test_db.hpp"

namespace {

constexpr int64_t kT0 = 1700000000000000000;
constexpr int64_t kMs = 1000000;

// One event of `job` on GPU-a, [start, end) ms after kT0, at line `line` of its file.
std::string event(const std::string& job, int64_t start_ms, int64_t end_ms, int line) {
  return "('" + job + "', 'GPU-a', 'top_l.0', 'Linear', 1, " + std::to_string(kT0 + start_ms * kMs) + ", " +
         std::to_string(kT0 + end_ms * kMs) + ", 0, 0, '" + job + ".jsonl', " + std::to_string(line) + ")";
}

void insert(pp_test::TestDb& db, const std::string& rows) {
  db.exec("SELECT pp_install_views()");
  db.exec("INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, "
          "t_end, source_file, line) VALUES " + rows);
}

const pp::AlignmentTimeline::Job* span_of(const pp::GpuEventExtent& extent, const std::string& job) {
  for (const auto& [id, span] : extent.jobs)
    if (id == job) return &span;
  return nullptr;
}

TEST(EventExtent, UnfoldedBlocksGiveTheirSpansAndBoundTheLongestEvent) {
  pp_test::TestDb db;
  insert(db, event("a", 0, 5, 1) + "," + event("a", 10, 40, 2) + "," + event("a", 50, 52, 3) + "," +
                 event("b", 100, 101, 1) + "," + event("b", 102, 110, 2));
  const pp::GpuEventExtent extent = pp::read_event_extent(db.get(), "GPU-a");
  ASSERT_EQ(extent.jobs.size(), 2u);
  EXPECT_EQ(span_of(extent, "a")->first, kT0);
  EXPECT_EQ(span_of(extent, "a")->last, kT0 + 52 * kMs);
  EXPECT_EQ(span_of(extent, "b")->first, kT0 + 100 * kMs);
  EXPECT_EQ(span_of(extent, "b")->last, kT0 + 110 * kMs);
  // A bound: at least the longest event (30 ms), at most a block's span (52 ms).
  EXPECT_GE(extent.longest_ns, 30 * kMs);
  EXPECT_LE(extent.longest_ns, 52 * kMs);
  EXPECT_EQ(extent.last_start_ns, kT0 + 102 * kMs);
  EXPECT_EQ(extent.last_end_ns, kT0 + 110 * kMs);
}

TEST(EventExtent, ABlockCutByTheFoldPointOrHoldingImpossibleTimesCountsItsOwnEvents) {
  pp_test::TestDb db;
  insert(db, event("a", 0, 5, 1) + "," + event("a", 10, 40, 2) + "," + event("a", 50, 52, 3));
  // The fold reached the second event (as pp_refresh marks a block it folded in part); the
  // folded ones count through pp_gpu_spans, which holds nothing here.
  db.exec("UPDATE pp_events_blocks SET folded_through_ns = " + std::to_string(kT0 + 10 * kMs));
  pp::GpuEventExtent extent = pp::read_event_extent(db.get(), "GPU-a");
  ASSERT_EQ(extent.jobs.size(), 1u);
  EXPECT_EQ(span_of(extent, "a")->first, kT0 + 50 * kMs);
  EXPECT_EQ(span_of(extent, "a")->last, kT0 + 52 * kMs);
  EXPECT_EQ(extent.longest_ns, 2 * kMs);  // its events read one by one: the longest exactly

  // A fold point at the block's first start folded that event, and that one only.
  db.exec("UPDATE pp_events_blocks SET folded_through_ns = " + std::to_string(kT0));
  extent = pp::read_event_extent(db.get(), "GPU-a");
  ASSERT_EQ(extent.jobs.size(), 1u);
  EXPECT_EQ(span_of(extent, "a")->first, kT0 + 10 * kMs);
  EXPECT_EQ(span_of(extent, "a")->last, kT0 + 52 * kMs);
  EXPECT_EQ(extent.longest_ns, 30 * kMs);

  // An event that ends before it starts (as an earlier version imported such) is no call: the
  // span is that of the others.
  pp_test::TestDb other;
  insert(other, event("c", 0, 5, 1) + "," + event("c", 20, 8, 2) + "," + event("c", 30, 31, 3));
  extent = pp::read_event_extent(other.get(), "GPU-a");
  ASSERT_EQ(extent.jobs.size(), 1u);
  EXPECT_EQ(span_of(extent, "c")->first, kT0);
  EXPECT_EQ(span_of(extent, "c")->last, kT0 + 31 * kMs);
  EXPECT_EQ(extent.longest_ns, 5 * kMs);
}

}  // namespace
