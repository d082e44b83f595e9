// The arithmetic of pp_mean states (src/stats/mean_state.hpp): incremental updates, merges of any
// partition, the inverse used by sliding frames, and the stored encoding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "stats/double_double.hpp"
#include "stats/mean_state.hpp"
#include "stats/weighted_sums.hpp"

namespace {

using pp::MeanState;

struct Observation {
  double x;
  double w;
};

// Two-pass reference in long double (64-bit mantissa on x86-64).
struct Reference {
  long double weight = 0, mean = 0, m2 = 0;
  double min = INFINITY, max = -INFINITY;
  explicit Reference(const std::vector<Observation>& data) {
    long double sum = 0;
    for (const auto& o : data) {
      weight += o.w;
      sum += static_cast<long double>(o.w) * o.x;
      min = std::min(min, o.x);
      max = std::max(max, o.x);
    }
    mean = sum / weight;
    for (const auto& o : data) m2 += o.w * (o.x - mean) * (o.x - mean);
  }
  double stddev() const { return static_cast<double>(std::sqrt(m2 / (weight - 1))); }
};

double relative_error(double got, double want) {
  if (got == want) return 0;
  return std::fabs(got - want) / std::max(std::fabs(want), 1e-300);
}

MeanState fold(const std::vector<Observation>& data) {
  MeanState s{};
  for (const auto& o : data) s.add(o.x, o.w);
  return s;
}

// Draws data: offset + scale * N(0, 1); weights 1 or uniform in (0, 5].
std::vector<Observation> draw(std::mt19937_64& rng, size_t n, double offset, double scale, bool weighted) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> weight(0.001, 5.0);
  std::vector<Observation> data(n);
  for (auto& o : data) o = {offset + scale * normal(rng), weighted ? weight(rng) : 1.0};
  return data;
}

// Splits data into `parts` random, possibly uneven, non-empty-or-empty groups.
std::vector<std::vector<Observation>> partition(std::mt19937_64& rng, const std::vector<Observation>& data,
                                                size_t parts) {
  std::vector<std::vector<Observation>> groups(parts);
  // Uneven sizes: each group gets a random share of probability.
  std::vector<double> shares(parts);
  std::exponential_distribution<double> share(1.0);
  for (auto& s : shares) s = share(rng);
  std::discrete_distribution<size_t> pick(shares.begin(), shares.end());
  for (const auto& o : data) groups[pick(rng)].push_back(o);
  return groups;
}

void expect_matches(const MeanState& s, const Reference& ref, size_t n, const std::string& what) {
  ASSERT_EQ(s.count, static_cast<int64_t>(n)) << what;
  EXPECT_LT(relative_error(*s.value(), static_cast<double>(ref.mean)), 1e-12) << what;
  EXPECT_LT(relative_error(s.weight, static_cast<double>(ref.weight)), 1e-12) << what;
  ASSERT_TRUE(s.stddev().has_value()) << what;
  EXPECT_LT(relative_error(*s.stddev(), ref.stddev()), 1e-12) << what;
  EXPECT_EQ(s.minimum(), ref.min) << what;
  EXPECT_EQ(s.maximum(), ref.max) << what;
}

TEST(MeanState, EmptyIsZeroFilled) {
  MeanState s;
  std::memset(static_cast<void*>(&s), 0, sizeof s);
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.value());
  EXPECT_FALSE(s.stddev());
  EXPECT_FALSE(s.minimum());
  EXPECT_FALSE(s.maximum());
}

TEST(MeanState, TextbookValues) {
  MeanState s{};
  for (double x : {2, 4, 4, 4, 5, 5, 7, 9}) s.add(x);
  EXPECT_EQ(s.count, 8);
  EXPECT_EQ(s.weight, 8.0);
  EXPECT_DOUBLE_EQ(*s.value(), 5.0);
  EXPECT_DOUBLE_EQ(*s.stddev(), std::sqrt(32.0 / 7.0));  // sample stddev
  EXPECT_EQ(*s.minimum(), 2.0);
  EXPECT_EQ(*s.maximum(), 9.0);
  MeanState one = MeanState::of(3.5);
  EXPECT_EQ(*one.value(), 3.5);
  EXPECT_FALSE(one.stddev());  // a single observation has no sample spread
}

TEST(MeanState, FrequencyWeightsEqualRepetition) {
  // Weight k means "observed k times": same mean, M2 and stddev as repeating the value.
  MeanState weighted{}, repeated{};
  const std::vector<std::pair<double, int>> data = {{1.5, 3}, {-2.0, 1}, {7.25, 4}, {0.0, 2}};
  for (const auto& [x, k] : data) {
    weighted.add(x, k);
    for (int i = 0; i < k; ++i) repeated.add(x);
  }
  EXPECT_EQ(weighted.weight, repeated.weight);
  EXPECT_NEAR(*weighted.value(), *repeated.value(), 1e-15);
  EXPECT_NEAR(*weighted.stddev(), *repeated.stddev(), 1e-14);
  EXPECT_EQ(weighted.count, 4);  // count is rows folded in, not weight
  // Weights below one unit in total leave the sample stddev undefined.
  MeanState light{};
  light.add(1.0, 0.25);
  light.add(2.0, 0.5);
  EXPECT_NEAR(*light.value(), 5.0 / 3.0, 1e-15);
  EXPECT_FALSE(light.stddev());
}

TEST(MeanState, MergeOfAnyPartitionIsTheWhole) {
  std::mt19937_64 rng(20240517);
  struct Case {
    double offset, scale;
    bool weighted;
  };
  const Case cases[] = {{0, 1, false}, {1e6, 1, false}, {1e6, 1, true}, {-3e6, 0.01, false},
                        {1e6, 1e-3, true}, {50, 20, true}, {0, 1e-9, false}};
  for (const Case& c : cases) {
    for (int round = 0; round < 20; ++round) {
      const size_t n = 2 + rng() % 20000;
      const auto data = draw(rng, n, c.offset, c.scale, c.weighted);
      const Reference ref(data);
      const std::string what = "offset " + std::to_string(c.offset) + " scale " + std::to_string(c.scale) +
                               (c.weighted ? " weighted" : "") + " n " + std::to_string(n);
      const MeanState whole = fold(data);
      expect_matches(whole, ref, n, what + " (sequential)");

      auto groups = partition(rng, data, 1 + rng() % 64);
      std::vector<MeanState> states;
      for (const auto& g : groups) states.push_back(fold(g));
      // Left fold in a random order.
      std::shuffle(states.begin(), states.end(), rng);
      MeanState merged{};
      for (const auto& s : states) merged.merge(s);
      expect_matches(merged, ref, n, what + " (merged in random order)");
      // Pairwise tree, as a GROUP BY of GROUP BYs would do.
      while (states.size() > 1) {
        std::vector<MeanState> next;
        for (size_t i = 0; i + 1 < states.size(); i += 2) {
          MeanState a = states[i];
          a.merge(states[i + 1]);
          next.push_back(a);
        }
        if (states.size() % 2) next.push_back(states.back());
        states.swap(next);
      }
      expect_matches(states[0], ref, n, what + " (merged as a tree)");
      EXPECT_LT(relative_error(*merged.stddev(), *whole.stddev()), 1e-12) << what;
    }
  }
}

TEST(MeanState, MergeWithEmptyIsIdentity) {
  MeanState a{};
  a.add(1);
  a.add(4);
  MeanState b = a;
  b.merge(MeanState{});
  EXPECT_EQ(encode_mean_state(a), encode_mean_state(b));
  MeanState c{};
  c.merge(a);
  EXPECT_EQ(encode_mean_state(a), encode_mean_state(c));
}

TEST(MeanState, RemoveUndoesAdd) {
  std::mt19937_64 rng(7);
  for (bool weighted : {false, true}) {
    const auto data = draw(rng, 5000, 1e6, 1, weighted);
    MeanState s = fold(data);
    // Remove the first 4000 in random order: the rest is what remains.
    std::vector<size_t> order(4000);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) s.remove(data[i].x, data[i].w);
    const std::vector<Observation> rest(data.begin() + 4000, data.end());
    const Reference ref(rest);
    EXPECT_EQ(s.count, 1000);
    EXPECT_LT(relative_error(*s.value(), static_cast<double>(ref.mean)), 1e-12);
    EXPECT_LT(relative_error(*s.stddev(), ref.stddev()), 1e-12);
    // Removing everything gives exactly the empty state.
    for (const auto& o : rest) s.remove(o.x, o.w);
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(encode_mean_state(s), encode_mean_state(MeanState{}));
  }
}

TEST(MeanState, SlidingWindowStaysAccurate) {
  std::mt19937_64 rng(11);
  const auto data = draw(rng, 20000, 1e6, 1, false);
  const size_t width = 50;
  MeanState s{};
  double worst_mean = 0, worst_stddev = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    s.add(data[i].x);
    if (i >= width) s.remove(data[i - width].x);
    if (i + 1 >= width) {
      const std::vector<Observation> frame(data.begin() + (i + 1 - width), data.begin() + i + 1);
      const Reference ref(frame);
      worst_mean = std::max(worst_mean, relative_error(*s.value(), static_cast<double>(ref.mean)));
      worst_stddev = std::max(worst_stddev, relative_error(*s.stddev(), ref.stddev()));
    }
  }
  EXPECT_LT(worst_mean, 1e-14);
  EXPECT_LT(worst_stddev, 1e-12);
  EXPECT_FALSE(s.m2_lost);
}

TEST(MeanState, UnmergeIsTheInverseOfMerge) {
  std::mt19937_64 rng(3);
  const auto a = draw(rng, 3000, 1e6, 2, true);
  const auto b = draw(rng, 1000, 1e6 + 3, 1, true);
  MeanState whole = fold(a);
  whole.merge(fold(b));
  whole.unmerge(fold(b));
  const Reference ref(a);
  EXPECT_EQ(whole.count, 3000);
  EXPECT_LT(relative_error(*whole.value(), static_cast<double>(ref.mean)), 1e-13);
  EXPECT_LT(relative_error(*whole.stddev(), ref.stddev()), 1e-12);
  MeanState small = fold(b);
  EXPECT_THROW(small.unmerge(fold(a)), std::logic_error);
}

TEST(MeanState, ExtremaAfterRemovalAreExactOrUnknown) {
  MeanState s{};
  for (double x : {5.0, 1.0, 9.0, 3.0}) s.add(x);
  s.remove(3.0);  // strictly inside: both extrema survive
  EXPECT_EQ(s.minimum(), 1.0);
  EXPECT_EQ(s.maximum(), 9.0);
  s.remove(1.0);  // the minimum leaves: the new minimum (5) is not recoverable
  EXPECT_FALSE(s.minimum());
  EXPECT_EQ(s.maximum(), 9.0);
  s.add(0.5);  // still unknown: the true minimum is min(5, 0.5) but we cannot know the 5
  EXPECT_FALSE(s.minimum());
  s.remove(9.0);
  EXPECT_FALSE(s.maximum());
  // Removing a duplicate of the minimum also makes it unknown (the other copy may remain,
  // but the state cannot tell).
  MeanState d{};
  for (double x : {2.0, 2.0, 4.0}) d.add(x);
  d.remove(2.0);
  EXPECT_FALSE(d.minimum());
  // Emptying the state makes the extrema known again.
  for (double x : {2.0, 4.0}) d.remove(x);
  EXPECT_TRUE(d.empty());
  d.add(6.0);
  EXPECT_EQ(d.minimum(), 6.0);
  EXPECT_EQ(d.maximum(), 6.0);
  // Merging with an unknown extremum gives an unknown extremum.
  MeanState m{};
  m.add(100.0);
  m.merge(s);
  EXPECT_FALSE(m.minimum());
  EXPECT_FALSE(m.maximum());
}

TEST(MeanState, EncodingRoundTripsExactly) {
  std::mt19937_64 rng(5);
  const auto data = draw(rng, 777, 1e6, 1, true);
  MeanState s = fold(data);
  s.remove(data[0].x, data[0].w);
  const std::string blob = encode_mean_state(s);
  ASSERT_EQ(blob.size(), pp::kMeanStateBytes);
  EXPECT_EQ(blob.substr(0, 3), std::string("pm\x01", 3));
  const auto back = pp::decode_mean_state(blob.data(), blob.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->count, s.count);
  EXPECT_EQ(back->weight, s.weight);
  EXPECT_EQ(back->mean, s.mean);
  EXPECT_EQ(back->mean_low, s.mean_low);
  EXPECT_EQ(back->m2, s.m2);
  EXPECT_EQ(back->minimum(), s.minimum());
  EXPECT_EQ(back->maximum(), s.maximum());
  EXPECT_EQ(encode_mean_state(*back), blob);
}

TEST(MeanState, EncodingIsLittleEndianAndDocumented) {
  MeanState s{};
  s.add(2.0);
  s.add(4.0);
  const std::string blob = encode_mean_state(s);
  const std::string expected_prefix("pm\x01\x03\x02\0\0\0\0\0\0\0", 12);  // both extrema known, count 2
  EXPECT_EQ(blob.substr(0, 12), expected_prefix);
  double weight = 0;
  std::memcpy(&weight, blob.data() + 12, 8);  // this test runs on little-endian hosts
  EXPECT_EQ(weight, 2.0);
  double mean = 0;
  std::memcpy(&mean, blob.data() + 20, 8);
  EXPECT_EQ(mean, 3.0);
}

TEST(MeanState, MalformedEncodingsAreRejected) {
  MeanState s{};
  s.add(1.0);
  s.add(2.0);
  const std::string good = encode_mean_state(s);
  ASSERT_TRUE(pp::decode_mean_state(good.data(), good.size()));
  EXPECT_FALSE(pp::decode_mean_state(nullptr, 0));
  EXPECT_FALSE(pp::decode_mean_state(good.data(), good.size() - 1));
  EXPECT_FALSE(pp::decode_mean_state((good + "x").data(), good.size() + 1));
  auto corrupt = [&](size_t offset, const std::string& bytes) {
    std::string b = good;
    b.replace(offset, bytes.size(), bytes);
    return pp::decode_mean_state(b.data(), b.size()).has_value();
  };
  EXPECT_FALSE(corrupt(0, "x"));                                 // magic
  EXPECT_FALSE(corrupt(2, "\x03"));                              // unknown version
  EXPECT_FALSE(corrupt(2, "\x02"));                              // version 2 without M2 lost
  EXPECT_FALSE(corrupt(3, "\x07"));                              // reserved flag bit
  EXPECT_FALSE(corrupt(4, std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8)));  // count -1
  EXPECT_FALSE(corrupt(12, std::string("\0\0\0\0\0\0\xf8\x7f", 8)));             // weight NaN
  EXPECT_FALSE(corrupt(12, std::string("\0\0\0\0\0\0\0\0", 8)));                 // weight 0, count 2
  EXPECT_FALSE(corrupt(36, std::string("\0\0\0\0\0\0\xf0\xbf", 8)));             // M2 -1
  EXPECT_FALSE(corrupt(44, std::string("\0\0\0\0\0\0\x24\x40", 8)));             // min 10 > max 2
  // A state whose M2 is lost is version 2, with flag bit 2 and M2 0; nothing else has either.
  EXPECT_FALSE(corrupt(3, "\x07"));                              // M2 lost under version 1
  MeanState lost{};
  for (double x : {1e20, 1.0, 2.0, 3.0}) lost.add(x);
  lost.remove(1e20);
  const std::string lost_blob = encode_mean_state(lost);
  ASSERT_TRUE(pp::decode_mean_state(lost_blob.data(), lost_blob.size()));
  auto corrupt_lost = [&](size_t offset, const std::string& bytes) {
    std::string b = lost_blob;
    b.replace(offset, bytes.size(), bytes);
    return pp::decode_mean_state(b.data(), b.size()).has_value();
  };
  EXPECT_FALSE(corrupt_lost(36, std::string("\0\0\0\0\0\0\xf0\x3f", 8)));  // M2 1 beside the flag
  EXPECT_FALSE(corrupt_lost(4, std::string("\x01\0\0\0\0\0\0\0", 8)));     // one observation
  EXPECT_FALSE(corrupt_lost(3, "\x0c"));                                          // reserved bit 3
  // The empty state has exactly one encoding.
  const std::string empty = encode_mean_state(MeanState{});
  EXPECT_TRUE(pp::decode_mean_state(empty.data(), empty.size()));
  std::string bad_empty = empty;
  bad_empty[20] = 1;
  EXPECT_FALSE(pp::decode_mean_state(bad_empty.data(), bad_empty.size()));
}

}  // namespace

// The SQL functions store exactly the state the arithmetic computes.
#include "unit/test_db.hpp"

namespace {

TEST(MeanSql, StoredStateIsTheComputedState) {
  pp_test::TestDb db;
  db.exec("CREATE TABLE t(i INTEGER PRIMARY KEY, x REAL, w REAL)");
  std::mt19937_64 rng(9);
  const auto data = draw(rng, 500, 1e6, 1, true);
  for (size_t i = 0; i < data.size(); ++i) {
    db.query("INSERT INTO t VALUES (?, ?, ?)", {std::to_string(i), std::to_string(data[i].x), std::to_string(data[i].w)});
  }
  // Fold the values as stored (text round trip of REAL) in the same order as the query.
  const auto rows = db.query("SELECT x, w FROM t ORDER BY i");
  MeanState expected{}, expected_weighted{};
  for (const auto& row : rows) {
    expected.add(row[0].real);
    expected_weighted.add(row[0].real, row[1].real);
  }
  const auto states = db.query("SELECT pp_mean(x), pp_mean(x, w) FROM (SELECT * FROM t ORDER BY i)");
  EXPECT_EQ(states[0][0].text, pp::encode_mean_state(expected));
  EXPECT_EQ(states[0][1].text, pp::encode_mean_state(expected_weighted));
  const auto running = db.query("SELECT pp_mean(x) OVER (ORDER BY i) FROM t ORDER BY i");
  ASSERT_EQ(running.size(), 500u);
  EXPECT_EQ(running.back()[0].text, pp::encode_mean_state(expected));
  // Readers agree with the decoded state.
  const auto read = db.query("SELECT pp_mean_value(s), pp_mean_stddev(s), pp_mean_count(s) FROM "
                             "(SELECT pp_mean(x, w) AS s FROM (SELECT * FROM t ORDER BY i))");
  EXPECT_EQ(read[0][0].real, *expected_weighted.value());
  EXPECT_EQ(read[0][1].real, *expected_weighted.stddev());
  EXPECT_EQ(read[0][2].integer, 500);
}

TEST(MeanSql, ErrorsNameFunctionAndArgument) {
  pp_test::TestDb db;
  EXPECT_EQ(db.error("SELECT pp_mean_value(x'00')"), "pp_mean_value: argument 'state' is not a pp_mean state");
  EXPECT_EQ(db.error("SELECT pp_mean(1, -2)"), "pp_mean: argument 'w' must be a finite number >= 0");
  EXPECT_EQ(db.error("SELECT pp_mean_merge(1, NULL)"), "pp_mean_merge: argument 'a' is not a pp_mean state");
}

}  // namespace

// Taking a value far larger than the rest out of a sliding frame leaves the mean of the rest:
// over 1e20, 1, 1 a frame of two ends at the mean of (1, 1), not 0.5 (below its own minimum).
TEST(MeanState, RemovingAHugeValueLeavesTheMeanOfTheRest) {
  MeanState s{};
  s.add(1e20);
  s.add(1);
  s.remove(1e20);
  EXPECT_EQ(*s.value(), 1.0);
  s.add(1);
  EXPECT_EQ(*s.value(), 1.0);
  MeanState t{};
  for (double x : {1e20, 1.0, 1.0}) t.add(x);
  t.remove(1e20);
  EXPECT_NEAR(*t.value(), 1.0, 1e-12);
  EXPECT_GE(*t.value(), *t.minimum());
  // With values of any sign and size, the mean stays within the values left.
  for (double big : {1e15, -1e18, 3e25, -7e30}) {
    MeanState u{};
    for (double x : {big, 2.0, 3.0, 5.0}) u.add(x);
    u.remove(big);
    EXPECT_NEAR(*u.value(), 10.0 / 3.0, 1e-12 * (1 + std::fabs(big) * 1e-16)) << big;
  }
}

// Taking a value far from the rest out of a frame leaves M2 as the difference of terms many
// orders of magnitude larger: its digits are gone, so the stddev is unknown (NULL in SQL), as
// an extremum that left is, never a wrong number (it was 0.866 where 1 was right).
TEST(MeanState, StddevAfterRemovingAFarValueIsUnknownNotWrong) {
  MeanState s{};
  for (double x : {1e20, 1.0, 2.0, 3.0}) s.add(x);
  s.remove(1e20);
  EXPECT_TRUE(s.m2_lost);
  EXPECT_FALSE(s.stddev().has_value());
  EXPECT_NEAR(*s.value(), 2.0, 1e-12);  // the mean keeps about 32 - 20 digits
  // Stored as version 2, flag bit 2, M2 0; read back, merged or taken apart it stays unknown.
  const std::string blob = encode_mean_state(s);
  EXPECT_EQ(blob.substr(0, 4), std::string("pm\x02\x05", 4));  // min known, max not, M2 lost
  double m2 = -1;
  std::memcpy(&m2, blob.data() + 36, 8);
  EXPECT_EQ(m2, 0.0);
  const auto back = pp::decode_mean_state(blob.data(), blob.size());
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->stddev().has_value());
  MeanState merged = MeanState::of(7.0);
  merged.add(9.0);
  merged.merge(*back);
  EXPECT_FALSE(merged.stddev().has_value());
  EXPECT_EQ(merged.count, 5);
  // Down to one observation, M2 is 0 exactly: known again from there.
  s.remove(1.0);
  s.remove(2.0);
  EXPECT_FALSE(s.m2_lost);
  s.add(5.0);
  ASSERT_TRUE(s.stddev().has_value());
  EXPECT_NEAR(*s.stddev(), std::sqrt(2.0), 1e-15);
}

// Whatever leaves a sliding frame, a stddev that is given is right to six digits; one that is
// not given is one whose M2 lost them. An outlier within a few orders of magnitude of the rest
// leaves the stddev known.
TEST(MeanState, SlidingFrameStddevIsRightOrUnknown) {
  std::mt19937_64 rng(17);
  for (double outlier : {1e1, 1e3, 1e5, 1e7, 1e9, 1e12, 1e16, 1e20, -1e25}) {
    for (size_t width : {3, 5, 20}) {
      auto data = draw(rng, 400, 0, 1, false);
      data[100].x = outlier;
      MeanState s{};
      size_t given = 0;
      for (size_t i = 0; i < data.size(); ++i) {
        s.add(data[i].x);
        if (i >= width) s.remove(data[i - width].x);
        if (i + 1 < width) continue;
        const Reference ref(std::vector<Observation>(data.begin() + (i + 1 - width), data.begin() + i + 1));
        if (!s.stddev()) continue;
        ++given;
        EXPECT_LT(relative_error(*s.stddev(), ref.stddev()), 1e-6) << outlier << " width " << width << " row " << i;
      }
      // Before the outlier comes, and after it goes where its removal kept six digits.
      EXPECT_GE(given, 100 - width) << outlier << " width " << width;
      if (std::fabs(outlier) <= 1e3) {
        EXPECT_EQ(given, data.size() + 1 - width) << outlier << " width " << width;
      }
    }
  }
}

// Overflow is an error where it happens, and the state is left as it was: no state a reader
// would refuse is ever made.
TEST(MeanState, OverflowIsAnErrorWhereItHappens) {
  MeanState weights = MeanState::of(1.0, 1e308);
  EXPECT_THROW(weights.add(2.0, 1e308), pp::Error);
  EXPECT_EQ(weights.count, 1);
  EXPECT_EQ(weights.weight, 1e308);
  MeanState spread = MeanState::of(-1e308);
  EXPECT_THROW(spread.add(1e308), pp::Error);
  EXPECT_EQ(spread.count, 1);
  MeanState many = MeanState::of(1.0);
  many.count = INT64_MAX - 1;
  many.weight = static_cast<double>(INT64_MAX);
  EXPECT_THROW(many.merge(many), pp::Error);
  EXPECT_EQ(many.count, INT64_MAX - 1);
  try {
    weights.add(2.0, 1e308);
  } catch (const pp::Error& e) {
    EXPECT_STREQ(e.what(),
                 "the state would overflow: the sum of weights passes the largest double (1.8e308); split the "
                 "data into smaller groups");
  }
}

// WeightedSums (the fold's sweep) gives the state that adding each observation gives: the same
// count, weight, mean, spread and extrema, to the accuracy of the two-pass reference.
TEST(WeightedSums, GiveTheStateOfTheirObservations) {
  std::mt19937_64 rng(20261129);
  std::uniform_int_distribution<int64_t> units(1, 100'000'000);  // up to a 100 ms window, in ns
  std::uniform_int_distribution<int64_t> calls(1, 4);
  // As MeanState's cases, with GPU memory in bytes (12 GB, varying by kB) and a large negative
  // offset; the two-pass reference is exact enough for these, not where the spread nears the
  // values' own rounding.
  const std::pair<double, double> cases[] = {{0, 1},     {0.5, 0.1},  {1e6, 1},     {-3e6, 0.01}, {1e6, 1e-3},
                                             {50, 20},   {0, 1e-9},   {1.2e10, 1e3}, {-3e9, 10}};
  for (const auto& [offset, scale] : cases) {
    pp::WeightedSums sums;
    std::vector<Observation> data;
    int64_t count = 0;
    for (const Observation& o : draw(rng, 2000, offset, scale, false)) {
      const int64_t u = units(rng), k = calls(rng);
      sums.add(o.x, u, k);
      data.push_back({o.x, static_cast<double>(u) / 1e9});
      count += k;
    }
    const std::string what = "offset " + std::to_string(offset) + " scale " + std::to_string(scale);
    const MeanState s = sums.state(1e9);
    const Reference ref(data);
    EXPECT_EQ(s.count, count) << what;
    EXPECT_LT(relative_error(*s.value(), static_cast<double>(ref.mean)), 1e-15) << what;
    EXPECT_LT(relative_error(s.weight, static_cast<double>(ref.weight)), 1e-15) << what;
    EXPECT_LT(relative_error(*s.stddev(), ref.stddev()), 1e-12) << what;
    EXPECT_EQ(s.minimum(), ref.min) << what;
    EXPECT_EQ(s.maximum(), ref.max) << what;
    // Merged with the state of more observations, it is the state of all of them.
    const std::vector<Observation> more = draw(rng, 500, offset, scale, true);
    MeanState all = s;
    all.merge(fold(more));
    data.insert(data.end(), more.begin(), more.end());
    const Reference whole(data);
    EXPECT_EQ(all.count, count + static_cast<int64_t>(more.size())) << what;
    EXPECT_LT(relative_error(*all.value(), static_cast<double>(whole.mean)), 1e-12) << what;
    EXPECT_LT(relative_error(*all.stddev(), whole.stddev()), 1e-12) << what;
  }
}

TEST(WeightedSums, EqualValuesHaveTheirMeanExactlyAndNoSpread) {
  pp::WeightedSums sums;
  EXPECT_TRUE(sums.empty());
  EXPECT_TRUE(sums.state(1e9).empty());
  for (int i = 0; i < 1000; ++i) sums.add(0.1, 1 + i % 97, 2);
  const MeanState s = sums.state(1e9);
  EXPECT_EQ(*s.value(), 0.1);
  EXPECT_EQ(s.mean_low, 0.0);
  EXPECT_EQ(s.m2, 0.0);
  EXPECT_EQ(s.count, 2000);
  EXPECT_EQ(*s.minimum(), 0.1);
  EXPECT_EQ(*s.maximum(), 0.1);
}

// A first value far from the rest (a warm-up call of 30 s before 100,000 of 50 us) costs the
// mean nothing: each difference from it is taken exactly. And weights past 2^53 units (104 days
// of ns), which one double would round, still give the spread. References in 113-bit floats.
TEST(WeightedSums, KeepTheirAccuracyFarFromTheFirstValueAndPast2To53Units) {
  pp::WeightedSums durations;
  durations.add(30.0, 1, 1);
  __float128 total = 30.0;
  for (int i = 0; i < 100000; ++i) {
    const double x = 50e-6 * (1 + (i % 7) * 1e-3);
    durations.add(x, 1, 1);
    total += x;
  }
  const MeanState d = durations.state(1.0);
  const __float128 mean = total / 100001;
  const __float128 error = (static_cast<__float128>(d.mean) + d.mean_low - mean) / mean;
  EXPECT_LT(static_cast<double>(error < 0 ? -error : error), 1e-25);
  EXPECT_EQ(d.weight, 100001.0);

  pp::WeightedSums long_weights;
  long_weights.add(1.0, 1, 1);
  long_weights.add(0.0, (int64_t{1} << 53) + 2, 1);
  const MeanState w = long_weights.state(1.0);
  // Weights 1 and W = 2^53 + 2: the mean is 1 / (W + 1), M2 = W / (W + 1).
  const __float128 big = static_cast<__float128>((int64_t{1} << 53) + 2);
  EXPECT_NEAR(w.m2, static_cast<double>(big / (big + 1)), 1e-15);
  EXPECT_NEAR(*w.value(), static_cast<double>(1 / (big + 1)), 1e-30);
}

TEST(WeightedSums, OverflowIsAnErrorThatLeavesTheSumsAsTheyWere) {
  pp::WeightedSums units;
  units.add(1.0, INT64_MAX - 1, 1);
  try {
    units.add(2.0, 2, 1);
    ADD_FAILURE() << "no error";
  } catch (const pp::Error& e) {
    EXPECT_STREQ(e.what(), "the state would overflow: a weight sum past 2^63 - 1 units; split the data into "
                           "smaller groups");
  }
  EXPECT_EQ(units.state(1.0).count, 1);
  EXPECT_EQ(*units.state(1.0).maximum(), 1.0);
  pp::WeightedSums spread;
  spread.add(-1e308, 1'000'000'000, 1);
  spread.add(1e308, 1'000'000'000, 1);
  EXPECT_THROW(spread.state(1e9), pp::Error);
}

// two_prod's error term is exact, as the fused multiply-add's, whichever way it is computed:
// split into halves where the operands allow, fused past 2^995.
TEST(DoubleDouble, TwoProdGivesTheProductsExactError) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-300, 1000);
  for (int i = 0; i < 100000; ++i) {
    const double a = std::ldexp(mantissa(rng), exponent(rng) % 1000);
    const double b = std::ldexp(mantissa(rng), i % 2 ? exponent(rng) % 1000 : -exponent(rng) % 300);
    const pp::DoubleDouble p = pp::two_prod(a, b);
    if (!std::isfinite(p.hi)) continue;
    ASSERT_EQ(p.hi, a * b) << a << " * " << b;
    ASSERT_EQ(p.lo, std::fma(a, b, -p.hi)) << a << " * " << b;
  }
}
