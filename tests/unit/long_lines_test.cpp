// A line longer than kMaxLineBytes (1 MiB): passed over with a warning that says where and how
// long it was, in memory bounded by the limit rather than the line, and the lines around it are
// read as usual. The hook client writes lines under 1 KiB; a longer one is a file that is not
// event data (or a runaway writer).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "events/line_reader.hpp"
#include "unit/event_files.hpp"
#include "unit/test_db.hpp"

namespace {

using pp_test::TempDir;

TEST(LongLines, ReaderPassesOverALineLongerThanTheLimitInBoundedMemory) {
  TempDir dir;
  const std::string file = dir.write("a.jsonl", "short\n" + std::string(100000, 'x') + "\nafter\n" + std::string(5000, 'y'));
  pp::LineReader reader(file, 0, 0, /*max_line_bytes=*/1000);
  std::string_view line;
  bool complete = false;
  ASSERT_TRUE(reader.next(line, complete));
  EXPECT_EQ(line, "short");
  ASSERT_TRUE(reader.next(line, complete));
  EXPECT_TRUE(reader.too_long());
  EXPECT_EQ(reader.line_bytes(), 100000);
  EXPECT_EQ(line, "");
  EXPECT_EQ(reader.line_number(), 2);
  ASSERT_TRUE(reader.next(line, complete));
  EXPECT_FALSE(reader.too_long());
  EXPECT_EQ(line, "after");
  EXPECT_EQ(reader.complete_bytes(), 6 + 100001 + 6);  // the long line counts for the resume offset
  ASSERT_TRUE(reader.next(line, complete));            // a long last line without '\n'
  EXPECT_TRUE(reader.too_long());
  EXPECT_FALSE(complete);
  EXPECT_EQ(reader.line_bytes(), 5000);
  EXPECT_FALSE(reader.next(line, complete));
}

TEST(LongLines, ALineOfExactlyTheLimitIsKept) {
  TempDir dir;
  const std::string file = dir.write("a.jsonl", std::string(1000, 'x') + "\n");
  pp::LineReader reader(file, 0, 0, 1000);
  std::string_view line;
  bool complete = false;
  ASSERT_TRUE(reader.next(line, complete));
  EXPECT_FALSE(reader.too_long());
  EXPECT_EQ(line.size(), 1000u);
}

TEST(LongLines, EachSkippedLineGetsAWarningAndTheOthersAreRead) {
  TempDir dir;
  const std::string big(pp::kMaxLineBytes + 1, 'x');
  const std::string file =
      dir.write("job1/rank0.jsonl", pp_test::cpu_lines(0, 2) + big + "\n" + pp_test::cpu_lines(2, 1) + big + "\n");
  pp_test::TestDb db;
  EXPECT_EQ(db.scalar("SELECT count(*) FROM layer_events(?1)", {file}).integer, 3);
  const std::string limit = std::to_string(pp::kMaxLineBytes), bytes = std::to_string(big.size());
  EXPECT_EQ(db.scalar("SELECT pp_last_warnings()").text,
            "[\"layer_events: skipped line 3 of " + file + ": " + bytes + " bytes, longer than the " + limit +
                " a line may have\",\"layer_events: skipped line 5 of " + file + ": " + bytes +
                " bytes, longer than the " + limit + " a line may have\"]");
  EXPECT_EQ(db.scalar("SELECT events_added FROM pp_refresh(?1)", {file}).integer, 3);
  EXPECT_EQ(db.scalar("SELECT group_concat(line) FROM (SELECT line FROM pp_events ORDER BY line)").text, "1,2,4");
  EXPECT_EQ(db.scalar("SELECT bytes FROM pp_event_files").integer,
            static_cast<int64_t>(pp_test::cpu_lines(0, 3).size() + 2 * (big.size() + 1)));
}

}  // namespace
