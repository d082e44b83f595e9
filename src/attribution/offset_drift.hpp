// How a GPU's offset moves from stretch to stretch (align_samples.cpp): the clocks of DCGM and
// Prometheus run a few ppm apart, so the offset drifts, and each stretch is searched, or placed
// without a search, near where the stretches before it predict. A restarted dcgm-exporter (a
// pod rescheduled, a crash loop, an upgrade: in its default embedded mode it runs DCGM's host
// engine itself) stores nothing for a few seconds, then DCGM's windows lie on a new grid: the
// offset steps by anything within a window. That step is no drift (nor is one the exporter's
// latency makes, without a gap, further than the follow search reaches): the drift is fitted
// only to the stretches after the newest step, and the stretch after a gap is searched in full.
#pragma once
#include <vector>

#include "attribution/alignment_data.hpp"

namespace pp {

// The most a drift is taken to be, either way (ppm).
constexpr double kMaxDriftPpm = 5000;

// No sample stored for this long, and for kGapSpacings of the stretch's own spacings: the
// exporter (or Prometheus) was down, and may have come back on a new grid. Prometheus missing a
// scrape or two leaves gaps of two or three spacings; a restart takes seconds.
constexpr double kRestartGapNs = 1e9;
constexpr double kGapSpacings = 5;

// Later stretches are searched this far around the offset the drift predicts (align_samples.cpp);
// an offset further from it than this, where no gap is, is a step too (an exporter's latency
// that changed): no drift moves the offset so far between two stretches.
constexpr double kFollowReachNs = 6e6;

// The middle of a stretch's stored times, in ns.
double mid_ns(const SegmentRecord& s);

// Whether no sample was stored for a while before the stretch's first one (kRestartGapNs).
bool after_gap(const SegmentRecord& s);

// Whether a stretch's offset lies where the one before (from) with its drift does not put it,
// a wrap by one window aside: by more than 3 ms and three times their timings together.
bool offset_unexplained(const SegmentRecord& from, const SegmentRecord& to, double window_ns);

// Whether `to` stepped from `from` (estimated stretches, from before to): an offset the drift
// does not explain, with a gap in the stretches after from up to to, or further than
// kFollowReachNs from where from puts it. segments holds both.
bool stepped(const std::vector<SegmentRecord>& segments, size_t from, size_t to, double window_ns);

// The drift of the offset in ppm, from the last estimated segments after the newest step (wraps
// by a window unwound); with fewer than three of them, the newest segment's (carried over the step).
double drift_ppm(const std::vector<SegmentRecord>& segments, double window_ns);

// A stretch's offset carried to at_ns by its drift.
double offset_at(const SegmentRecord& s, double at_ns);

// Two estimated stretches among these: with the next one, three points to fit the drift to.
bool drift_established(const std::vector<SegmentRecord>& segments);

}  // namespace pp
