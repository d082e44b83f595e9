// The interval join of the attribution engine as a pure function: a sweep over one GPU's
// time-sorted events and samples (gpu_timeline.hpp), never a nested loop.
//
// A sample whose window ends at end_ns covers [start, end) = [end_ns - window, end_ns) in
// integer ns (window: TimelineSeries::window_of the sample). An event overlaps it when t_start_ns < end and t_end_ns > start, with weight =
// min(t_end_ns, end) - max(t_start_ns, start): exact integers. The part of a window inside a
// job's span on the GPU (its first event's start to its last event's end) that no event covers
// is the job's untracked time: max(0, span overlap - sum of the weights in the window). Where
// jobs share the GPU, every job's events inside the span count (clipped to it), so one job's
// layers are never another job's untracked time; alone on the GPU, only its own events are
// there. A sample of an instant metric is the moment end_ns, known to within kInstantSpreadNs:
// the events running in that spread (or the job's untracked time) share the weight of one window.
//
// Cost O(events + samples + pairs) per series: events enter an active list when they start
// before a window's end and leave it for good once they end before the earliest start a later
// window can have (its end less the series' longest window; ends only grow within a series).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "attribution/gpu_timeline.hpp"

namespace pp {

inline int64_t scaled(int64_t weight, double scale) {
  return scale == 1.0 ? weight : static_cast<int64_t>(std::llround(static_cast<double>(weight) * scale));
}

// Whether the sweep gives series a and b the same rows (but for the series): their samples'
// windows are the same (usually every PROF metric of a GPU, scraped together).
inline bool same_windows(const TimelineSeries& a, const TimelineSeries& b) {
  if ((a.kind == TimelineSeries::kInstant) != (b.kind == TimelineSeries::kInstant) || a.samples.size() != b.samples.size())
    return false;
  for (size_t k = 0; k < a.samples.size(); ++k)
    if (a.samples[k].end_ns != b.samples[k].end_ns ||
        std::llround(a.window_of(a.samples[k])) != std::llround(b.window_of(b.samples[k])))
      return false;
  return true;
}

// Series first, first + stride, ... grouped by same_windows: `swept` lists the first series of
// each class, class_of[that series] every series of its class (the sweep of the first gives
// the rows of all).
struct WindowClasses {
  std::vector<size_t> swept;
  std::vector<std::vector<size_t>> class_of;
};
inline WindowClasses window_classes(const GpuTimeline& gpu, size_t first = 0, size_t stride = 1) {
  WindowClasses out;
  out.class_of.resize(gpu.series.size());
  for (size_t si = first; si < gpu.series.size(); si += stride) {
    const auto same = std::find_if(out.swept.begin(), out.swept.end(),
                                   [&](size_t one) { return same_windows(gpu.series[one], gpu.series[si]); });
    out.class_of[same == out.swept.end() ? si : *same].push_back(si);
    if (same == out.swept.end()) out.swept.push_back(si);
  }
  return out;
}

// Calls emit(event index or -1 for untracked, group, series, sample, weight_ns) for every row
// of pp_overlaps of the series listed, series by series, samples in time order.
template <class Emit>
void sweep_overlaps_of(const GpuTimeline& gpu, const std::vector<size_t>& which, Emit&& emit);

// The same for every series, or for series first_series, first_series + stride, ...: so that
// threads can share a GPU's series.
template <class Emit>
void sweep_overlaps(const GpuTimeline& gpu, Emit&& emit, size_t first_series = 0, size_t stride = 1) {
  std::vector<size_t> which;
  for (size_t si = first_series; si < gpu.series.size(); si += stride) which.push_back(si);
  sweep_overlaps_of(gpu, which, std::forward<Emit>(emit));
}

template <class Emit>
void sweep_overlaps_of(const GpuTimeline& gpu, const std::vector<size_t>& which, Emit&& emit) {
  const auto& events = gpu.events;
  std::vector<int64_t> covered(gpu.jobs.size(), 0);
  std::vector<uint32_t> touched;
  // Jobs by span start, for an active list of jobs as for events.
  std::vector<uint32_t> jobs_by_first(gpu.jobs.size());
  for (uint32_t j = 0; j < jobs_by_first.size(); ++j) jobs_by_first[j] = j;
  std::sort(jobs_by_first.begin(), jobs_by_first.end(),
            [&](uint32_t a, uint32_t b) { return gpu.jobs[a].first < gpu.jobs[b].first; });
  std::vector<size_t> active;
  std::vector<uint32_t> active_jobs, jobs_here;
  for (size_t si : which) {
    const TimelineSeries& series = gpu.series[si];
    const bool instant = series.kind == TimelineSeries::kInstant;
    // An instant is spread over kInstantSpreadNs around end_ns, weighed as one window in all.
    const int64_t half = kInstantSpreadNs / 2;
    // No sample's span begins further before its end than this (ends ascend, so what ends
    // before one sample's end less it ends before every later sample's span).
    const int64_t reach = instant ? half : series.longest_window_ns();
    active.clear();
    active_jobs.clear();
    size_t next = 0, next_job = 0;
    for (const TimelineSample& sample : series.samples) {
      const int64_t window = static_cast<int64_t>(std::llround(series.window_of(sample)));
      const double scale = instant ? static_cast<double>(std::max<int64_t>(window, 1)) / kInstantSpreadNs : 1.0;
      const int64_t start = instant ? sample.end_ns - half : sample.end_ns - window;
      const int64_t end = instant ? sample.end_ns + half : sample.end_ns;
      const int64_t earliest = sample.end_ns - reach;
      while (next < events.size() && events[next].start < end) active.push_back(next++);
      size_t kept = 0;
      for (size_t i : active) {
        const TimelineEvent& e = events[i];
        if (e.end <= earliest) continue;  // ended before this window, and before every later one
        active[kept++] = i;
        if (e.end <= start) continue;  // (a window shorter than the series' longest)
        // It started before this window's end: it overlaps.
        const int64_t weight = std::min(e.end, end) - std::max(e.start, start);
        if (covered[e.job] == 0) touched.push_back(e.job);
        covered[e.job] += weight;  // zero-length or inverted events count as in SQL
        if (weight > 0) emit(static_cast<int64_t>(i), e.group, si, sample, scaled(weight, scale));
      }
      active.resize(kept);
      while (next_job < jobs_by_first.size() && gpu.jobs[jobs_by_first[next_job]].first < end)
        active_jobs.push_back(jobs_by_first[next_job++]);
      kept = 0;
      jobs_here.clear();
      for (uint32_t j : active_jobs) {
        if (gpu.jobs[j].last <= earliest) continue;
        active_jobs[kept++] = j;
        if (gpu.jobs[j].last > start) jobs_here.push_back(j);
      }
      active_jobs.resize(kept);
      for (uint32_t j : jobs_here) {
        const TimelineJob& job = gpu.jobs[j];
        const int64_t from = std::max(start, job.first), to = std::min(end, job.last);
        int64_t in_span = covered[j];
        if (jobs_here.size() > 1) {  // a shared GPU: every job's events within this job's span
          in_span = 0;
          for (size_t i : active) {
            const TimelineEvent& e = events[i];
            if (e.end <= start) continue;
            if (e.job == j)
              in_span += std::min(e.end, end) - std::max(e.start, start);
            else
              in_span += std::max<int64_t>(0, std::min(e.end, to) - std::max(e.start, from));
          }
        }
        const int64_t untracked = std::max<int64_t>(0, to - from - in_span);
        if (untracked > 0) emit(-1, job.untracked_group, si, sample, scaled(untracked, scale));
      }
      for (uint32_t j : touched) covered[j] = 0;
      touched.clear();
    }
  }
}

}  // namespace pp
