#include "attribution/gpu_timeline.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <unordered_map>

#include "core/statement.hpp"

namespace pp {
namespace {

constexpr int64_t kNsPerMs = 1000000;
constexpr const char* kUntracked = "(untracked)";

class TimelineReader {
 public:
  TimelineReader(sqlite3* db, GpuTimeline& gpu) : db_(db), gpu_(gpu) {}

  void read_series(const std::string& uuid, std::optional<int64_t> after_ms, std::optional<int64_t> through_ms) {
    Statement intervals(db_, "SELECT metric, interval_ms FROM main.pp_intervals WHERE uuid = :uuid ORDER BY metric");
    intervals.bind(":uuid", uuid);
    while (intervals.step()) {
      if (intervals.column_null(1)) continue;
      gpu_.series.push_back({intervals.column_text(0), intervals.column_int64(1), {}});
    }
    Statement samples(db_,
                      "SELECT ts_ms, value FROM main.pp_samples WHERE uuid = :uuid AND metric = :metric "
                      "AND ts_ms > :after AND ts_ms <= :through ORDER BY ts_ms");
    samples.bind(":uuid", uuid);
    samples.bind(":after", after_ms.value_or(INT64_MIN));
    samples.bind(":through", through_ms.value_or(INT64_MAX));
    for (auto& s : gpu_.series) {
      samples.bind(":metric", s.metric);
      while (samples.step()) {
        const bool null = samples.column_null(1);
        s.samples.push_back({samples.column_int64(0), null ? 0.0 : samples.column_double(1), null});
      }
      if (!s.samples.empty()) {
        lo_ns_ = std::min(lo_ns_, (s.samples.front().ts_ms - s.interval_ms) * kNsPerMs);
        hi_ns_ = std::max(hi_ns_, s.samples.back().ts_ms * kNsPerMs);
      }
    }
  }

  // All events of the GPU in t_start_ns order: every one counts for its job's span; those that
  // can overlap a window [lo_ns_, hi_ns_) are kept for the sweep; unfolded ones starting by
  // through_ms give their durations.
  void read_events(const std::string& uuid, std::optional<int64_t> through_ms) {
    const int64_t through_ns = through_ms && *through_ms < INT64_MAX / kNsPerMs ? *through_ms * kNsPerMs : INT64_MAX;
    Statement stmt(db_,
                   "SELECT t_start_ns, t_end_ns, job_id, id, layer, forward, folded FROM main.pp_events "
                   "WHERE gpu_uuid = :uuid ORDER BY t_start_ns");
    stmt.bind(":uuid", uuid);
    std::unordered_map<std::string, uint32_t> job_index;
    std::string key;
    uint32_t last_job = UINT32_MAX;
    std::string last_job_id;
    while (stmt.step()) {
      const int64_t start = stmt.column_int64(0);
      const int64_t end = stmt.column_int64(1);
      const std::string_view job_text = stmt.column_view(2);
      if (last_job == UINT32_MAX || last_job_id != job_text) {
        last_job_id.assign(job_text.data(), job_text.size());
        auto [it, added] = job_index.emplace(last_job_id, static_cast<uint32_t>(gpu_.jobs.size()));
        if (added) gpu_.jobs.push_back({last_job_id, start, end, 0});
        last_job = it->second;
      }
      TimelineJob& job = gpu_.jobs[last_job];
      job.first = std::min(job.first, start);
      job.last = std::max(job.last, end);
      const bool in_range = start < hi_ns_ && end > lo_ns_;  // may overlap a window of the range
      const bool unfolded = start <= through_ns && stmt.column_int64(6) == 0;
      if (!in_range && !unfolded) continue;
      const std::string_view layer = stmt.column_view(4);
      const int forward = stmt.column_int64(5) != 0 ? 1 : 0;
      key.assign(reinterpret_cast<const char*>(&last_job), sizeof last_job);
      key.push_back(static_cast<char>(forward));
      key.append(layer.data(), layer.size());
      const uint32_t group = group_for(key, last_job, layer, forward);
      const int64_t id = stmt.column_int64(3);
      if (in_range) gpu_.events.push_back({start, end, id, group, last_job});
      if (unfolded) {
        gpu_.durations[group].add(static_cast<double>(end - start) / 1e9);
        gpu_.first_id[group] = std::min(gpu_.first_id[group], id);
      }
    }
    // The untracked row of each job is the group (job, '(untracked)', 0), as in SQL.
    for (uint32_t j = 0; j < gpu_.jobs.size(); ++j) {
      key.assign(reinterpret_cast<const char*>(&j), sizeof j);
      key.push_back(0);
      key.append(kUntracked);
      gpu_.jobs[j].untracked_group = group_for(key, j, kUntracked, 0);
    }
    // ORDER BY t_start_ns is served by the index; sort anyway if a plan ever says otherwise.
    const auto by_start = [](const TimelineEvent& a, const TimelineEvent& b) { return a.start < b.start; };
    if (!std::is_sorted(gpu_.events.begin(), gpu_.events.end(), by_start))
      std::stable_sort(gpu_.events.begin(), gpu_.events.end(), by_start);
  }

 private:
  uint32_t group_for(const std::string& key, uint32_t job, std::string_view layer, int forward) {
    const auto found = group_index_.find(key);  // (emplace would allocate a node for every event)
    if (found != group_index_.end()) return found->second;
    const auto group = static_cast<uint32_t>(gpu_.groups.size());
    group_index_.emplace(key, group);
    gpu_.groups.push_back({job, std::string(layer), forward});
    gpu_.durations.push_back(MeanState{});
    gpu_.first_id.push_back(INT64_MAX);
    return group;
  }

  sqlite3* db_;
  GpuTimeline& gpu_;
  std::unordered_map<std::string, uint32_t> group_index_;
  int64_t lo_ns_ = INT64_MAX, hi_ns_ = INT64_MIN;
};

}  // namespace

int64_t GpuTimeline::windows() const {
  // Usually every series of a GPU has the same timestamps (one scrape, all fields).
  const auto same_times = [](const TimelineSeries& a, const TimelineSeries& b) {
    return a.samples.size() == b.samples.size() &&
           std::equal(a.samples.begin(), a.samples.end(), b.samples.begin(),
                      [](const TimelineSample& x, const TimelineSample& y) { return x.ts_ms == y.ts_ms; });
  };
  if (series.empty()) return 0;
  if (std::all_of(series.begin(), series.end(), [&](const TimelineSeries& s) { return same_times(s, series[0]); }))
    return static_cast<int64_t>(series[0].samples.size());
  std::vector<int64_t> all;
  size_t total = 0;
  for (const auto& s : series) total += s.samples.size();
  all.reserve(total);
  for (const auto& s : series) {
    const size_t middle = all.size();
    for (const auto& sample : s.samples) all.push_back(sample.ts_ms);
    std::inplace_merge(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(middle), all.end());
  }
  return static_cast<int64_t>(std::unique(all.begin(), all.end()) - all.begin());
}

GpuTimeline read_gpu_timeline(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                              std::optional<int64_t> through_ms) {
  GpuTimeline gpu;
  TimelineReader reader(db, gpu);
  reader.read_series(uuid, after_ms, through_ms);
  reader.read_events(uuid, through_ms);
  return gpu;
}

}  // namespace pp
