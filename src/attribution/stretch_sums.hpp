// Exact running sums over a GPU's stretches of pp_alignment (the table pp_alignment_sums), so
// that the estimator's timing shift (timing_shift.hpp) combines a job's stretches without
// reading each: the stretches wholly inside a job's span weigh their length plus one reach, so
// their part is a difference of two of these prefixes. In integers (timing_ns and the stretch
// lengths in ms are whole), so that the difference is exact: in doubles a job of small timings
// after a history of large ones lost digits, and the estimates of a sequence of refreshes
// drifted from one refresh's.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/sqlite_api.hpp"

namespace pp {

using Uint128 = unsigned __int128;

// An unsigned 256-bit sum, for the squares of weighted timings ((w t)^2 reaches 2^228 at the
// largest lengths and timings pp_alignment may hold).
class Uint256 {
 public:
  void add(Uint128 value);
  void add_product(Uint128 a, Uint128 b);  // a * b, exactly
  // The same value gives the same double: every path that sums a job's stretches exactly
  // converts once, here.
  double to_double() const;
  bool operator==(const Uint256& o) const;

 private:
  uint64_t limbs_[4] = {0, 0, 0, 0};  // least significant first
  void add_at(size_t limb, uint64_t value);
};
double to_double(Uint128 value);

// A timing as a whole number of ns, as the align step writes it; nullopt where it is not (a
// row edited by hand).
constexpr int64_t kMostSummedTimingNs = 1000000000000000;  // 1e15, as pp_alignment's timings are bounded
inline std::optional<int64_t> whole_ns(double ns) {
  if (!(ns >= 0 && ns <= static_cast<double>(kMostSummedTimingNs)) ||
      ns != static_cast<double>(static_cast<int64_t>(ns)))
    return std::nullopt;
  return static_cast<int64_t>(ns);
}

// The timing sums of one grid (DCGM's: timing_ns; the driver's: util_timing_ns) over stretches
// of lengths A ms (through_ms - from_ms) and timings t ns.
struct GridSums {
  Uint128 t2 = 0, at2 = 0, a2t2 = 0;  // sum t^2, sum A t^2, sum A^2 t^2
};

// The sums over a GPU's stretches that have layers, in from_ms order, up to and including one:
// a row of pp_alignment_sums.
struct StretchSums {
  int64_t stretches = 0;
  int64_t length_ms = 0;  // sum A
  GridSums dcgm, driver;
  int64_t longest_ns = 0;    // the largest timing of either grid
  int64_t kept_windows = 0;  // stretches whose window_ms or util_window_ms is not NULL
  int64_t first_end_ns = 0, last_end_ns = 0;  // the last stretch's window ends
};

// The sums with one more stretch; nullopt where a sum would pass 2^128 (or the count 2^63).
std::optional<StretchSums> with_stretch(const StretchSums& sums, int64_t length_ms, int64_t timing_ns,
                                        int64_t util_timing_ns, bool kept_windows);
// later less earlier: the sums over the stretches after earlier's through later's.
StretchSums sums_between(const StretchSums& earlier, const StretchSums& later);
// Which sum (0-2 t2, at2, a2t2 of DCGM's grid, 3-5 the driver's) passes what its stretches
// could sum to (each timing at most kMostSummedTimingNs, each length at most their sum); -1
// where none does.
int sum_out_of_bounds(const StretchSums& sums);
// Whether later can be the sums of a GPU at a later stretch than earlier: every sum and count
// at least earlier's, and their difference within bounds. Rows of pp_alignment_sums edited by
// hand may not be; their difference would wrap past 2^128 and give another timing.
bool sums_follow(const StretchSums& earlier, const StretchSums& later);

// Whether the main database has pp_alignment_sums: one an earlier version made has not until
// pp_install_views or pp_refresh runs on it (never, opened read-only).
bool has_alignment_sums(sqlite3* db);

// The row of pp_alignment_sums of the GPU's last stretch with sums, or of the stretch before
// from_ms (nullopt: none; zero sums are the sums before the first stretch). A row the align
// step cannot have written (edited by hand: a BLOB not of 16 bytes, a count below one, text) is
// an error that names it and its column.
struct StoredSums {
  int64_t from_ms;
  StretchSums sums;
};
std::optional<StoredSums> last_stored_sums(sqlite3* db, const std::string& uuid);
std::optional<StoredSums> stored_sums_before(sqlite3* db, const std::string& uuid, int64_t from_ms);
// The sums of the first stretch whose last window end is after ns (by pp_alignment_sums_by_end;
// meaningful where the ends are in order, as every stretch with sums has them).
std::optional<StoredSums> first_stored_sums_ending_after(sqlite3* db, const std::string& uuid, int64_t ns);
// The sums of the first stretch with from_ms at or after ms.
std::optional<StoredSums> first_stored_sums_from(sqlite3* db, const std::string& uuid, int64_t ms);

// The align step, after writing a GPU's stretches: sums for its stretches after the last that
// has them, in from_ms order, while each is what the align step writes (whole timings within
// 1e15 ns, window ends in 1970-2116, ends in order) and the sums fit. pp_alignment's triggers
// delete a GPU's sums from any row written otherwise (or updated) on, so they are computed
// again from there; a stretch no sums can hold leaves it and every later one without, and the
// estimator reads those one by one.
void extend_alignment_sums(sqlite3* db, const std::string& uuid);

}  // namespace pp
