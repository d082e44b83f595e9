#include "attribution/window_spans.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace pp {
namespace {

// Two processes' events that overlap by at most this much hand the GPU over rather than run at
// once: each process turns its CUDA event times into unix time with its own anchor, some tens of
// us apart. (The overlap is then counted twice; the window's fractions are scaled back to 1.)
constexpr int64_t kHandOverNs = 100000;

}  // namespace

WindowSpan span_of(const TimelineSeries& series, const TimelineSample& sample) {
  const bool instant = series.kind == TimelineSeries::kInstant;
  const int64_t half = kInstantSpreadNs / 2, window_int = static_cast<int64_t>(std::llround(series.window_of(sample)));
  return {std::max(series.window_of(sample), 1.0), instant,
          instant ? sample.end_ns - half : sample.end_ns - window_int, instant ? sample.end_ns + half : sample.end_ns,
          instant ? static_cast<double>(std::max<int64_t>(window_int, 1)) / kInstantSpreadNs : 1.0};
}

bool events_ran_at_once(const GpuTimeline& gpu, std::vector<size_t>& events, int64_t start, int64_t end) {
  const auto by_start = [&](size_t a, size_t b) { return gpu.events[a].start < gpu.events[b].start; };
  if (!std::is_sorted(events.begin(), events.end(), by_start)) std::sort(events.begin(), events.end(), by_start);
  int64_t latest_end = start;  // of the events so far, within [start, end)
  for (size_t i : events) {
    const TimelineEvent& e = gpu.events[i];
    const int64_t from = std::max(e.start, start), to = std::min(e.end, end);
    if (to <= from) continue;
    if (std::min(latest_end, to) - from > kHandOverNs) return true;
    latest_end = std::max(latest_end, to);
  }
  return false;
}

int64_t span_union(const GpuTimeline& gpu, const std::vector<uint32_t>& jobs, int64_t start, int64_t end) {
  std::vector<std::pair<int64_t, int64_t>> parts;
  for (uint32_t j : jobs) {
    const int64_t from = std::max(start, gpu.jobs[j].first), to = std::min(end, gpu.jobs[j].last);
    if (to > from) parts.emplace_back(from, to);
  }
  std::sort(parts.begin(), parts.end());
  int64_t total = 0, reached = start;
  for (const auto& [from, to] : parts) {
    if (to <= reached) continue;
    total += to - std::max(from, reached);
    reached = to;
  }
  return total;
}

}  // namespace pp
