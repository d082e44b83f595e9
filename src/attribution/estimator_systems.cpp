// The estimator's linear systems (estimator_systems.hpp): the interval sweep of each GPU's
// timeline turned into rows, per system and metric.
#include "attribution/estimator_systems.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>

#include "attribution/gpu_timeline.hpp"
#include "attribution/interval_sweep.hpp"
#include "attribution/window_spans.hpp"
#include "core/errors.hpp"
#include "core/number_text.hpp"
#include "core/statement.hpp"
#include "core/stored_numbers.hpp"
#include "stats/sample_key.hpp"
#include "stats/shared_weights_sums.hpp"

namespace pp {

namespace {

constexpr double kLargestBound = 1e150;

}  // namespace

std::map<std::string, Bounds> metric_bounds(sqlite3* db) {
  std::map<std::string, Bounds> out;
  Statement read(db, "SELECT metric, lower, upper FROM main.pp_metric_bounds");
  StoredRow row(read, "pp_metric_bounds");
  while (read.step()) {
    // Users edit the bounds (a GPU's memory): a value that is no number ('32 GiB', a BLOB) was
    // read as no bound or as 0, and bounds in the wrong order were blamed on an argument
    // 'upper' that no function here has.
    const std::string metric = read.column_text(0);
    row.name_row("of metric ", metric);
    const auto bound = [&](int column, double none, const char* wanted) {
      if (read.column_null(column)) return none;
      const std::optional<double> value = stored_double(read, column);
      // (Past 1e150 the fit's squares overflow, as pp_deconvolve says of its bounds; and a bound
      // so far out would make every interval narrow beside it, so every estimate identified.)
      if (!value || *value == -none || (std::isfinite(*value) && std::fabs(*value) > kLargestBound))
        throw row.refused(column, row.shown(column), wanted);
      return *value;
    };
    const double lower = bound(1, -INFINITY, "a number from -1e150 to 1e150, or NULL: no lower bound");
    const double upper = bound(2, INFINITY, "a number from -1e150 to 1e150, or NULL: no upper bound");
    if (lower > upper)
      throw row.refused(2, number_text(upper), ("at least its lower bound, " + number_text(lower) + ", or NULL: no "
                                                "upper bound").c_str());
    out[metric] = {lower, upper};
  }
  return out;
}


namespace {

// How one group of a GPU's timeline enters the systems (fixed for the timeline).
struct GroupRole {
  const std::string* system = nullptr;
  bool joint = false;
  bool untracked = false;  // the job's own untracked group
  bool registered = false;
  std::string name;  // its unknown; a joint system's untracked time is the union's, per window
  std::vector<uint32_t> ids;  // per series, its unknown's index in the system (kNoId: not yet)
};

constexpr uint32_t kNoId = UINT32_MAX;
constexpr size_t kRowsReserved = 64;  // per window, when a new system is sized

// One system's part of a window.
struct SystemHere {
  const std::string* system = nullptr;
  bool joint = false;
  struct Part {
    GroupRole* role;  // nullptr: a joint system's untracked time
    uint32_t group;
    double fraction;  // of the window
  };
  std::vector<Part> fractions;
  std::vector<uint32_t> jobs;  // a joint system's jobs in the window
  double event_time = 0;       // and the time their events cover (ns, as weighed)
};

// A sums-only grouping's rows of one system in the windows of series whose windows are the same
// to the bit, for the series that had a value there: one row's weights serve them all. A window
// in which one of them has no value, or has failed, goes to the sums of the others; a series'
// state is then the sum of its parts' (to rounding, where one part's would be to the bit).
struct SharedRows {
  const std::string* system;
  std::vector<size_t> series;
  SharedWeightsSums sums;
  std::vector<uint32_t> index_of_group;  // per group of the timeline, its unknown (kNoId: not yet)
  uint32_t untracked = kNoId;
};

// Whether two series of a window class have windows of the same length to the bit.
bool same_window_lengths(const TimelineSeries& a, const TimelineSeries& b) {
  for (size_t k = 0; k < a.samples.size(); ++k)
    if (a.window_of(a.samples[k]) != b.window_of(b.samples[k])) return false;
  return true;
}

std::string too_many_unknowns() {
  return "more than " + std::to_string(DeconvolveLimits::kMaxUnknowns) +
         " layers and directions in one system (layer_type_estimates has fewer)";
}

std::string failure_of(const GroupingSystems& out, const std::string& system, const std::exception& e) {
  const auto known = out.unknowns.find(system);
  return known != out.unknowns.end() && known->second.size() >= DeconvolveLimits::kMaxUnknowns
             ? too_many_unknowns()
             : std::string("its system could not be solved (") + e.what() + ")";
}

// The rows of one GPU's timeline for each grouping, from one interval sweep shared by the
// groupings (add_timeline_systems): each window's groups and their weights are gathered as the
// sweep emits them, then turned into each system's row of that window.
class TimelineRows {
 public:
  TimelineRows(const GpuTimeline& gpu, size_t g, int shift, const std::map<std::string, Bounds>& bounds,
               const JobSharing& sharing, const std::vector<GroupingSystems*>& groupings)
      : gpu_(gpu), g_(g), shift_(shift), bounds_(bounds), groupings_(groupings),
        roles_(groupings.size(), std::vector<GroupRole>(gpu.groups.size())), exact_parts_(gpu.series.size()),
        group_at_(gpu.groups.size(), UINT32_MAX), found_in_(groupings.size()), shared_in_(groupings.size()),
        unknowns_met_(groupings.size()) {
    assign_roles(sharing);
    classify_series();
  }

  void add() {
    sweep_overlaps_of(gpu_, classes_.swept,
                      [&](int64_t event, uint32_t group, size_t series, const TimelineSample& sample, int64_t weight) {
                        take(event, group, series, sample, weight);
                      });
    flush();
    keep_sums();
  }

 private:
  // Per grouping, the note and system of each (system, series) met, so that a window finds them
  // without a SystemKey's strings and two map searches (std::map's entries stay put).
  struct Found {
    const std::string* system;
    size_t series;
    SystemNotes* note;
    DeconvolveData* data;  // nullptr: not made yet (or a sums-only grouping's)
  };
  // Per grouping, system and metric, the unknowns met, in the order its windows met them: more
  // than DeconvolveLimits::kMaxUnknowns (not counting '(rest)') fail that metric's system, over
  // all its parts; its state lists them in that order, then '(rest)', as its rows would.
  struct UnknownsMet {
    std::unordered_set<std::string> names;
    std::vector<std::string> in_order;
  };

  // Per grouping, each group's role (fixed for the timeline).
  void assign_roles(const JobSharing& sharing) {
    for (size_t o = 0; o < groupings_.size(); ++o) {
      const bool by_type = groupings_[o]->by_type;
      for (size_t i = 0; i < gpu_.groups.size(); ++i) {
        const TimelineGroup& gr = gpu_.groups[i];
        GroupRole& role = roles_[o][i];
        role.system = &sharing.system(gpu_.jobs[gr.job].job_id);
        role.joint = sharing.joint(*role.system);
        role.untracked = i == gpu_.jobs[gr.job].untracked_group;
        role.ids.assign(gpu_.series.size(), kNoId);
        if (role.joint && role.untracked) continue;
        const std::string unknown = (by_type ? gr.layer_type : gr.layer) + "|" + std::to_string(gr.forward);
        role.name = role.joint ? gpu_.jobs[gr.job].job_id + kJobSeparator + unknown : unknown;
      }
    }
  }

  // Series whose windows are the same (a GPU's PROF metrics, scraped together) are swept once:
  // the first of each such class is swept, and each window's rows go to every series of the
  // class, with that series' value (each system still gets its samples in time order). For the
  // sums-only groupings, each class is in parts whose window lengths are the same to the bit.
  void classify_series() {
    classes_ = window_classes(gpu_);
    for (size_t swept : classes_.swept)
      for (size_t si : classes_.class_of[swept]) {
        auto& parts = exact_parts_[swept];
        auto same = std::find_if(parts.begin(), parts.end(), [&](const std::vector<size_t>& p) {
          return same_window_lengths(gpu_.series[p[0]], gpu_.series[si]);
        });
        if (same == parts.end())
          parts.push_back({si});
        else
          same->push_back(si);
      }
  }

  Found& found_for(size_t o, const std::string* system, size_t series) {
    std::vector<Found>& found = found_in_[o];
    auto at = std::find_if(found.begin(), found.end(),
                           [&](const Found& f) { return f.system == system && f.series == series; });
    if (at != found.end()) return *at;
    found.push_back({system, series, &groupings_[o]->notes[SystemKey{*system, gpu_.series[series].metric}], nullptr});
    return found.back();
  }

  // One overlap of the sweep: a new sample's first starts the next window.
  void take(int64_t event, uint32_t group, size_t series, const TimelineSample& sample, int64_t weight) {
    if (&sample != window_) {
      flush();
      window_ = &sample;
      window_series_ = series;
      for (const auto& entry : groups_) group_at_[entry.first] = UINT32_MAX;
      groups_.clear();
      window_events_.clear();
      at_once_known_ = false;
    }
    if (event >= 0) window_events_.push_back(static_cast<size_t>(event));
    uint32_t& at = group_at_[group];
    if (at == UINT32_MAX) {
      at = static_cast<uint32_t>(groups_.size());
      groups_.emplace_back(group, weight);
    } else {
      groups_[at].second += weight;
    }
  }

  // The window gathered into each grouping's systems.
  void flush() {
    if (!window_) return;
    const auto k = static_cast<size_t>(window_ - gpu_.series[window_series_].samples.data());
    for (size_t o = 0; o < groupings_.size(); ++o) {
      if (groupings_[o]->sums_only) {
        for (const auto& part : exact_parts_[window_series_]) add_shared(o, part, k);
        continue;
      }
      for (size_t si : classes_.class_of[window_series_])
        if (!gpu_.series[si].samples[k].null) add_rows(o, si, gpu_.series[si].samples[k]);
    }
  }

  // The window's systems in here_[0, in_use), each with its groups' fractions of the window
  // (entries are reused, their vectors' room kept).
  size_t gather(size_t o, double window) {
    GroupingSystems& out = *groupings_[o];
    size_t in_use = 0;
    for (const auto& [group, weight] : groups_) {
      GroupRole& role = roles_[o][group];
      const TimelineGroup& gr = gpu_.groups[group];
      if (!role.registered) {
        role.registered = true;
        auto& known = out.unknowns[*role.system];
        if (role.joint && role.untracked)
          known.emplace(kSharedUntracked, UnknownInfo{"", "(untracked)", "(untracked)", 0});
        else
          known.emplace(role.name, UnknownInfo{role.joint ? gpu_.jobs[gr.job].job_id : "",
                                               out.by_type ? gr.layer_type : gr.layer, gr.layer_type, gr.forward});
      }
      auto h = std::find_if(here_.begin(), here_.begin() + static_cast<std::ptrdiff_t>(in_use),
                            [&](const SystemHere& x) { return x.system == role.system || *x.system == *role.system; });
      if (h == here_.begin() + static_cast<std::ptrdiff_t>(in_use)) {
        if (in_use == here_.size()) here_.emplace_back();
        h = here_.begin() + static_cast<std::ptrdiff_t>(in_use++);
        h->system = role.system;
        h->joint = role.joint;
        h->fractions.clear();
        h->jobs.clear();
        h->event_time = 0;
      }
      if (role.joint) {
        if (std::find(h->jobs.begin(), h->jobs.end(), gr.job) == h->jobs.end()) h->jobs.push_back(gr.job);
        if (role.untracked) continue;  // the untracked time of a joint system is the union's, below
        h->event_time += static_cast<double>(weight);
      }
      h->fractions.push_back({&role, group, static_cast<double>(weight) / window});
    }
    return in_use;
  }

  // The window's fractions made ready for a row: a joint system's untracked time added, and the
  // fractions scaled back where hand-overs counted twice; false when two processes ran at once,
  // of two jobs or of one (time slicing is the model: such a window is not).
  bool settle(SystemHere& h, const WindowSpan& span) {
    if (h.joint) {
      const double untracked =
          std::max(0.0, static_cast<double>(span_union(gpu_, h.jobs, span.start, span.end)) * span.scale - h.event_time);
      if (untracked > 0) h.fractions.push_back({nullptr, 0, untracked / span.window});
    }
    if (ran_at_once(span)) return false;
    double total = 0;
    for (const auto& f : h.fractions) total += f.fraction;
    // (A job's own rows within the solver's slack are taken as they are, as they always were.)
    if (total > (h.joint ? 1.0 : 1.0 + DeconvolveLimits::kSumSlack))
      for (auto& f : h.fractions) f.fraction /= total;
    return true;
  }

  // events_ran_at_once for the window, found once per span (the series of a window class share it).
  bool ran_at_once(const WindowSpan& span) {
    if (!at_once_known_ || at_once_start_ != span.start || at_once_end_ != span.end) {
      at_once_ = events_ran_at_once(gpu_, window_events_, span.start, span.end);
      at_once_known_ = true;
      at_once_start_ = span.start;
      at_once_end_ = span.end;
    }
    return at_once_;
  }

  // A grouping that keeps rows: series si's window into its systems.
  void add_rows(size_t o, size_t si, const TimelineSample& sample) {
    GroupingSystems& out = *groupings_[o];
    const TimelineSeries& series = gpu_.series[si];
    const WindowSpan span = span_of(series, sample);
    const std::string key = sample_key_integer((static_cast<int64_t>(g_) << 44) + sample.ts_ms);
    const size_t in_use = gather(o, span.window);
    for (size_t i = 0; i < in_use; ++i) {
      SystemHere& h = here_[i];
      Found& at = found_for(o, h.system, si);
      SystemNotes& note = *at.note;
      if (!note.failed.empty()) continue;
      if (!series.window_known(sample)) {  // no row: its window is not the one placed
        if (shift_ == 0) ++note.off_grid_windows;
        continue;
      }
      if (h.joint && span.instant) note.shared_gauge = true;
      if (!settle(h, span)) {
        if (shift_ == 0) ++note.concurrent_windows;
        continue;
      }
      if (!at.data) {
        auto [it, added] = out.systems.try_emplace(SystemKey{*h.system, series.metric});
        if (added) {
          const auto b = bounds_.find(series.metric);
          if (b != bounds_.end()) it->second.set_bounds(b->second.lower, b->second.upper);
          // Room for a row per group in each of the series' windows (at most kRowsReserved):
          // grown by doubling instead, the rows of a minute are copied and paged in again and again.
          it->second.reserve(series.samples.size() * std::min(gpu_.groups.size(), kRowsReserved));
        }
        at.data = &it->second;
      }
      DeconvolveData& data = *at.data;
      try {
        rows_.clear();
        for (const auto& part : h.fractions) {
          uint32_t* cached = part.role ? &part.role->ids[si] : nullptr;
          const uint32_t id = cached && *cached != kNoId
                                  ? *cached
                                  : data.unknown(part.role ? part.role->name : kSharedUntracked);
          if (cached) *cached = id;
          rows_.emplace_back(id, std::min(1.0, part.fraction));
        }
        data.add_sample(key, rows_, sample.value);
      } catch (const std::exception& e) {  // no fit for this system; the others go on
        note.failed = failure_of(out, *h.system, e);
        out.systems.erase(SystemKey{*h.system, series.metric});
        at.data = nullptr;
        continue;
      }
    }
  }

  // A sums-only grouping: window k once for the series of `part` (same windows to the bit),
  // each system's row summed once with every value (stats/shared_weights_sums.hpp).
  void add_shared(size_t o, const std::vector<size_t>& part, size_t k) {
    GroupingSystems& out = *groupings_[o];
    present_.clear();
    for (size_t si : part)
      if (!gpu_.series[si].samples[k].null) present_.push_back(si);
    if (present_.empty()) return;
    const TimelineSample& first = gpu_.series[present_[0]].samples[k];
    const WindowSpan span = span_of(gpu_.series[present_[0]], first);
    const size_t in_use = gather(o, span.window);
    for (size_t i = 0; i < in_use; ++i) {
      SystemHere& h = here_[i];
      // The series that take the window, each with its note (one that failed takes no more; one
      // whose window is not known there counts it left out, as add_rows does).
      takers_.clear();
      taker_notes_.clear();
      for (size_t si : present_)
        if (SystemNotes* note = found_for(o, h.system, si).note; note->failed.empty()) {
          if (!gpu_.series[si].window_known(gpu_.series[si].samples[k])) {
            if (shift_ == 0) ++note->off_grid_windows;
            continue;
          }
          takers_.push_back(si);
          taker_notes_.push_back(note);
        }
      if (takers_.empty()) continue;
      if (h.joint && span.instant)
        for (SystemNotes* note : taker_notes_) note->shared_gauge = true;
      if (!settle(h, span)) {
        if (shift_ == 0)
          for (SystemNotes* note : taker_notes_) ++note->concurrent_windows;
        continue;
      }
      values_.clear();
      size_t kept = 0;
      for (size_t t = 0; t < takers_.size(); ++t) {
        const double value = gpu_.series[takers_[t]].samples[k].value;
        if (!h.fractions.empty() && !std::isfinite(value)) {
          taker_notes_[t]->failed = failure_of(out, *h.system, argument_error("value", "must be finite"));
          continue;
        }
        takers_[kept] = takers_[t];
        taker_notes_[kept++] = taker_notes_[t];
        values_.push_back(value);
      }
      takers_.resize(kept);
      taker_notes_.resize(kept);
      if (takers_.empty()) continue;
      auto to = std::find_if(shared_in_[o].begin(), shared_in_[o].end(), [&](const SharedRows& s) {
        return (s.system == h.system || *s.system == *h.system) && s.series == takers_;
      });
      if (to == shared_in_[o].end()) {
        shared_in_[o].push_back({h.system, takers_, SharedWeightsSums(takers_.size()),
                                 std::vector<uint32_t>(gpu_.groups.size(), kNoId)});
        to = shared_in_[o].end() - 1;
      }
      try {
        add_shared_row(o, *to, h, first.ts_ms);
      } catch (const std::exception& e) {  // no fit for this system and these series; the others go on
        for (SystemNotes* note : taker_notes_) note->failed = failure_of(out, *h.system, e);
        continue;
      }
    }
  }

  // System h's row of the window into the shared sums `to`, with values_ (one per series of to).
  void add_shared_row(size_t o, SharedRows& to, const SystemHere& h, int64_t ts_ms) {
    GroupingSystems& out = *groupings_[o];
    if (h.fractions.empty()) return;  // (a window no part of which is the system's is no row)
    sums_row_.clear();
    for (const auto& part : h.fractions) {
      uint32_t& index = part.role ? to.index_of_group[part.group] : to.untracked;
      if (index == kNoId) {
        const std::string& name = part.role ? part.role->name : kSharedUntracked;
        const auto known = out.unknowns[*h.system].find(name);
        index = static_cast<uint32_t>(
            to.sums.unknown(name, known == out.unknowns[*h.system].end() ? "" : known->second.layer_type));
        for (size_t si : to.series) {
          auto& met = unknowns_met_[o][SystemKey{*h.system, gpu_.series[si].metric}];
          if (!met.names.insert(name).second) continue;
          met.in_order.push_back(name);
          if (met.names.size() > DeconvolveLimits::kMaxUnknowns) {
            SystemNotes& note = *found_for(o, h.system, si).note;
            if (note.failed.empty()) note.failed = too_many_unknowns();
          }
        }
      }
      sums_row_.emplace_back(index, std::min(1.0, part.fraction));
    }
    for (const auto& entry : sums_row_)
      if (!(entry.second >= 0 && entry.second <= 1 + DeconvolveLimits::kWeightSlack))
        throw argument_error("weight", "must be between 0 and 1 (the fraction of the sample's window)");
    double weight_sum = 0;
    size_t kept = 0;
    for (const auto& entry : sums_row_)
      if (entry.second > 0) {
        weight_sum += entry.second;
        if (weight_sum > 1 + DeconvolveLimits::kSumSlack)
          throw argument_error("weight", "sums to " + number_text(weight_sum) + " over the rows of sample " +
                                             sample_key_label(sample_key_integer((static_cast<int64_t>(g_) << 44) + ts_ms)) +
                                             ": the weights of a sample are fractions of its window, at most 1 in all");
        sums_row_[kept++] = entry;
      }
    sums_row_.resize(kept);
    const double rest = 1 - weight_sum;
    if (rest > DeconvolveLimits::kRestThreshold) sums_row_.emplace_back(to.sums.unknown(DeconvolveData::kRest, ""), rest);
    // Each unknown once, in index order (one named twice in the window: its weights summed).
    sort_by_unknown(sums_row_, to.sums.unknowns());
    kept = 0;
    for (size_t i = 0; i < sums_row_.size(); ++i) {
      if (kept > 0 && sums_row_[kept - 1].first == sums_row_[i].first)
        sums_row_[kept - 1].second += sums_row_[i].second;
      else
        sums_row_[kept++] = sums_row_[i];
    }
    sums_row_.resize(kept);
    to.sums.add_row(sums_row_, values_.data());
  }

  // The row's entries in the order std::sort gives them (by index, then weight): by a counting
  // sort on the index where the system's unknowns are few beside the entries (a window's row
  // names most of them), each index's few weights then put in order; std::sort otherwise. The
  // sort was a fifth of the retention step's time.
  void sort_by_unknown(std::vector<std::pair<size_t, double>>& row, size_t unknowns) {
    if (unknowns > 4 * row.size() + 16) {
      std::sort(row.begin(), row.end());
      return;
    }
    bucket_ends_.assign(unknowns + 1, 0);
    for (const auto& entry : row) ++bucket_ends_[entry.first + 1];
    for (size_t i = 1; i <= unknowns; ++i) bucket_ends_[i] += bucket_ends_[i - 1];
    sorted_row_.resize(row.size());
    for (const auto& entry : row) sorted_row_[bucket_ends_[entry.first]++] = entry;
    for (size_t i = 0, from = 0; i < unknowns; from = bucket_ends_[i++])
      for (size_t k = from + 1; k < bucket_ends_[i]; ++k)
        for (size_t j = k; j > from && sorted_row_[j].second < sorted_row_[j - 1].second; --j)
          std::swap(sorted_row_[j], sorted_row_[j - 1]);
    row.swap(sorted_row_);
  }

  // The sums-only groupings' sums, per system and metric (those that failed left out): its
  // unknowns first, in the order its windows met them, then its parts' sums.
  void keep_sums() {
    for (size_t o = 0; o < groupings_.size(); ++o)
      for (const SharedRows& shared : shared_in_[o])
        for (size_t c = 0; c < shared.series.size(); ++c) {
          const SystemKey key{*shared.system, gpu_.series[shared.series[c]].metric};
          if (!groupings_[o]->notes[key].failed.empty()) continue;
          auto [into, first_part] = groupings_[o]->states.try_emplace(key);
          if (first_part) {
            const auto& known = groupings_[o]->unknowns[key.system];
            for (const std::string& name : unknowns_met_[o][key].in_order) {
              const auto info = known.find(name);
              into->second.unknown(name, info == known.end() ? "" : info->second.layer_type);
            }
          }
          into->second.merge(shared.sums.state(c));
        }
  }

  const GpuTimeline& gpu_;
  const size_t g_;
  const int shift_;
  const std::map<std::string, Bounds>& bounds_;
  const std::vector<GroupingSystems*>& groupings_;
  std::vector<std::vector<GroupRole>> roles_;  // per grouping, per group of the timeline
  WindowClasses classes_;
  std::vector<std::vector<std::vector<size_t>>> exact_parts_;  // per swept series, its class's parts
  // The window being gathered: the swept series' sample, its groups in the order they come
  // (group_at_: a group's index in groups_) and the events that overlap it.
  const TimelineSample* window_ = nullptr;
  size_t window_series_ = 0;
  std::vector<std::pair<uint32_t, int64_t>> groups_;
  std::vector<uint32_t> group_at_;
  std::vector<size_t> window_events_;
  // ran_at_once's answer for the window, and the span it was found for.
  bool at_once_known_ = false, at_once_ = false;
  int64_t at_once_start_ = 0, at_once_end_ = 0;
  std::vector<SystemHere> here_;
  std::vector<std::vector<Found>> found_in_;
  std::vector<std::vector<SharedRows>> shared_in_;
  std::vector<std::map<SystemKey, UnknownsMet>> unknowns_met_;
  // Per window, reused: a system's row, and the series that take a shared window, their notes
  // (std::map's entries stay put) and values.
  std::vector<std::pair<uint32_t, double>> rows_;
  std::vector<std::pair<size_t, double>> sums_row_, sorted_row_;
  std::vector<size_t> bucket_ends_;  // sort_by_unknown's counts, then each index's end
  std::vector<size_t> present_, takers_;
  std::vector<SystemNotes*> taker_notes_;
  std::vector<double> values_;
};

}  // namespace

void add_timeline_systems(const GpuTimeline& gpu, size_t g, int shift, const std::map<std::string, Bounds>& bounds,
                          const JobSharing& sharing, const std::vector<GroupingSystems*>& groupings) {
  TimelineRows(gpu, g, shift, bounds, sharing, groupings).add();
}

void build_systems(sqlite3* db, const std::vector<std::string>& gpus, int shift,
                   const std::map<std::string, Bounds>& bounds, const JobSharing& sharing,
                   const std::vector<GroupingSystems*>& groupings, int64_t horizon_ms,
                   std::optional<int64_t> through_ms) {
  for (size_t g = 0; g < gpus.size(); ++g)
    add_timeline_systems(read_gpu_timeline(db, gpus[g], std::nullopt, through_ms, shift, horizon_ms), g, shift, bounds,
                         sharing, groupings);
}

std::map<SystemKey, DeconvolveData> build_systems(sqlite3* db, const std::vector<std::string>& gpus, bool by_type,
                                                  int shift, const std::map<std::string, Bounds>& bounds,
                                                  const JobSharing& sharing, SystemUnknowns& unknowns,
                                                  std::map<SystemKey, SystemNotes>& notes, int64_t horizon_ms) {
  GroupingSystems one;
  one.by_type = by_type;
  one.unknowns.swap(unknowns);
  one.notes.swap(notes);
  build_systems(db, gpus, shift, bounds, sharing, {&one}, horizon_ms);
  unknowns.swap(one.unknowns);
  notes.swap(one.notes);
  return std::move(one.systems);
}

}  // namespace pp
