#include "attribution/gpu_timeline.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "attribution/alignment_data.hpp"
#include "attribution/event_store.hpp"
#include "attribution/stretch_read.hpp"
#include "attribution/timing_shift.hpp"
#include "attribution/window_lengths.hpp"
#include "core/number_text.hpp"
#include "core/statement.hpp"
#include "core/text.hpp"

namespace pp {
namespace {

constexpr int64_t kNsPerMsInt = 1000000;
constexpr const char* kUntracked = "(untracked)";

// A stored sample time of the GPU and the window it describes (a row of pp_windows).
struct StoredWindow {
  int64_t ts_ms, end_ns;
  std::optional<int64_t> util_end_ns;
  bool util_copy, copy;
  // The lengths its stretch was aligned with where the data had not told them yet (pp_windows).
  std::optional<double> window_ms, util_window_ms;
};

void sort_by_end(TimelineSeries& s) {
  const auto by_end = [](const TimelineSample& a, const TimelineSample& b) { return a.end_ns < b.end_ns; };
  if (!std::is_sorted(s.samples.begin(), s.samples.end(), by_end)) std::stable_sort(s.samples.begin(), s.samples.end(), by_end);
}

}  // namespace

void move_windows(GpuTimeline& gpu, int timing_shift) {
  for (TimelineSeries& s : gpu.series) {
    for (TimelineSample& sample : s.samples) sample.end_ns += timing_shift * sample.shift_ns;
    sort_by_end(s);
  }
}

namespace {

// Reads a GPU's timeline: read_series and read_events query the database (the connection's
// thread), build() decodes what they copied and places the windows (any thread).
class TimelineReader : public TimelineFetch {
 public:
  TimelineReader(sqlite3* db, int timing_shift, bool for_shifts, int64_t horizon_ms)
      : db_(db), layers_(db, "main"), timing_shift_(timing_shift), for_shifts_(for_shifts), horizon_ms_(horizon_ms) {}

  void decode() override {
    if (decoded_events_) return;
    decoded_events_ = true;
    build_events();
  }

  void read_timing() override {
    decode();
    if (stretch_reader_) {
      stretch_reader_->read_job_starts(gpu_, from_data_);
      stretches_ = stretch_reader_->take();
      stretch_reader_.reset();
    }
  }

  GpuTimeline build() override {
    if (built_) throw std::logic_error("a timeline is built once");
    built_ = true;
    decode();
    if (stretch_reader_) throw std::logic_error("a timeline with a timing shift is built after read_timing");
    place_timing(gpu_, stretches_, from_data_, farthest_move_ns_, timing_shift_, for_shifts_, horizon_ms_);
    return std::move(gpu_);
  }

  void read_series(const std::string& uuid, std::optional<int64_t> after_ms, std::optional<int64_t> through_ms,
                   int timing_shift, bool for_shifts = false) {
    Statement series(db_,
                     "SELECT i.metric, i.interval_ms AS interval_ms, coalesce(m.kind, 'window'), i.source IN ('median', 'estimated') "
                     "FROM main.pp_intervals AS i LEFT JOIN main.pp_metrics AS m USING (metric) WHERE i.uuid = :uuid "
                     "ORDER BY i.metric");
    series.bind(":uuid", uuid);
    while (series.step()) {
      if (series.column_null(1)) continue;
      TimelineSeries s;
      s.metric = series.column_text(0);
      s.window_ns = checked_interval_ms(series, 1, uuid, s.metric) * static_cast<double>(kNsPerMsInt);
      const std::string kind = series.column_text(2);
      s.kind = kind == "instant" ? TimelineSeries::kInstant
               : kind == "driver_window" ? TimelineSeries::kDriverWindow
                                         : TimelineSeries::kWindow;
      gpu_.series.push_back(std::move(s));
      from_data_.push_back(series.column_int64(3) != 0);
    }
    // Windows are moved once the jobs' spans are known (place_timing); until then the events
    // read are those that windows moved by the farthest any job's shift can take them reach.
    int64_t move = 0;
    if (timing_shift || for_shifts) {
      stretch_reader_.emplace(db_, uuid);
      // (No job's shift, rounded to the ns, goes further.)
      move = std::llround(std::max(kPollWanderNs, stretch_reader_->largest_timing_ns())) + 1;
    }
    farthest_move_ns_ = move;
    // The GPU's windows once, then each metric's samples merged with them by stored time (both
    // in ts_ms order, index ranges): a join would look each sample's window up in the index,
    // which was most of the fold's time.
    const std::vector<StoredWindow> windows = read_windows(uuid, after_ms, through_ms);
    Statement samples(db_,
                      "SELECT ts_ms, value FROM main.pp_samples WHERE uuid = :uuid AND metric = :metric "
                      "AND ts_ms > :after AND ts_ms <= :through ORDER BY ts_ms");
    samples.bind(":uuid", uuid);
    samples.bind(":after", after_ms.value_or(INT64_MIN));
    samples.bind(":through", through_ms.value_or(INT64_MAX));
    std::optional<int64_t> earliest_ts_ms;
    for (size_t si = 0; si < gpu_.series.size(); ++si) {
      TimelineSeries& s = gpu_.series[si];
      samples.bind(":metric", s.metric);
      const bool driver = s.kind == TimelineSeries::kDriverWindow;
      auto window = windows.begin();
      while (samples.step()) {
        const int64_t ts = samples.column_int64(0);
        while (window != windows.end() && window->ts_ms < ts) ++window;
        // Not aligned yet, or a copy of a window already counted: left out.
        if (window == windows.end() || window->ts_ms != ts || window->copy) continue;
        const int type = samples.column_type(1);
        bool null = type == SQLITE_NULL;
        const bool own_grid = driver && window->util_end_ns;
        const int64_t end = own_grid ? *window->util_end_ns : window->end_ns;
        // A driver window read by two DCGM samples is one window: its second reading is left out.
        if (own_grid && window->util_copy) continue;
        // Text or a BLOB in the REAL column (SQLite keeps 'NaN' or '' as text: a CSV imported by
        // hand) is not a number: left out with a warning, where reading it would give 0.
        const bool not_a_number = type == SQLITE_TEXT || type == SQLITE_BLOB;
        const double value = null || not_a_number ? 0.0 : samples.column_double(1);
        if (not_a_number || (!null && !(std::fabs(value) <= kLargestSampleValue))) {
          if (gpu_.unusable_values++ == 0)
            gpu_.first_unusable = s.metric + " of " + uuid + " at ts_ms " + std::to_string(ts) + ": " +
                                  (type == SQLITE_BLOB   ? std::string("a BLOB")
                                   : type == SQLITE_TEXT ? "the text '" + valid_utf8(samples.column_text(1), 40) + "'"
                                                         : number_text(value));
          null = true;
        }
        s.samples.push_back({ts, end, null ? 0.0 : value, null, own_grid});
        const std::optional<double>& aligned_with = driver ? window->util_window_ms : window->window_ms;
        if (aligned_with && from_data_[si])
          s.samples.back().window = window_index(s, *aligned_with * static_cast<double>(kNsPerMsInt));
      }
      sort_by_end(s);
      if (!s.samples.empty()) {
        for (const TimelineSample& sample : s.samples)
          earliest_ts_ms = std::min(earliest_ts_ms.value_or(INT64_MAX), sample.ts_ms);
        const SampleReach reach = reach_of(s);
        lo_ns_ = std::min(lo_ns_, s.samples.front().end_ns - reach.before - move);
        hi_ns_ = std::max(hi_ns_, s.samples.back().end_ns + reach.after + 1 + move);
      }
    }
    // The stretches those windows can be moved by (a job's first ones once its span is known).
    if (stretch_reader_) stretch_reader_->read_newest(lo_ns_, earliest_ts_ms, horizon_ms_);
  }

  // The GPU's events in t_start_ns order (but those whose times cannot be a call, which an
  // earlier version imported; kMaxEventNs is 1 << 62; the fold step warns about them): every one
  // counts for its job's span; those that can overlap a window [lo_ns_, hi_ns_) are kept for the
  // sweep; unfolded ones starting by through_ms give their durations.
  //
  // A fold (bounded: after_ms or through_ms given) reads only what it needs, so that its cost
  // does not grow with the GPU's history: the spans of the folded events from pp_gpu_spans, the
  // unfolded events (their partial index), and the folded events that can reach into the
  // windows (an index range from the window range's start less the longest folded event). The
  // estimator and the views (unbounded) read every event, as does a fold where pp_gpu_spans does
  // not know a span's longest event.
  //
  // With `copy`, the blocks' rows are copied for build() to decode (fetch_gpu_timeline, whose
  // build() runs on another thread); else they are decoded as they are read (read_gpu_timeline,
  // which then holds one block at a time).
  void read_events(const std::string& uuid, std::optional<int64_t> after_ms, std::optional<int64_t> through_ms,
                   bool copy) {
    through_ns_ = through_ms && *through_ms < INT64_MAX / kNsPerMsInt ? *through_ms * kNsPerMsInt : INT64_MAX;
    const std::optional<int64_t> longest = (after_ms || through_ms) ? read_folded_spans(uuid) : std::nullopt;
    std::vector<EventScan> scans;
    if (!longest) {
      scans.push_back({uuid, int64_t{0}, std::nullopt, EventScan::kAny});
      read_spans_to_widen(uuid);
    } else {
      scans.push_back({uuid, int64_t{0}, std::nullopt, EventScan::kUnfolded});
      if (lo_ns_ < hi_ns_) scans.push_back({uuid, std::max<int64_t>(lo_ns_ - *longest, 0), hi_ns_ - 1, EventScan::kFolded});
    }
    if (copy) {
      for (const EventScan& scan : scans) copied_.push_back({scan, fetch_event_blocks(db_, "main", scan)});
      layers_.reload();  // (after the fetches, which first write what pp_events' statements buffered)
      return;
    }
    begin_events();
    for (const EventScan& scan : scans) {
      scan_bounds_.push_back(gpu_.events.size());
      scan_events(db_, "main", scan, layers_, [this](const ScannedEvent& e) { take(e); });
    }
    decoded_ = true;
  }

  // The events of read_events, decoded (the copied blocks freed as they are), and each job's
  // untracked group.
  void build_events() {
    if (!decoded_) {
      begin_events();
      // Room for every event the blocks hold (those out of range are few): growing by doubling
      // would copy the events and touch new pages several times over.
      size_t held = gpu_.events.size();
      for (const auto& [scan, blocks] : copied_) held += held_events(blocks);
      gpu_.events.reserve(held);
      for (auto& [scan, blocks] : copied_) {
        scan_bounds_.push_back(gpu_.events.size());
        visit_event_blocks(blocks, scan, layers_, [this](const ScannedEvent& e) { take(e); });
        std::vector<FetchedBlock>().swap(blocks);
      }
      copied_.clear();
    }
    widen_to_folded_spans();
    // The untracked row of each job is the group (job, '(untracked)', 0), as in SQL.
    std::string key;
    for (uint32_t j = 0; j < gpu_.jobs.size(); ++j) {
      key.assign(reinterpret_cast<const char*>(&j), sizeof j);
      key.push_back(0);
      key.append(kUntracked);
      gpu_.jobs[j].untracked_group = group_for(key, j, kUntracked, 0, kUntracked);
    }
    sort_events();
  }

 private:
  std::vector<StoredWindow> read_windows(const std::string& uuid, std::optional<int64_t> after_ms,
                                         std::optional<int64_t> through_ms) {
    Statement read(db_,
                   "SELECT ts_ms, end_ns, util_end_ns, util_copy, copy_of_ms IS NOT NULL, window_ms, util_window_ms "
                   "FROM main.pp_windows WHERE uuid = :uuid AND ts_ms > :after AND ts_ms <= :through ORDER BY ts_ms");
    read.bind(":uuid", uuid);
    read.bind(":after", after_ms.value_or(INT64_MIN));
    read.bind(":through", through_ms.value_or(INT64_MAX));
    std::vector<StoredWindow> out;
    const auto optional_real = [&](int column) {
      return read.column_null(column) ? std::nullopt : std::optional<double>(read.column_double(column));
    };
    while (read.step())
      out.push_back({read.column_int64(0), read.column_int64(1),
                     read.column_null(2) ? std::nullopt : std::optional<int64_t>(read.column_int64(2)),
                     read.column_int64(3) != 0, read.column_int64(4) != 0, optional_real(5), optional_real(6)});
    return out;
  }

  // The index of a window length among the series' (TimelineSample::window), added if new.
  static uint16_t window_index(TimelineSeries& s, double window_ns) {
    if (window_ns == s.window_ns) return 0;
    const auto known = std::find(s.other_windows_ns.begin(), s.other_windows_ns.end(), window_ns);
    if (known != s.other_windows_ns.end()) return static_cast<uint16_t>(known - s.other_windows_ns.begin() + 1);
    if (s.other_windows_ns.size() >= UINT16_MAX)
      throw std::runtime_error("pp_windows: more window lengths than a series can have");
    s.other_windows_ns.push_back(window_ns);
    return static_cast<uint16_t>(s.other_windows_ns.size());
  }

  // Each job's span of folded events from pp_gpu_spans, as jobs of the timeline (begin_events
  // adds them first), and the longest folded event of the spans that reach the windows; nullopt
  // where a span does not know its longest event (negative: not one pp_gpu_spans holds; read
  // everything then).
  std::optional<int64_t> read_folded_spans(const std::string& uuid) {
    Statement spans(db_, "SELECT job_id, first_ns, last_ns, longest_ns FROM main.pp_gpu_spans WHERE uuid = :uuid");
    spans.bind(":uuid", uuid);
    int64_t longest = 0;
    std::vector<TimelineJob> jobs;
    while (spans.step()) {
      if (spans.column_int64(3) < 0) return std::nullopt;
      jobs.push_back({spans.column_text(0), spans.column_int64(1), spans.column_int64(2), 0});
      if (spans.column_int64(2) > lo_ns_) longest = std::max(longest, spans.column_int64(3));
    }
    folded_jobs_ = std::move(jobs);
    return longest;
  }

  // Events the retention setting dropped (event_retention_minutes) still count for their job's
  // span: a window after them in which the job ran no layer is its untracked time, as in the
  // fold. Without retention the spans are those of the events read (every folded event is in
  // pp_gpu_spans once), so nothing changes. A job none of whose events is left is not added.
  void read_spans_to_widen(const std::string& uuid) {
    Statement spans(db_, "SELECT job_id, first_ns, last_ns FROM main.pp_gpu_spans WHERE uuid = :uuid "
                         "AND first_ns >= 0 AND last_ns >= first_ns AND last_ns <= (1 << 62)");
    spans.bind(":uuid", uuid);
    while (spans.step()) spans_to_widen_.push_back({spans.column_text(0), spans.column_int64(1), spans.column_int64(2), 0});
  }
  void widen_to_folded_spans() {
    for (const TimelineJob& span : spans_to_widen_) {
      const auto found = job_index_.find(span.job_id);
      if (found == job_index_.end()) continue;
      TimelineJob& job = gpu_.jobs[found->second];
      job.first = std::min(job.first, span.first);
      job.last = std::max(job.last, span.last);
    }
  }

  // The index of a job in the timeline, added with the span [first, last] if new, else widened.
  uint32_t job_for(std::string_view job_id, int64_t first, int64_t last) {
    if (last_job_ == UINT32_MAX || last_job_id_ != job_id) {
      last_job_id_.assign(job_id.data(), job_id.size());
      auto [it, added] = job_index_.emplace(last_job_id_, static_cast<uint32_t>(gpu_.jobs.size()));
      if (added) gpu_.jobs.push_back({last_job_id_, first, last, 0});
      last_job_ = it->second;
    }
    TimelineJob& job = gpu_.jobs[last_job_];
    job.first = std::min(job.first, first);
    job.last = std::max(job.last, last);
    return last_job_;
  }

  // The events by start, stably. ORDER BY t_start_ns is served by the index, so each scan's
  // events come in order but where blocks of one GPU overlap in time (two jobs' files): the two
  // scans of a fold are merged (as a stable sort of them would order them, in linear time).
  void sort_events() {
    const auto by_start = [](const TimelineEvent& a, const TimelineEvent& b) { return a.start < b.start; };
    auto& events = gpu_.events;
    if (scan_bounds_.empty() || scan_bounds_.front() != 0) scan_bounds_.insert(scan_bounds_.begin(), 0);
    scan_bounds_.push_back(events.size());
    bool runs_sorted = true;
    for (size_t r = 1; r < scan_bounds_.size() && runs_sorted; ++r)
      runs_sorted = std::is_sorted(events.begin() + static_cast<std::ptrdiff_t>(scan_bounds_[r - 1]),
                                   events.begin() + static_cast<std::ptrdiff_t>(scan_bounds_[r]), by_start);
    if (!runs_sorted) {
      std::stable_sort(events.begin(), events.end(), by_start);
    } else {
      for (size_t r = 2; r < scan_bounds_.size(); ++r)
        std::inplace_merge(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(scan_bounds_[r - 1]),
                           events.begin() + static_cast<std::ptrdiff_t>(scan_bounds_[r]), by_start);
    }
    scan_bounds_.clear();
  }

  // The jobs of the folded spans come first, as the events' jobs are numbered after them.
  void begin_events() {
    for (const TimelineJob& job : folded_jobs_) job_for(job.job_id, job.first, job.last);
  }
  void take(const ScannedEvent& e) {
    if (e.event.t_end_ns >= e.event.t_start_ns && e.event.t_end_ns <= kMaxEventNs) take_event(e, through_ns_);
  }

  // One event of a read_events scan.
  void take_event(const ScannedEvent& e, int64_t through_ns) {
    const int64_t start = e.event.t_start_ns;
    const int64_t end = e.event.t_end_ns;
    const uint32_t job = job_for(e.job_id, start, end);
    const bool in_range = start < hi_ns_ && end > lo_ns_;  // may overlap a window of the range
    const bool unfolded = start <= through_ns && !e.folded;
    if (!in_range && !unfolded) return;
    const int forward = e.event.forward ? 1 : 0;
    // A group is (job, layer, direction); its number is looked up by the block's layer id, and by
    // name only the first time an id comes (two ids may name one layer, with two types).
    if (groups_by_id_.size() <= job) groups_by_id_.resize(job + 1);
    auto [known, added] = groups_by_id_[job].try_emplace(e.event.layer_id * 2 + forward, 0);
    if (added) {
      const std::string_view layer = e.layer.first;
      key_.assign(reinterpret_cast<const char*>(&job), sizeof job);
      key_.push_back(static_cast<char>(forward));
      key_.append(layer.data(), layer.size());
      known->second = group_for(key_, job, layer, forward, e.layer.second ? std::string_view(*e.layer.second) : "");
    }
    const uint32_t group = known->second;
    const int64_t id = e.id;
    if (in_range) gpu_.events.push_back({start, end, id, group, job});
    if (unfolded) {
      // (In the order the blocks are read: by GPU, then first start, then id, so the same
      // database gives the same sums.)
      gpu_.durations[group].add(static_cast<double>(end - start) / 1e9, 1, 1);
      gpu_.first_id[group] = std::min(gpu_.first_id[group], id);
      TimelineJob& span = gpu_.jobs[job];
      span.unfolded_first = std::min(span.unfolded_first, start);
      span.unfolded_last = std::max(span.unfolded_last, end);
      span.unfolded_longest = std::max(span.unfolded_longest, end - start);
      ++span.unfolded_events;
    }
  }

  uint32_t group_for(const std::string& key, uint32_t job, std::string_view layer, int forward,
                     std::string_view layer_type) {
    const auto found = group_index_.find(key);  // (emplace would allocate a node for every event)
    if (found != group_index_.end()) return found->second;
    const auto group = static_cast<uint32_t>(gpu_.groups.size());
    group_index_.emplace(key, group);
    gpu_.groups.push_back({job, std::string(layer), forward, std::string(layer_type)});
    gpu_.durations.emplace_back();
    gpu_.first_id.push_back(INT64_MAX);
    return group;
  }

  sqlite3* db_;
  GpuTimeline gpu_;
  LayerNames layers_;
  // What read_events read for build_events.
  int64_t through_ns_ = INT64_MAX;
  std::vector<TimelineJob> folded_jobs_, spans_to_widen_;
  std::vector<std::pair<EventScan, std::vector<FetchedBlock>>> copied_;
  bool decoded_ = false;  // read_events decoded the events as it read them
  std::vector<size_t> scan_bounds_;  // where each scan's events begin in gpu_.events
  int timing_shift_;
  bool for_shifts_;
  int64_t horizon_ms_;
  bool built_ = false;
  std::unordered_map<std::string, uint32_t> group_index_;
  std::vector<std::unordered_map<int64_t, uint32_t>> groups_by_id_;  // per job: layer id x 2 + forward
  std::unordered_map<std::string, uint32_t> job_index_;
  uint32_t last_job_ = UINT32_MAX;  // the job of the previous row (rows come in runs of one job)
  std::string last_job_id_, key_;
  int64_t lo_ns_ = INT64_MAX, hi_ns_ = INT64_MIN;
  std::optional<StretchReader> stretch_reader_;  // until read_timing
  KnownStretches stretches_;
  bool decoded_events_ = false;
  int64_t farthest_move_ns_ = 0;  // the farthest any window can be moved (read_series)
  std::vector<bool> from_data_;   // per series: its length is the data's (a user's or setting's wins)
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

int64_t timing_horizon_ms(int64_t retention_minutes) {
  return retention_minutes > 0 && retention_minutes < kEveryStretch / 60000 ? retention_minutes * 60000 : kEveryStretch;
}

std::unique_ptr<TimelineFetch> fetch_gpu_timeline(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                                                  std::optional<int64_t> through_ms, int timing_shift,
                                                  int64_t horizon_ms) {
  auto reader = std::make_unique<TimelineReader>(db, timing_shift, false, horizon_ms);
  reader->read_series(uuid, after_ms, through_ms, timing_shift);
  reader->read_events(uuid, after_ms, through_ms, true);
  return reader;
}

std::unique_ptr<TimelineFetch> fetch_gpu_timeline_for_shifts(sqlite3* db, const std::string& uuid,
                                                             std::optional<int64_t> after_ms,
                                                             std::optional<int64_t> through_ms, int64_t horizon_ms) {
  auto reader = std::make_unique<TimelineReader>(db, 0, true, horizon_ms);
  reader->read_series(uuid, after_ms, through_ms, 0, true);
  reader->read_events(uuid, after_ms, through_ms, true);
  return reader;
}

GpuTimeline read_gpu_timeline(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                              std::optional<int64_t> through_ms, int timing_shift, int64_t horizon_ms) {
  TimelineReader reader(db, timing_shift, false, horizon_ms);
  reader.read_series(uuid, after_ms, through_ms, timing_shift);
  reader.read_events(uuid, after_ms, through_ms, false);
  reader.read_timing();
  return reader.build();
}

GpuTimeline read_gpu_timeline_for_shifts(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                                         std::optional<int64_t> through_ms, int64_t horizon_ms) {
  TimelineReader reader(db, 0, true, horizon_ms);
  reader.read_series(uuid, after_ms, through_ms, 0, true);
  reader.read_events(uuid, after_ms, through_ms, false);
  reader.read_timing();
  return reader.build();
}

}  // namespace pp
