// One GPU's events and samples, as the interval sweep (interval_sweep.hpp) reads them: plain
// data, and read_gpu_timeline() that fills it from the attribution tables.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/sqlite_api.hpp"
#include "stats/mean_state.hpp"

namespace pp {

struct TimelineSample {
  int64_t ts_ms;
  double value;
  bool null;
};

// One metric of the GPU: a sample at ts_ms covers the window (ts_ms - interval_ms, ts_ms].
struct TimelineSeries {
  std::string metric;
  int64_t interval_ms;
  std::vector<TimelineSample> samples;  // ts_ms ascending
};

struct TimelineEvent {
  int64_t start, end, id;  // ns; pp_events.id
  uint32_t group, job;
};

// (job_id, layer, forward): the unit of a pp_mean state.
struct TimelineGroup {
  uint32_t job;
  std::string layer;
  int forward;
};

struct TimelineJob {
  std::string job_id;
  int64_t first = 0, last = 0;  // span on this GPU over all its events, ns
  uint32_t untracked_group = 0;  // the group (job, '(untracked)', 0)
};

struct GpuTimeline {
  std::vector<TimelineSeries> series;
  std::vector<TimelineEvent> events;  // those that may overlap a window of the series, by start
  std::vector<TimelineJob> jobs;
  std::vector<TimelineGroup> groups;
  // Per group: the durations of its unfolded events starting by through_ms, and their lowest id.
  std::vector<MeanState> durations;
  std::vector<int64_t> first_id;

  const std::string& job_id(uint32_t group) const { return jobs[groups[group].job].job_id; }
  // Distinct sample timestamps over all series.
  int64_t windows() const;
};

// The GPU's series (pp_intervals; a series without an interval is skipped) with their samples
// in (after_ms, through_ms], and all of its events (pp_events): every one counts for its job's
// span; those that can overlap a window are kept for the sweep; unfolded ones starting by
// through_ms give their durations. Absent bounds are no bound.
GpuTimeline read_gpu_timeline(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                              std::optional<int64_t> through_ms);

}  // namespace pp
