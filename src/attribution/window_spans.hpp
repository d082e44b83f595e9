// A sample's window as the estimator's rows weigh it (estimator_systems.cpp): the span of time
// it stands for and, for a joint system (jobs that shared the GPU: job_sharing.hpp), how much of
// it its jobs' spans cover and whether two processes ran at once.
#pragma once
#include <cstdint>
#include <vector>

#include "attribution/gpu_timeline.hpp"

namespace pp {

// The span of time a sample stands for, as the sweep took it (interval_sweep.hpp).
struct WindowSpan {
  double window;  // ns, at least 1: what the fractions are of
  bool instant;
  int64_t start, end;
  double scale;  // an instant's spread counts as one window
};

WindowSpan span_of(const TimelineSeries& series, const TimelineSample& sample);

// Whether two events run at the same time (longer than a hand-over) within [start, end): two
// processes at once, of two jobs or of one (the events of one process never overlap: its leaf
// layers run one after another).
bool events_ran_at_once(const GpuTimeline& gpu, std::vector<size_t>& events, int64_t start, int64_t end);

// Length of [start, end) covered by the spans of the given jobs on this GPU.
int64_t span_union(const GpuTimeline& gpu, const std::vector<uint32_t>& jobs, int64_t start, int64_t end);

}  // namespace pp
