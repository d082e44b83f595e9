// The overlap means of one GPU's timeline: per (job, layer, direction) and metric, the pp_mean
// state of the values of the windows its calls overlap, weighted by the overlap; and per (job,
// layer, direction) the state of its unfolded calls' durations. What pp_overlap_means returns
// (overlap_tables.cpp) and the fold adds to layer_state (fold.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attribution/gpu_timeline.hpp"

namespace pp {

struct OverlapMeanRow {
  static constexpr uint32_t kDurations = UINT32_MAX;  // series of a group's durations row
  uint32_t group;
  uint32_t series;                   // index into GpuTimeline::series, or kDurations
  std::optional<std::string> state;  // encoded MeanState; nullopt: every value NULL
};

struct OverlapMeans {
  std::vector<OverlapMeanRow> rows;  // by group, then series, the durations last
  int64_t windows = 0;               // distinct sample times of the GPU (0 without rows)
};

// Sweeps the series on up to `threads` threads (the calling one among them). poll is called on
// the calling thread every so many pairs and may throw to stop (an interrupt): the other
// threads then stop too. A value that is not finite is an error, as in pp_mean (the reader,
// read_gpu_timeline, gives none: it reads such values as NULL).
OverlapMeans overlap_means(const GpuTimeline& gpu, size_t threads, const std::function<void()>& poll = {});

}  // namespace pp
