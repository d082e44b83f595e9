// How a GPU's offset moves from stretch to stretch (align_samples.cpp): the clocks of DCGM and
// Prometheus run a few ppm apart, so the offset drifts, and each stretch is searched, or placed
// without a search, near where the stretches before it predict.
#pragma once
#include <vector>

#include "attribution/alignment_data.hpp"

namespace pp {

// The most a drift is taken to be, either way (ppm).
constexpr double kMaxDriftPpm = 5000;

// The middle of a stretch's stored times, in ns.
double mid_ns(const SegmentRecord& s);

// The drift of the offset in ppm, from the last estimated segments (wraps by a window unwound).
double drift_ppm(const std::vector<SegmentRecord>& segments, double window_ns);

// A stretch's offset carried to at_ns by its drift.
double offset_at(const SegmentRecord& s, double at_ns);

// Two estimated stretches among these: with the next one, three points to fit the drift to.
bool drift_established(const std::vector<SegmentRecord>& segments);

}  // namespace pp
