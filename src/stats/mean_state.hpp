// Incremental means that can be stored and merged without history (paper §III.B, "incremental
// means"): the state of a set of (value, weight) observations, and the pure arithmetic on it.
// No SQLite here; src/stats/mean_functions.cpp turns it into pp_mean, pp_mean_merge and the readers.
//
// The state holds count, weight sum, mean, M2 (sum of w * (x - mean)^2), min and max:
//   add       West's weighted form of Welford's update (D. H. D. West, CACM 22(9), 1979);
//   merge     Chan, Golub and LeVeque's pairwise combination, so the state of any partition of
//             the data, merged in any order, is the state of the whole (up to rounding);
//   unmerge   the exact inverse of merge, used by sliding window frames (xInverse).
// Unweighted data is the case w = 1, so the weight sum then equals the count exactly.
//
// The mean is carried as an unevaluated sum of two doubles (mean + mean_low, "double-double"):
// with values offset far from zero (1e6 +- 1) one ulp of the mean is 1e-10, and a merge squares
// the difference of two means, so a plain double mean would cost the stddev of merged states
// about 1e-11 of relative accuracy; the low part keeps it near 1e-16.
//
// min and max cannot be un-folded: once a sliding frame removes a value that may have been the
// minimum (a value <= min), the minimum is unknown (min_known = false) until the state is empty
// again. Removing a value strictly greater than the minimum keeps it exact. Same for max.
//
// Nor can M2 always be: unmerge subtracts, and after removing values far from the rest the
// difference keeps few of its digits (taking 1e20 out of 1e20, 1, 2, 3 leaves an M2 of 2 from
// terms of 1e40). unmerge bounds the error it adds; once the bound passes kM2LostShare of M2
// the stddev is unknown (m2_lost) until at most one observation is left, never a wrong number.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace pp {

// Trivial, so that zero-filled memory (sqlite3_aggregate_context) is the empty state.
struct MeanState {
  int64_t count;    // observations folded in
  double weight;    // sum of their weights (== count when unweighted): weight + weight_low
  double weight_low;  // its low-order part (in memory only; a decoded state has 0)
  double mean;      // weighted mean: mean + mean_low
  double mean_low;  // low-order part of the mean, |mean_low| <= ulp(mean) / 2
  double m2;        // sum of w * (x - mean)^2
  double min;       // meaningful only while min_known
  double max;       // meaningful only while max_known
  bool min_known;
  bool max_known;
  // A bound on M2's error from the subtractions of unmerge (in memory only: a decoded state has
  // 0), and whether it passed kM2LostShare of M2 (stored: flag bit 2).
  double m2_error;
  bool m2_lost;
  // A bound on the error of the weight sum (weight + weight_low) from the double-double sums
  // and differences that made it (in memory only: a decoded state's weight is exact, 0). A frame
  // whose weights span too far has it large beside the weight left after a removal: unmerge
  // then refuses (kWeightLostShare) instead of dividing by a sum rounding has made meaningless.
  double weight_error;

  bool empty() const { return count == 0; }

  // The state of the single observation x with weight w (w > 0, both finite).
  static MeanState of(double x, double w = 1.0);

  // Folds in one observation (x finite, w finite and > 0).
  void add(double x, double w = 1.0);
  // Removes one observation that was added before (the inverse of add).
  void remove(double x, double w = 1.0);
  // Folds in every observation of other. Throws pp::Error, leaving the state unchanged, when
  // the result would not be finite (weight sum or M2 past 1.8e308) or the count would pass 2^63 - 1.
  void merge(const MeanState& other);
  // Removes the observations of part, which must all have been folded in before.
  // Throws std::logic_error when part is larger than this state, and pp::Error when removing it
  // leaves a weight sum whose error bound passes kWeightLostShare of it (weights within the
  // state more than about 1e25 apart), where the mean of the rest would keep too few digits.
  void unmerge(const MeanState& part);

  // Mean, or nullopt when empty.
  std::optional<double> value() const;
  // Standard deviation with frequency weights: sqrt(M2 / (W - 1)), each unit of weight being one
  // observation; for unweighted data the usual sample standard deviation. nullopt when W <= 1
  // or M2 is lost.
  std::optional<double> stddev() const;
  std::optional<double> minimum() const;
  std::optional<double> maximum() const;

  // Keeps the mean within [min, max] where both are known: rounding must not put a mean of
  // equal values (or of values near one bound) outside the values themselves.
  void clamp_mean();
};

// M2's error bound, as a share of M2, past which the stddev is not known: it then keeps fewer
// than about six significant digits. (A sliding frame of values from one distribution adds
// some 1e-15 a removal, so only a frame past a billion rows would come near it.)
constexpr double kM2LostShare = 1e-6;

// The weight sum's error bound, as a share of the weight left after a removal, past which
// unmerge refuses: the rest's mean is then the whole's less the removed part's share of it
// multiplied by (removed weight / weight left), and its digits go as its weight's. A bound of
// 2^-104 (a double-double sum's rounding) of the largest sum held reaches 1e-6 of the weight
// left when the two are about 1e25 apart (taking 1e20 out of (1e20, 1.5, 1.5) keeps the 3 to
// 1e-11, and the mean of the rest to about as much).
constexpr double kWeightLostShare = 1e-6;
// A bound on the relative rounding of one double-double sum or difference of weights.
constexpr double kDoubleDoubleRounding = 0x1p-104;

// The stored form (all little-endian, 60 bytes):
//   0  2 bytes  magic "pm"
//   2  1 byte   version: 1, or 2 for a state whose M2 is lost (its only difference: flag bit 2)
//   3  1 byte   flags: bit 0 min known, bit 1 max known, bit 2 (version 2 only) M2 lost; other bits 0
//   4  int64    count
//  12  double   weight sum
//  20  double   mean (high part)
//  28  double   mean (low part)
//  36  double   M2 (0 when lost)
//  44  double   min (0 when not known)
//  52  double   max (0 when not known)
constexpr size_t kMeanStateBytes = 60;
constexpr unsigned char kMeanStateVersion = 1;
constexpr unsigned char kMeanStateM2LostVersion = 2;

std::string encode_mean_state(const MeanState& state);

// Throws pp::Error "the state would overflow: WHAT; split the data into smaller groups", the
// error of every state whose sums would pass what they can hold.
[[noreturn]] void throw_state_overflow(const char* what);
// nullopt unless bytes is a well-formed version-1 or version-2 state.
std::optional<MeanState> decode_mean_state(const void* bytes, size_t size);

}  // namespace pp
