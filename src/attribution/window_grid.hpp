// The straight grid DCGM polls on. DCGM polls on a regular grid (its period plus a steady
// lateness), while a stored time carries the scrape's own jitter (its lateness, the truncation to
// ms): the alignment puts the windows it places on the grid fitted to them.
#pragma once
#include <cstdint>
#include <vector>

namespace pp {

// Puts ends (ascending, one per window, placed by an offset) on the straight grid fitted to
// them; false, untouched, where they do not lie on one (two in one step, or a period more than
// 1% off window_ns). The grid's period is window_ns unless the slopes of pairs of ends half the
// stretch apart (robust to the scrapes' one-sided lateness) put another three standard errors
// from it; an end further than 0.45 of a period from the grid is left where it is.
bool snap_to_grid(std::vector<int64_t>& ends_ns, double window_ns);

// How far ends that lie on no grid spread about one of period window_ns: the shortest arc of
// the period that holds every end's phase (the ends' lateness, where they keep it).
double spread_about_grid(const std::vector<int64_t>& ends_ns, double window_ns);

}  // namespace pp
