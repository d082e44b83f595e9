// The estimator's linear systems (estimator_systems.hpp): the interval sweep of each GPU's
// timeline turned into rows, per system and metric.
#include "attribution/estimator_systems.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "attribution/gpu_timeline.hpp"
#include "attribution/interval_sweep.hpp"
#include "core/statement.hpp"
#include "stats/sample_key.hpp"

namespace pp {

std::map<std::string, Bounds> metric_bounds(sqlite3* db) {
  std::map<std::string, Bounds> out;
  Statement read(db, "SELECT metric, lower, upper FROM main.pp_metric_bounds");
  while (read.step())
    out[read.column_text(0)] = {read.column_null(1) ? -INFINITY : read.column_double(1),
                                read.column_null(2) ? INFINITY : read.column_double(2)};
  return out;
}


namespace {

// Two jobs' events that overlap by at most this much hand the GPU over rather than run at once:
// each process turns its CUDA event times into unix time with its own anchor, some tens of us
// apart. (The overlap is then counted twice; the window's fractions are scaled back to 1.)
constexpr int64_t kHandOverNs = 100000;


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

// Whether events of two different jobs run at the same time (longer than a hand-over) within
// [start, end).
bool jobs_ran_at_once(const GpuTimeline& gpu, std::vector<size_t>& events, int64_t start, int64_t end) {
  std::sort(events.begin(), events.end(), [&](size_t a, size_t b) { return gpu.events[a].start < gpu.events[b].start; });
  std::vector<std::pair<uint32_t, int64_t>> last_end;  // per job, the latest end so far
  for (size_t i : events) {
    const TimelineEvent& e = gpu.events[i];
    const int64_t from = std::max(e.start, start), to = std::min(e.end, end);
    if (to <= from) continue;
    bool mine = false;
    for (auto& [job, until] : last_end) {
      if (job == e.job) {
        until = std::max(until, to);
        mine = true;
      } else if (std::min(until, to) - from > kHandOverNs) {
        return true;
      }
    }
    if (!mine) last_end.emplace_back(e.job, to);
  }
  return false;
}

// Length of [start, end) covered by the spans of the given jobs on this GPU.
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

// One system's part of a window.
struct SystemHere {
  const std::string* system = nullptr;
  bool joint = false;
  struct Part {
    const std::string* unknown;
    uint32_t* id;  // its index in the system, once known (nullptr: looked up each time)
    double fraction;  // of the window
  };
  std::vector<Part> fractions;
  std::vector<uint32_t> jobs;  // a joint system's jobs in the window
  double event_time = 0;       // and the time their events cover (ns, as weighed)
};

}  // namespace

void add_timeline_systems(const GpuTimeline& gpu, size_t g, int shift, const std::map<std::string, Bounds>& bounds,
                          const JobSharing& sharing, const std::vector<GroupingSystems*>& groupings) {
  {
    // Per grouping, each group's role (the sweep below is shared by the groupings).
    std::vector<std::vector<GroupRole>> all_roles(groupings.size(), std::vector<GroupRole>(gpu.groups.size()));
    for (size_t o = 0; o < groupings.size(); ++o) {
      const bool by_type = groupings[o]->by_type;
      for (size_t i = 0; i < gpu.groups.size(); ++i) {
        const TimelineGroup& gr = gpu.groups[i];
        GroupRole& role = all_roles[o][i];
        role.system = &sharing.system(gpu.jobs[gr.job].job_id);
        role.joint = sharing.joint(*role.system);
        role.untracked = i == gpu.jobs[gr.job].untracked_group;
        role.ids.assign(gpu.series.size(), kNoId);
        if (role.joint && role.untracked) continue;
        const std::string unknown = (by_type ? gr.layer_type : gr.layer) + "|" + std::to_string(gr.forward);
        role.name = role.joint ? gpu.jobs[gr.job].job_id + kJobSeparator + unknown : unknown;
      }
    }
    const TimelineSample* current = nullptr;
    size_t current_series = 0;
    std::vector<std::pair<uint32_t, int64_t>> groups;  // the window's, in the order they come
    std::vector<uint32_t> group_at(gpu.groups.size(), UINT32_MAX);  // group -> its index in groups
    std::vector<size_t> window_events;
    std::vector<SystemHere> here;
    std::vector<std::pair<uint32_t, double>> rows;  // one system's part of the window
    // Per grouping, the note and system of each (system, series) met, so that a window finds
    // them without a SystemKey's strings and two map searches (std::map's entries stay put).
    struct Found {
      const std::string* system;
      size_t series;
      SystemNotes* note;
      DeconvolveData* data;  // nullptr: not made yet
    };
    std::vector<std::vector<Found>> found_in(groupings.size());
    auto flush_grouping = [&](GroupingSystems& out, std::vector<GroupRole>& roles, std::vector<Found>& found,
                              const std::string& key) {
      auto register_unknown = [&](GroupRole& role, const TimelineGroup& gr) {
        role.registered = true;
        auto& known = out.unknowns[*role.system];
        if (role.joint && role.untracked)
          known.emplace(kSharedUntracked, UnknownInfo{"", "(untracked)", "(untracked)", 0});
        else
          known.emplace(role.name, UnknownInfo{role.joint ? gpu.jobs[gr.job].job_id : "",
                                               out.by_type ? gr.layer_type : gr.layer, gr.layer_type, gr.forward});
      };
      const TimelineSeries& series = gpu.series[current_series];
      const double window = std::max(series.window_of(*current), 1.0);
      const bool instant = series.kind == TimelineSeries::kInstant;
      // The span of time the sample stands for, as the sweep took it (interval_sweep.hpp).
      const int64_t half = kInstantSpreadNs / 2,
                    window_int = static_cast<int64_t>(std::llround(series.window_of(*current)));
      const int64_t start = instant ? current->end_ns - half : current->end_ns - window_int;
      const int64_t end = instant ? current->end_ns + half : current->end_ns;
      const double scale = instant ? static_cast<double>(std::max<int64_t>(window_int, 1)) / kInstantSpreadNs : 1.0;
      // The window's systems in here[0, in_use): entries are reused, their vectors' room kept.
      size_t in_use = 0;
      for (const auto& [group, weight] : groups) {
        GroupRole& role = roles[group];
        const TimelineGroup& gr = gpu.groups[group];
        if (!role.registered) register_unknown(role, gr);
        auto h = std::find_if(here.begin(), here.begin() + static_cast<std::ptrdiff_t>(in_use),
                              [&](const SystemHere& x) { return x.system == role.system || *x.system == *role.system; });
        if (h == here.begin() + static_cast<std::ptrdiff_t>(in_use)) {
          if (in_use == here.size()) here.emplace_back();
          h = here.begin() + static_cast<std::ptrdiff_t>(in_use++);
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
        h->fractions.push_back({&role.name, &role.ids[current_series], static_cast<double>(weight) / window});
      }
      for (size_t i = 0; i < in_use; ++i) {
        SystemHere& h = here[i];
        auto at = std::find_if(found.begin(), found.end(),
                               [&](const Found& f) { return f.system == h.system && f.series == current_series; });
        if (at == found.end()) {
          found.push_back({h.system, current_series, &out.notes[SystemKey{*h.system, series.metric}], nullptr});
          at = found.end() - 1;
        }
        SystemNotes& note = *at->note;
        if (!note.failed.empty()) continue;
        if (h.joint) {
          if (instant) note.shared_gauge = true;
          const double untracked =
              std::max(0.0, static_cast<double>(span_union(gpu, h.jobs, start, end)) * scale - h.event_time);
          if (untracked > 0) h.fractions.push_back({&kSharedUntracked, nullptr, untracked / window});
          // Time-slicing is the model: a window in which two of the jobs ran at once is not.
          if (h.jobs.size() > 1 && jobs_ran_at_once(gpu, window_events, start, end)) {
            if (shift == 0) ++note.concurrent_windows;
            continue;
          }
          double total = 0;
          for (const auto& f : h.fractions) total += f.fraction;
          if (total > 1)  // hand-overs counted twice
            for (auto& f : h.fractions) f.fraction /= total;
        }
        if (!at->data) {
          auto [it, added] = out.systems.try_emplace(SystemKey{*h.system, series.metric});
          if (added) {
            if (out.sums_only) it->second.keep_sums_only();
            const auto b = bounds.find(series.metric);
            if (b != bounds.end()) it->second.set_bounds(b->second.lower, b->second.upper);
            // Room for a row per group in each of the series' windows (at most kRowsReserved):
            // grown by doubling instead, the rows of a minute are copied and paged in again and again.
            it->second.reserve(series.samples.size() * std::min(gpu.groups.size(), kRowsReserved));
          }
          at->data = &it->second;
        }
        DeconvolveData& data = *at->data;
        try {
          rows.clear();
          for (const auto& part : h.fractions) {
            const uint32_t id = part.id && *part.id != kNoId ? *part.id : data.unknown(*part.unknown);
            if (part.id) *part.id = id;
            rows.emplace_back(id, std::min(1.0, part.fraction));
          }
          data.add_sample(key, rows, current->value);
        } catch (const std::exception& e) {  // no fit for this system; the others go on
          note.failed = out.unknowns[*h.system].size() >= DeconvolveLimits::kMaxUnknowns
                            ? "more than " + std::to_string(DeconvolveLimits::kMaxUnknowns) +
                                  " layers and directions in one system (layer_type_estimates has fewer)"
                            : std::string("its system could not be solved (") + e.what() + ")";
          out.systems.erase(SystemKey{*h.system, series.metric});
          at->data = nullptr;
          continue;
        }
        if (series.off_own_grid > 0) note.windows_unknown = true;
      }
    };
    // Series whose windows are the same (a GPU's PROF metrics, scraped together) are swept once:
    // the first of each such class is swept, and each window's rows go to every series of the
    // class, with that series' value (each system still gets its samples in time order).
    const WindowClasses classes = window_classes(gpu);
    const TimelineSample* window = nullptr;  // the swept series' sample whose rows are gathered
    size_t window_series = 0;
    auto flush = [&] {
      if (!window) return;
      const auto k = static_cast<size_t>(window - gpu.series[window_series].samples.data());
      for (size_t si : classes.class_of[window_series]) {
        current = &gpu.series[si].samples[k];
        current_series = si;
        if (current->null) continue;
        const std::string key = sample_key_integer((static_cast<int64_t>(g) << 44) + current->ts_ms);
        for (size_t o = 0; o < groupings.size(); ++o) flush_grouping(*groupings[o], all_roles[o], found_in[o], key);
      }
    };
    sweep_overlaps_of(gpu, classes.swept, [&](int64_t event, uint32_t group, size_t series, const TimelineSample& sample, int64_t weight) {
      if (&sample != window) {
        flush();
        window = &sample;
        window_series = series;
        for (const auto& entry : groups) group_at[entry.first] = UINT32_MAX;
        groups.clear();
        window_events.clear();
      }
      if (event >= 0) window_events.push_back(static_cast<size_t>(event));
      uint32_t& at = group_at[group];
      if (at == UINT32_MAX) {
        at = static_cast<uint32_t>(groups.size());
        groups.emplace_back(group, weight);
      } else {
        groups[at].second += weight;
      }
    });
    flush();
  }
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
