#include "attribution/overlap_means.hpp"

#include <atomic>
#include <cmath>
#include <exception>
#include <thread>

#include "attribution/interval_sweep.hpp"
#include "core/errors.hpp"
#include "stats/mean_state.hpp"
#include "stats/weighted_sums.hpp"

namespace pp {

OverlapMeans overlap_means(const GpuTimeline& g, size_t threads, const std::function<void()>& poll) {
  const size_t metrics = g.series.size();
  std::vector<WeightedSums> sums(g.groups.size() * metrics);
  std::vector<char> seen(sums.size(), 0);
  // Series are independent (each writes its own sums), so threads can sweep them at once.
  threads = std::max<size_t>(1, std::min(threads, metrics));
  std::vector<std::exception_ptr> failures(threads);
  std::atomic<bool> stop{false};
  auto work = [&](size_t first) {
    try {
      // A window's calls of one layer share its value: their weights are summed and the value
      // added once with that weight and their count (the same mean and spread as adding each,
      // at a fraction of the cost). The additions are still most of the sweep's work, so they go
      // to WeightedSums, without the two divisions of merging a MeanState for each.
      struct Pending {
        uint32_t group;
        int64_t weight, count;
      };
      // This thread's series (first, first + threads, ...); those with the same windows (a
      // GPU's PROF metrics) are swept once, each window's calls going to every series of the
      // class with that series' value.
      const WindowClasses classes = window_classes(g, first, threads);
      std::vector<Pending> pending;
      std::vector<uint32_t> slot(g.groups.size(), UINT32_MAX);  // group -> its index in pending
      const TimelineSample* current = nullptr;  // the swept series' sample whose calls are pending
      size_t current_series = 0;
      uint32_t pairs = 0;
      const auto flush = [&] {
        if (!current) return;
        const auto k = static_cast<size_t>(current - g.series[current_series].samples.data());
        for (size_t si : classes.class_of[current_series]) {
          const TimelineSample& sample = g.series[si].samples[k];
          if (sample.null) continue;
          if (!std::isfinite(sample.value))
            throw Error("value of " + g.series[si].metric + " at ts_ms " + std::to_string(sample.ts_ms) +
                        " is not finite (pp_mean takes finite values)");
          for (const Pending& p : pending) sums[p.group * metrics + si].add(sample.value, p.weight, p.count);
        }
        for (const Pending& p : pending) slot[p.group] = UINT32_MAX;
        pending.clear();
      };
      sweep_overlaps_of(g, classes.swept, [&](int64_t, uint32_t group, size_t series, const TimelineSample& sample, int64_t weight) {
        if (++pairs % 65536 == 0) {
          if (first == 0 && poll) {
            poll();  // (a throw stops the other threads: the catch below sets stop)
          } else if (stop.load(std::memory_order_relaxed)) {
            throw InterruptedError();
          }
        }
        for (size_t si : classes.class_of[series]) seen[group * metrics + si] = 1;
        if (&sample != current) {
          flush();
          current = &sample;
          current_series = series;
        }
        uint32_t& at = slot[group];
        if (at == UINT32_MAX) {
          at = static_cast<uint32_t>(pending.size());
          pending.push_back({group, weight, 1});
        } else {
          pending[at].weight += weight;
          ++pending[at].count;
        }
      });
      flush();
    } catch (...) {
      stop = true;
      failures[first] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(work, t);
  work(0);
  for (auto& w : workers) w.join();
  for (const auto& failure : failures)
    if (failure) std::rethrow_exception(failure);
  OverlapMeans out;
  for (uint32_t group = 0; group < g.groups.size(); ++group) {
    for (uint32_t m = 0; m < metrics; ++m)
      if (seen[group * metrics + m]) {
        const WeightedSums& s = sums[group * metrics + m];  // weights in ns, states in seconds
        out.rows.push_back({group, m, s.empty() ? std::nullopt : std::optional(encode_mean_state(s.state(1e9)))});
      }
    if (!g.durations[group].empty())
      out.rows.push_back({group, OverlapMeanRow::kDurations, encode_mean_state(g.durations[group].state(1.0))});
  }
  out.windows = out.rows.empty() ? 0 : g.windows();
  return out;
}

}  // namespace pp
