// The straight grid DCGM polls on. DCGM polls on a regular grid (its period plus a steady
// lateness), while a stored time carries the scrape's own jitter (its lateness, the truncation to
// ms): the alignment puts the windows it places on the grid fitted to them.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace pp {

// Puts ends (ascending, one per window, placed by an offset) on the straight grid fitted to
// them; false, untouched, where they do not lie on one (two in one step, or a period more than
// 1% off window_ns). The grid's period is window_ns unless the slopes of pairs of ends half the
// stretch apart (robust to the scrapes' one-sided lateness) put another three standard errors
// from it; an end further than 0.45 of a period from the grid is left where it is.
bool snap_to_grid(std::vector<int64_t>& ends_ns, double window_ns);

// snap_to_grid for an offset search, which snaps hundreds of sets of ends, most of them a set it
// snapped before moved as a whole by whole ns (another offset, the same shifts): snap_to_grid
// reads only the ends' differences, so such a set is snapped as that one was, moved alike,
// without fitting its grid again. Keeps the last few sets.
class GridSnaps {
 public:
  bool operator()(std::vector<int64_t>& ends_ns, double window_ns);

 private:
  struct Snapped {
    double window_ns = 0;
    std::vector<int64_t> ends, snapped;  // as given, and as snapped (where on_grid)
    bool on_grid = false;
  };
  // Moves ends_ns as `s` was snapped, where they are its ends moved as a whole (false: not so).
  static bool snap_as(const Snapped& s, std::vector<int64_t>& ends_ns, double window_ns);
  std::array<Snapped, 4> kept_;  // the most recently used first
};

// How far ends that lie on no grid spread about one of period window_ns: the shortest arc of
// the period that holds every end's phase (the ends' lateness, where they keep it).
double spread_about_grid(const std::vector<int64_t>& ends_ns, double window_ns);

}  // namespace pp
