// Stored times at several phases of DCGM's period (align_samples.cpp). Prometheus scrapes on an
// interval of its own; where that is no whole multiple of DCGM's period (150 ms against 100 ms),
// successive scrapes fall at different phases of DCGM's grid. Each scrape is served the newest
// window that ended the exporter's latency before it, so the offset from a stored time to its
// window's end is that latency plus how far past a grid point the scrape fell: a different offset
// for each phase (50 ms apart at 150 ms against 100 ms), which no one offset with windows moved by
// whole periods describes. Each stored time moved back to the newest point at or before it of a
// lattice of the period (onto_lattice) takes that phase out: one offset describes every phase
// again, the phases below the lattice's threshold and those above it one period apart. Which
// threshold (between which phases DCGM's grid plus the latency lies) is what the data tell: the
// alignment is fitted with each and the best kept.
#pragma once
#include <cstdint>
#include <vector>

#include "attribution/alignment.hpp"

namespace pp {

// The thresholds worth trying, as phases modulo period_ns (absolute: the same phases give the
// same thresholds in every stretch): the middle of each empty arc between the groups the stored
// times' phases form, a group holding at least a twentieth of them (a scrape late by much is no
// phase of its own). Empty where they form one group, or where their median spacing is a whole
// number of periods (every scrape at one phase; groups apart are the tail of scrapes late by
// tens of ms): one offset describes them as stored.
std::vector<int64_t> phase_thresholds(const std::vector<int64_t>& ts_ns, double period_ns);

// Each time moved back to the newest point at or before it of threshold_ns + k * period_ns.
std::vector<int64_t> onto_lattice(const std::vector<int64_t>& ts_ns, double period_ns, int64_t threshold_ns);

// estimate_offset over the stored times as they are (one phase), or over them put on the lattice
// of each threshold: the best fit, its stored times in `lattice` (empty: as stored). Two lattices
// that fit alike and place the windows apart leave the offset open (not unique).
OffsetEstimate estimate_over_phases(const AlignmentTimeline& timeline, const AlignmentSamples& samples, double window_ns,
                                    const std::vector<OffsetRange>& ranges, double step_ns,
                                    std::vector<int64_t>& lattice);

}  // namespace pp
