// The encoding of pp_events' blocks: every value round-trips, and bytes it does not make (a
// database file may hold anything) are refused without reading past them.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "events/event_block.hpp"

namespace {

using pp::BlockEvent;

bool same(const BlockEvent& a, const BlockEvent& b) {
  return a.index == b.index && a.layer_id == b.layer_id && a.forward == b.forward && a.epoch_null == b.epoch_null &&
         a.batch_null == b.batch_null && a.epoch == b.epoch && a.batch == b.batch && a.t_start_ns == b.t_start_ns &&
         a.t_end_ns == b.t_end_ns && a.line == b.line;
}

std::vector<BlockEvent> extremes() {
  constexpr int64_t min = std::numeric_limits<int64_t>::min(), max = std::numeric_limits<int64_t>::max();
  std::vector<BlockEvent> events;
  BlockEvent e;
  e.index = 0, e.layer_id = 3, e.forward = true, e.epoch = 2, e.batch = 41;
  e.t_start_ns = 1714000000123456789, e.t_end_ns = 1714000000123556789, e.line = 7;
  events.push_back(e);
  e.index = 1, e.forward = false, e.t_start_ns = 1714000000000000000, e.t_end_ns = 1713999999000000000, e.line = 2;
  events.push_back(e);  // earlier than the one before, and ending before it starts
  e.index = 5, e.layer_id = (int64_t{1} << 60), e.epoch_null = true, e.epoch = 0, e.batch_null = true, e.batch = 0;
  e.t_start_ns = min, e.t_end_ns = max, e.line = max;
  events.push_back(e);  // an index after removed ones; differences that wrap around
  e.index = 65535, e.epoch_null = false, e.epoch = min, e.t_start_ns = max, e.t_end_ns = min, e.line = min;
  events.push_back(e);
  return events;
}

TEST(EventBlock, EveryValueRoundTrips) {
  const std::vector<BlockEvent> events = extremes();
  const std::string bytes = pp::encode_block(events);
  std::vector<BlockEvent> back;
  std::string problem;
  ASSERT_TRUE(pp::decode_block(bytes, back, problem)) << problem;
  ASSERT_EQ(back.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) EXPECT_TRUE(same(back[i], events[i])) << "event " << i;
}

TEST(EventBlock, ATypicalEventTakesAboutTenBytes) {
  std::vector<BlockEvent> events;
  for (int i = 0; i < 1000; ++i) {
    BlockEvent e;
    e.index = i, e.layer_id = i % 42, e.forward = i % 42 < 21, e.epoch = 1, e.batch = i / 42;
    e.t_start_ns = 1714000000000000000 + i * 950000, e.t_end_ns = e.t_start_ns + 400000 + (i % 7) * 1000;
    e.line = i + 3;
    events.push_back(e);
  }
  EXPECT_LT(pp::encode_block(events).size(), 12u * events.size());
}

TEST(EventBlock, DamagedBytesAreRefusedAndLeaveTheOutputAsItWas) {
  const std::string bytes = pp::encode_block(extremes());
  std::vector<BlockEvent> out(1);
  std::string problem;
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_FALSE(pp::decode_block(bytes.substr(0, cut), out, problem)) << "cut at " << cut;
    EXPECT_EQ(out.size(), 1u);
  }
  EXPECT_FALSE(pp::decode_block(bytes + '\0', out, problem));
  EXPECT_EQ(problem, "bytes follow its last event");
  EXPECT_FALSE(pp::decode_block(std::string("\x02\x00", 2), out, problem));
  EXPECT_EQ(problem, "an encoding version this reader does not know");
  // A count no bytes could hold is refused before anything is allocated for it.
  EXPECT_FALSE(pp::decode_block(std::string("\x01\xff\xff\xff\xff\x0f", 6), out, problem));
  EXPECT_EQ(problem, "its event count is more than its bytes can hold");
  // A varint of more than 64 bits.
  EXPECT_FALSE(pp::decode_block(std::string("\x01\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 12), out, problem));
  // Indexes that do not increase.
  std::vector<BlockEvent> twice = extremes();
  twice[1].index = 0;
  EXPECT_FALSE(pp::decode_block(pp::encode_block(twice), out, problem));
  EXPECT_EQ(problem, "its event indexes are out of order");
  EXPECT_EQ(out.size(), 1u);
}

}  // namespace
