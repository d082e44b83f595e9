#include "attribution/align_stretches.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "attribution/offset_drift.hpp"

namespace pp {
namespace {

constexpr double kNsPerMillisecond = 1e6;
constexpr size_t kMinSegmentWindows = 100;
// Windows stored after a job's last call and max_sample_lag_ms (the window that holds that call
// is stored by then; these are the idle GPU's) that its last stretch keeps: against them the
// job's end shows where its windows lie.
constexpr int kIdleWindowsAfterJob = 2;

}  // namespace

// A job's end is the end of a stretch (segment_end): its last seconds are aligned with the
// windows before them, not with the idle GPU's after them, whose stretch has no layers.
std::vector<char> may_hold_layers(const GpuSampleData& data, const GpuEventExtent& extent, double lag_ns) {
  const std::vector<int64_t>& ts = data.ts_ms;
  std::vector<char> with_layers(ts.size(), 0);
  for (const auto& job : extent.jobs) {
    const auto first_ms = static_cast<int64_t>(std::floor(static_cast<double>(job.second.first) / kNsPerMillisecond));
    size_t i = static_cast<size_t>(std::lower_bound(ts.begin(), ts.end(), first_ms) - ts.begin());
    if (i > 0) --i;
    const double idle_after_ms = (static_cast<double>(job.second.last) + lag_ns) / kNsPerMillisecond;
    if (i < ts.size() && static_cast<double>(ts[i]) > idle_after_ms) continue;  // it ended before these
    int idle_windows = 0;
    for (; i < ts.size(); ++i) {
      if (static_cast<double>(ts[i]) > idle_after_ms && !data.is_copy[i] && ++idle_windows > kIdleWindowsAfterJob)
        break;
      with_layers[i] = 1;
    }
  }
  return with_layers;
}

size_t segment_end(const GpuSampleData& data, const std::vector<char>& with_layers, size_t first, int64_t limit,
                   int64_t segment_ms, int64_t gap_ms) {
  const size_t n = data.ts_ms.size();
  size_t stop = first;
  while (stop < n && with_layers[stop] == with_layers[first] &&
         (stop == first || data.ts_ms[stop] - data.ts_ms[stop - 1] < gap_ms))
    ++stop;
  const bool all_in = stop < n ? data.ts_ms[stop] <= limit : limit >= data.ts_ms.back();
  size_t windows = 0, i = first;
  for (; i < stop && data.ts_ms[i] <= limit; ++i) {
    if (!data.is_copy[i]) ++windows;
    if (windows >= kMinSegmentWindows && data.ts_ms[i] - data.ts_ms[first] >= segment_ms) {
      // Leave no stub behind: a short rest joins this segment when it is all in.
      size_t rest = 0;
      for (size_t j = i + 1; j < stop && data.ts_ms[j] <= limit; ++j) rest += !data.is_copy[j];
      if (all_in && rest < kMinSegmentWindows / 2) return stop;
      return i + 1;
    }
  }
  return all_in ? stop : first;
}

int64_t restart_gap_ms(const GpuSampleData& data) {
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < data.ts_ms.size(); ++i) gaps.push_back(data.ts_ms[i] - data.ts_ms[i - 1]);
  int64_t spacing = 0;
  if (!gaps.empty()) {
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
    spacing = gaps[gaps.size() / 2];
  }
  return std::max(static_cast<int64_t>(std::llround(kRestartGapNs / kNsPerMillisecond)),
                  static_cast<int64_t>(std::llround(kGapSpacings * static_cast<double>(spacing))));
}

}  // namespace pp
