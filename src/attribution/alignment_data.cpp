#include "attribution/alignment_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "attribution/event_store.hpp"
#include "attribution/offset_drift.hpp"
#include "attribution/refresh.hpp"
#include "attribution/window_lengths.hpp"
#include "core/embedded_sql.hpp"
#include "core/number_text.hpp"
#include "core/statement.hpp"
#include "core/stored_numbers.hpp"

namespace pp {
namespace {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kNanosecondsPerMs = 1000000;
// Beyond a stretch's own length, how far from its stored times a window the offset search
// tries can lie: the exporter's lag and a window or two, seconds at most.
constexpr double kJobReachNs = 60e9;

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

GpuSampleData read_gpu_samples(sqlite3* db, const std::string& uuid, const GpuEventExtent& extent,
                               int64_t samples_after_ns, std::optional<int64_t> last_aligned_ms) {
  GpuSampleData data;
  {
    Statement metrics(db, named_sql("align", "metrics_of_gpu"));
    metrics.bind(":uuid", uuid);
    while (metrics.step()) data.metrics.push_back({metrics.column_text(0), metrics.column_text(1)});
  }
  for (size_t m = 0; m < data.metrics.size(); ++m) {
    if (data.metrics[m].kind == "window") data.primary.push_back(m);
    if (data.metrics[m].kind == "driver_window") data.driver.push_back(m);
  }
  if (data.primary.empty()) data.primary = data.driver;  // no profiling fields: fit what there is
  // Every metric's samples from the last aligned time on, merged into one row per stored time.
  std::map<int64_t, std::vector<double>> rows;
  Statement samples(db, named_sql("align", "samples_of_metric"));
  samples.bind(":uuid", uuid);
  samples.bind(":from", last_aligned_ms.value_or(INT64_MIN));
  for (size_t m = 0; m < data.metrics.size(); ++m) {
    samples.bind(":metric", data.metrics[m].metric);
    while (samples.step()) {
      auto& row = rows.try_emplace(samples.column_int64(0), data.metrics.size(), kMissing).first->second;
      // (Text or a BLOB in the REAL column is no number: missing, as the fold leaves it out.)
      const int type = samples.column_type(1);
      row[m] = type == SQLITE_INTEGER || type == SQLITE_FLOAT ? samples.column_double(1) : kMissing;
    }
  }
  // Copies: every metric equal to the stored time before (stored next to it, before the samples
  // a job does not need are left out). A window where every fitted metric reads 0 (an idle
  // GPU) looks the same as the next idle one, so zeros are never copies.
  std::vector<char> copies;
  copies.reserve(rows.size());
  const std::vector<double>* before = nullptr;
  for (const auto& [ts, row] : rows) {
    bool equal = before != nullptr, active = false;
    for (size_t m = 0; m < row.size() && equal; ++m) equal = same(row[m], (*before)[m]);
    for (size_t m : data.primary) active = active || (std::isfinite(row[m]) && row[m] != 0);
    copies.push_back(equal && active ? 1 : 0);
    before = &row;
  }
  // Only the stored times the GPU's jobs need (GpuEventExtent), whatever else a fetch brought:
  // those in the union of the jobs' spans, each reaching samples_after_ns past its last event,
  // walked in time order with the stored times (a GPU may have run thousands of jobs).
  std::vector<std::pair<int64_t, int64_t>> needed_spans;
  for (const auto& job : extent.jobs)
    needed_spans.emplace_back(job.second.first, job.second.last > INT64_MAX - samples_after_ns
                                                    ? INT64_MAX
                                                    : job.second.last + samples_after_ns);
  std::sort(needed_spans.begin(), needed_spans.end());
  size_t next_span = 0;
  int64_t needed_through = INT64_MIN;  // the end of the union of the spans started by now
  const auto needed = [&](int64_t ts_ms) {
    const int64_t ts_ns = ts_ms * kNanosecondsPerMs;
    while (next_span < needed_spans.size() && needed_spans[next_span].first <= ts_ns)
      needed_through = std::max(needed_through, needed_spans[next_span++].second);
    return ts_ns <= needed_through;
  };
  data.values.assign(data.metrics.size(), {});
  size_t i = 0;
  bool previous_kept = false;  // a copy is one of the stored time before it, which must be kept too
  for (const auto& [ts, row] : rows) {
    const char copy = copies[i++];
    const bool keep = needed(ts);
    if (keep) {
      data.ts_ms.push_back(ts);
      data.is_copy.push_back(previous_kept ? copy : 0);
      for (size_t m = 0; m < row.size(); ++m) data.values[m].push_back(row[m]);
    }
    previous_kept = keep;
  }
  data.first_new = last_aligned_ms && !data.ts_ms.empty() && data.ts_ms.front() == *last_aligned_ms ? 1 : 0;
  return data;
}

GpuEventExtent read_event_extent(sqlite3* db, const std::string& uuid) {
  GpuEventExtent extent;
  std::map<std::string, JobSpan> by_job;
  const auto add = [&](const JobSpan& s) {
    auto [it, added] = by_job.try_emplace(s.job_id, s);
    if (added) return;
    it->second.first_ns = std::min(it->second.first_ns, s.first_ns);
    it->second.last_ns = std::max(it->second.last_ns, s.last_ns);
    it->second.longest_ns = std::max(it->second.longest_ns, s.longest_ns);
  };
  Statement spans(db, named_sql("align", "job_spans"));
  spans.bind(":uuid", uuid);
  while (spans.step())
    add({spans.column_text(0), spans.column_int64(1), spans.column_int64(2), 0, spans.column_int64(3)});
  for (const JobSpan& s : unfolded_span_bounds(db, uuid)) add(s);
  for (const auto& [job_id, s] : by_job) {
    extent.jobs.push_back({job_id, {s.first_ns, s.last_ns, 0}});
    extent.longest_ns = std::max(extent.longest_ns, s.longest_ns);
    extent.last_end_ns = std::max(extent.last_end_ns, s.last_ns);
  }
  if (const auto last = newest_event_start(db, uuid)) extent.last_start_ns = *last;
  return extent;
}

AlignmentEventBlocks fetch_alignment_events(sqlite3* db, const std::string& uuid, const GpuEventExtent& extent,
                                            double from_ns, double to_ns) {
  // The events that start in [from - the longest, to).
  const auto from = static_cast<int64_t>(from_ns), to = static_cast<int64_t>(to_ns);
  AlignmentEventBlocks fetched{LayerNames(db, "main"),
                               {uuid, std::max<int64_t>(from - extent.longest_ns - 1, 0), to - 1, EventScan::kAny},
                               {}};
  fetched.blocks = fetch_event_blocks(db, "main", fetched.scan);
  fetched.layers.reload();  // (after the fetch, which first writes what pp_events' statements buffered)
  return fetched;
}

AlignmentTimeline alignment_timeline(const AlignmentEventBlocks& fetched, const GpuEventExtent& extent,
                                     double from_ns, double to_ns) {
  AlignmentTimeline t;
  std::map<std::string, uint32_t> job_index;
  // Only the jobs whose span reaches the stretch: another one touches none of its windows, but
  // would be a column of every fit (its untracked time). A GPU of a cluster runs job after job,
  // and with as many columns as the stretch has samples no fit is left.
  const double reach = (to_ns - from_ns) + kJobReachNs;
  for (const auto& [job_id, span] : extent.jobs) {
    if (static_cast<double>(span.last) < from_ns - reach || static_cast<double>(span.first) > to_ns + reach) continue;
    job_index[job_id] = static_cast<uint32_t>(t.jobs.size());
    t.jobs.push_back(span);
  }
  t.longest_ns = 0;
  // The events fetched that end after from, whose times can be a call, in t_start_ns order.
  // Jobs and layer types are numbered as the blocks are read (a stretch holds tens of thousands
  // of events and a handful of each).
  const auto from = static_cast<int64_t>(from_ns);
  struct InRange {
    int64_t start, end, id;
    uint32_t job, layer_type;  // into job_ids and layer_types
    int forward;
  };
  std::vector<InRange> in_range;
  in_range.reserve(held_events(fetched.blocks));
  std::vector<std::string> job_ids, layer_types;
  std::map<std::string, uint32_t, std::less<>> job_read, type_read;
  std::unordered_map<const void*, uint32_t> type_of_layer;  // LayerNames' entries stay put
  const auto number = [](std::map<std::string, uint32_t, std::less<>>& seen, std::vector<std::string>& names,
                         std::string_view name) {
    auto it = seen.find(name);
    if (it == seen.end()) {
      it = seen.emplace(std::string(name), static_cast<uint32_t>(names.size())).first;
      names.emplace_back(name);
    }
    return it->second;
  };
  uint32_t last_job = 0;
  std::string_view last_job_id;
  bool any_job = false;
  visit_event_blocks(fetched.blocks, fetched.scan, fetched.layers, [&](const ScannedEvent& e) {
    const int64_t start = e.event.t_start_ns, end = e.event.t_end_ns;
    if (end <= from || end < start || end > kMaxEventNs) return;
    if (!any_job || e.job_id != last_job_id) {
      last_job = number(job_read, job_ids, e.job_id);
      last_job_id = job_ids[last_job];
      any_job = true;
    }
    auto type = type_of_layer.find(&e.layer);
    if (type == type_of_layer.end())
      type = type_of_layer.emplace(&e.layer, number(type_read, layer_types, e.layer.second.value_or(""))).first;
    in_range.push_back({start, end, e.id, last_job, type->second, e.event.forward ? 1 : 0});
  });
  const auto by_start = [](const InRange& a, const InRange& b) {
    return a.start != b.start ? a.start < b.start : a.id < b.id;
  };
  // (One job's blocks on a GPU come in that order already.)
  if (!std::is_sorted(in_range.begin(), in_range.end(), by_start)) std::sort(in_range.begin(), in_range.end(), by_start);
  // Groups are numbered in the order they first run, by (job, layer type, direction): the job
  // and the type as read stand for the job and the type one to one.
  std::vector<uint32_t> group_of(job_ids.size() * layer_types.size() * 2, UINT32_MAX);
  uint32_t groups = 0;
  std::vector<std::optional<uint32_t>> job_at(job_ids.size());
  t.events.reserve(in_range.size());
  for (const InRange& e : in_range) {
    // Every job with events is in the extent; one that is not (its span not recorded by an
    // older version) gets its span from its events here.
    if (!job_at[e.job]) {
      const auto found = job_index.try_emplace(job_ids[e.job], static_cast<uint32_t>(t.jobs.size())).first;
      if (found->second == t.jobs.size()) t.jobs.push_back({e.start, e.end, 0});
      job_at[e.job] = found->second;
    }
    const uint32_t job = *job_at[e.job];
    t.jobs[job].first = std::min(t.jobs[job].first, e.start);
    t.jobs[job].last = std::max(t.jobs[job].last, e.end);
    uint32_t& group = group_of[(static_cast<size_t>(e.job) * layer_types.size() + e.layer_type) * 2 +
                               static_cast<size_t>(e.forward)];
    if (group == UINT32_MAX) group = groups++;
    t.events.push_back({e.start, e.end, group, job});
    t.longest_ns = std::max(t.longest_ns, e.end - e.start);
  }
  // Unknowns: the groups, then each job's untracked time (the rest of a window is one more).
  t.unknowns = groups;
  for (auto& job : t.jobs) job.untracked = t.unknowns++;
  return t;
}

std::vector<SegmentRecord> read_segments(sqlite3* db, const std::string& uuid) {
  Statement read(db, named_sql("align", "previous_segments"));
  read.bind(":uuid", uuid);
  std::vector<SegmentRecord> out;
  // A value no alignment writes (the table edited by hand: text, a BLOB) is refused, not read as 0.
  StoredRow row(read, "pp_alignment");
  while (read.step()) {
    SegmentRecord r;
    row.name_row("of GPU ", uuid);
    r.from_ms = row.whole(0, "a time in unix ms");
    row.name_row("of GPU ", uuid, "from_ms", r.from_ms);
    r.through_ms = row.whole(1, "a time in unix ms");
    r.offset_ns = static_cast<double>(row.whole(2, "a whole number of ns"));
    r.timing_ns = static_cast<double>(row.whole(3, "a whole number of ns"));
    r.status = read.column_text(4);
    r.util_phase_ns = read.column_null(5) ? NAN : static_cast<double>(row.whole(5, "a whole number of ns"));
    // (Its range too: a drift past what the align step writes made ends whose rounding is undefined.)
    r.drift_ppm = row.number(6, "a number of ppm");
    if (!(std::fabs(r.drift_ppm) <= kMaxDriftPpm))
      throw row.refused(6, number_text(r.drift_ppm), "a drift of -5000 to 5000 ppm");
    if (!read.column_null(7)) r.window_ms = row.number(7, "a length in ms");
    if (!read.column_null(8)) r.util_window_ms = row.number(8, "a length in ms");
    if (!read.column_null(9)) r.first_ms = read.column_int64(9);
    out.push_back(r);
  }
  std::reverse(out.begin(), out.end());  // oldest first
  return out;
}

std::optional<WindowRecord> window_of(sqlite3* db, const std::string& uuid, int64_t ts_ms) {
  Statement read(db, named_sql("align", "window_of"));
  read.bind(":uuid", uuid);
  read.bind(":ts_ms", ts_ms);
  if (!read.step()) return std::nullopt;
  WindowRecord w;
  w.ts_ms = ts_ms;
  w.end_ns = read.column_int64(0);
  if (!read.column_null(1)) w.util_end_ns = read.column_int64(1);
  sqlite3_reset(read.handle());
  return w;
}

std::vector<WindowRecord> own_windows_before(sqlite3* db, const std::string& uuid, int64_t through_ms, int64_t count) {
  Statement read(db, named_sql("align", "own_windows_before"));
  read.bind(":uuid", uuid);
  read.bind(":through_ms", through_ms);
  read.bind(":count", count);
  std::vector<WindowRecord> out;
  while (read.step()) {
    WindowRecord w;
    w.ts_ms = read.column_int64(0);
    w.end_ns = read.column_int64(1);
    out.push_back(w);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

SeriesWindow series_window(sqlite3* db, const std::string& uuid, const std::string& metric) {
  std::string_view script = named_sql("align", "series_window");
  Statement declared(db, &script);
  declared.bind(":uuid", uuid);
  declared.bind(":metric", metric);
  declared.run();
  Statement read(db, &script);
  read.bind(":uuid", uuid);
  read.bind(":metric", metric);
  SeriesWindow w;
  if (read.step()) {
    const std::string source = read.column_text(1);
    w.window_ms = checked_interval_ms(read, 0, uuid, metric);
    w.settled = source != "median";
    sqlite3_reset(read.handle());
  }
  return w;
}

void save_estimated_window(sqlite3* db, const std::string& uuid, const std::vector<std::string>& metrics,
                           double window_ms) {
  Statement save(db, named_sql("align", "save_estimated_window"));
  for (const std::string& metric : metrics) {
    save.bind(":uuid", uuid);
    save.bind(":metric", metric);
    save.bind(":window_ms", window_ms);
    save.run();
  }
}

void write_segment(sqlite3* db, const std::string& uuid, const SegmentRecord& s) {
  Statement segment(db, named_sql("align", "insert_segment"));
  segment.bind(":uuid", uuid);
  segment.bind(":from_ms", s.from_ms);
  segment.bind(":through_ms", s.through_ms);
  segment.bind(":offset_ns", static_cast<int64_t>(std::llround(s.offset_ns)));
  segment.bind(":timing_ns", static_cast<int64_t>(std::llround(s.timing_ns)));
  segment.bind(":drift_ppm", s.drift_ppm);
  segment.bind(":util_phase_ns", std::isnan(s.util_phase_ns) ? std::optional<int64_t>()
                                                             : std::optional<int64_t>(std::llround(s.util_phase_ns)));
  segment.bind(":util_timing_ns", std::isnan(s.util_timing_ns)
                                      ? std::optional<int64_t>()
                                      : std::optional<int64_t>(std::llround(s.util_timing_ns)));
  segment.bind(":samples", s.samples);
  segment.bind(":repeats", s.repeats);
  segment.bind(":skipped", s.skipped);
  segment.bind(":moved", s.moved);
  segment.bind(":status", s.status);
  segment.bind(":window_ms", s.window_ms);
  segment.bind(":util_window_ms", s.util_window_ms);
  segment.bind(":reason", s.reason);
  segment.run();
}

void forget_window_lengths(sqlite3* db, const std::string& uuid, const SegmentRecord& segment, bool window,
                           bool util) {
  run_script(db, named_sql("align", "forget_window_lengths"),
             {{":uuid", uuid}, {":from_ms", segment.from_ms}, {":through_ms", segment.through_ms},
              {":window", int64_t{window ? 1 : 0}}, {":util", int64_t{util ? 1 : 0}}});
}

void write_windows(sqlite3* db, const std::string& uuid, const SegmentRecord& segment,
                   const std::vector<WindowRecord>& windows) {
  Statement window(db, named_sql("align", "insert_window"));
  window.bind(":window_ms", segment.window_ms);
  window.bind(":util_window_ms", segment.util_window_ms);
  for (const WindowRecord& w : windows) {
    window.bind(":uuid", uuid);
    window.bind(":ts_ms", w.ts_ms);
    window.bind(":end_ns", w.end_ns);
    window.bind(":util_end_ns", w.util_end_ns);
    window.bind(":copy_of_ms", w.copy_of_ms);
    window.bind(":util_copy", int64_t{w.util_copy ? 1 : 0});
    window.run();
  }
}

// The stored times of [first, last) whose every metric reads as the stored time two or three
// before, not as the one just before: a window older than the one stored before it (the same
// window reads alike; an idle one reads like the next idle one, so those are not counted).
// Only the stretch's own stored times are compared, which any sequence of refreshes reads alike.
// A row of whole numbers only (GPU_UTIL's percent, a counter saturated at 1) can equal an older
// one by chance: not counted.
int64_t served_out_of_order(const GpuSampleData& data, size_t first, size_t last) {
  const auto same_row = [&](size_t a, size_t b) {
    for (const auto& v : data.values)
      if (!((std::isnan(v[a]) && std::isnan(v[b])) || v[a] == v[b])) return false;
    return true;
  };
  const auto fractional = [&](size_t i) {
    for (const auto& v : data.values)
      if (std::isfinite(v[i]) && v[i] != std::floor(v[i])) return true;
    return false;
  };
  int64_t count = 0;
  for (size_t i = first + 2; i < last; ++i) {
    bool active = false;
    for (size_t m : data.primary) active = active || (std::isfinite(data.values[m][i]) && data.values[m][i] != 0);
    if (!active || !fractional(i) || same_row(i, i - 1)) continue;
    count += same_row(i, i - 2) || (i >= first + 3 && same_row(i, i - 3));
  }
  return count;
}

}  // namespace pp
