// Where the align step (align_samples.cpp) cuts a GPU's stored times into stretches, each of
// which gets one offset: stretches of at least alignment_segment_seconds and 100 windows, cut
// where the GPU's windows start or stop holding layers' calls, so that a job's last seconds are
// aligned with the windows before them, and the idle GPU's windows after a job make a stretch
// without layers of their own.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "attribution/alignment_data.hpp"

namespace pp {

// Per stored time of data: whether its window may hold a layer's call, from the last one stored
// before a job's first call through the second window stored after its last call and lag_ns
// (max_sample_lag_ms: the window that holds that call is stored by then).
std::vector<char> may_hold_layers(const GpuSampleData& data, const GpuEventExtent& extent, double lag_ns);

// One past the last stored time of the stretch that starts at `first`, of the stored times up
// to limit (ms): at least segment_ms and 100 windows; the rest up to where with_layers (per
// stored time, may_hold_layers) changes, or up to a gap of gap_ms or more between stored times
// (an exporter restarted: the windows after it lie on a new grid), makes a stretch of its own
// once it is all in, and joins this one where shorter than half that. `first` where what the
// stretch needs is not all in yet.
size_t segment_end(const GpuSampleData& data, const std::vector<char>& with_layers, size_t first, int64_t limit,
                   int64_t segment_ms, int64_t gap_ms);

// The gap between stored times that ends a stretch (segment_end): kRestartGapNs, and
// kGapSpacings of the median spacing of the stored times.
int64_t restart_gap_ms(const GpuSampleData& data);

}  // namespace pp
