// Windows that flicker at the exporter's latency (alignment.cpp, estimate_offset).
//
// Where the offset hovers near the exporter's latency, each scrape takes either the newest DCGM
// window ("near") or, when the exporter's latency that time exceeds how long ago the window
// ended, the one before ("far"). Scraping at DCGM's period, that pattern leaves a trace: a near
// window followed by a far one is the same window twice (a copy), a far one followed by a near
// one skips a window. So between copies the samples run far ... far, near ... near, and the
// sample before a copy is near. flicker_path finds the pattern of that shape that fits best.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "attribution/alignment.hpp"

namespace pp {

// Whether consecutive stored times are mostly one period apart (scraped at DCGM's period).
bool at_period(const std::vector<int64_t>& ts, double period);

// The samples that `drop` does not mark, and their shifts.
AlignmentSamples without(const AlignmentSamples& s, const std::vector<char>& drop);
std::vector<int> without(const std::vector<int>& shift, const std::vector<char>& drop);

// A near/far pattern: per sample its shift, and whether it is a copy of the sample before.
struct Flicker {
  std::vector<int> shift;
  std::vector<char> copy;
};

// The near/far pattern (shift lo or lo + 1 per sample) of least total misfit (misfit[state][i]:
// sample i's chi-square at shift lo + state) in which windows stay in order (so a near-to-far
// change happens only across a copy, s.copy_after), a copy's original being near unless its
// values strongly say otherwise: a two-state Viterbi path. A sample that reads exactly as the
// one before with every fitted metric 0 (maybe_copy: an idle GPU's windows look alike, so the
// align step keeps it) may be taken as its copy, at a small cost. Where the values cannot tell
// (an idle GPU), a sample stays in the window its stored time says. Empty if none.
Flicker flicker_path(const AlignmentSamples& s, const std::vector<char>& maybe_copy,
                     const std::array<std::vector<double>, 2>& misfit, int lo, double period);

}  // namespace pp
