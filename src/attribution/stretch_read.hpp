// Reading a GPU's stretches of pp_alignment for the estimator's timing shift (timing_shift.hpp):
// every one, or, for a read of its newest windows, only what those need, so that a refresh's
// cost does not grow with the GPU's history: the stretches near the windows and at each job's
// start one by one, and the rest from the running sums of pp_alignment_sums (stretch_sums.hpp).
// Both give place_timing the same shifts to the bit.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attribution/stretch_sums.hpp"
#include "attribution/timing_shift.hpp"
#include "core/statement.hpp"

namespace pp {

// The columns of pp_alignment stretch_of_row reads, in its order.
extern const char* const kStretchColumns;
// A row of them (named in errors as of GPU uuid at from_ms N), refused where no alignment writes
// it: text or a BLOB read as 0, and windows moved by an infinite or out-of-range shift (whose
// rounding is undefined) left every read without a row.
StretchTiming stretch_of_row(const Statement& read, const std::string& uuid);
// Its length in whole ms (through_ms - from_ms: the offset cancels).
inline int64_t length_ms(const StretchTiming& s) { return (s.last_end_ns - s.first_end_ns) / 1000000; }

// Every stretch of the GPU that has layers, in time order.
KnownStretches read_stretches(sqlite3* db, const std::string& uuid);

// What a read of a GPU's windows needs of its stretches, in three steps on the connection's
// thread, each as much as the read knows by then; anything the sums do not cover exactly reads
// every stretch: a row edited by hand after the align step (a timing not whole, ends out of
// order), or a window length kept inside a job's span (as the align step keeps one where the
// data had not told it, in every stretch with sample_offset_ms set and no length given).
class StretchReader {
 public:
  // Before the windows are read: the sums of the GPU's stretches and the stretches after them
  // (every stretch where the database has no pp_alignment_sums yet).
  StretchReader(sqlite3* db, std::string uuid);
  // The largest timing of any stretch (ns).
  double largest_timing_ns() const { return largest_timing_ns_; }
  // Once the windows are read: the stretches a window can be moved by, one by one. lowest_ns:
  // the earliest any window reaches, moved as far as any stretch moves it (every job whose
  // span ends by then is out of the windows' reach); earliest_ts_ms: the earliest stored time
  // of a window (nullopt: none), whose horizon (horizon_ms) takes every stretch before them.
  void read_newest(int64_t lowest_ns, std::optional<int64_t> earliest_ts_ms, int64_t horizon_ms);
  // Once the jobs' spans are known: the first stretches of each job whose span begins before
  // those (from_data: per series, whether its window length is the data's).
  void read_job_starts(const GpuTimeline& gpu, const std::vector<bool>& from_data);
  KnownStretches take() { return std::move(known_); }

 private:
  // Every stretch after `after` (nullopt: every one).
  std::vector<StretchTiming> stretches_after(std::optional<int64_t> after_ms) const;
  bool in_order(const std::vector<StretchTiming>& stretches, const StretchSums& before) const;
  void read_every_stretch();

  sqlite3* db_;
  std::string uuid_;
  std::optional<StoredSums> last_;         // the GPU's last stretch with sums
  std::vector<StretchTiming> unsummed_;    // the stretches after it
  double largest_timing_ns_ = 0;
  int64_t lowest_ns_ = INT64_MAX;
  KnownStretches known_;
  bool every_stretch_ = false;
};

}  // namespace pp
