// pp_estimates: the estimator over every job of the database, as the views layer_estimates and
// layer_type_estimates show it (docs/reference/views.md).
//
//   SELECT job_id, layer_type, forward, metric, estimate, lower90, upper90, identified
//     FROM pp_estimates('layer_type');
//
// Argument (HIDDEN column grouping): 'layer' (each layer and direction is an unknown) or
// 'layer_type' (each layer type and direction). Per (job, metric), every aligned window of the
// job's GPUs gives one row of the linear system (pp_fractions' rows, pp_deconvolve's method and
// bounds from pp_metric_bounds). The system is solved three times: with each window where the
// alignment puts it, and moved by the uncertainty of the GPU's offset (pp_alignment.timing_ns
// over all its stretches, read_gpu_timeline) either way; the estimate is the first, the 90% interval holds all three, and `identified`
// is judged on that interval, so timing uncertainty widens intervals instead of producing a
// confident wrong number.
// Columns: job_id, layer (NULL per type), layer_type, forward, metric, estimate, stderr,
//   lower90, upper90, windows, identified (0/1), condition (of the scaled system).
//
// INNOCUOUS: it reads only tables of the database it runs in.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "attribution/attribution_tables.hpp"
#include "attribution/gpu_timeline.hpp"
#include "attribution/interval_sweep.hpp"
#include "core/sql_values.hpp"
#include "core/statement.hpp"
#include "core/table_function.hpp"
#include "stats/deconvolve.hpp"
#include "stats/sample_key.hpp"

namespace pp {
namespace {

const std::vector<ArgumentSpec> kArguments = {{"grouping", true}};
constexpr int kShifts[] = {0, -1, 1};

struct Bounds {
  double lower = -INFINITY, upper = INFINITY;
};

std::map<std::string, Bounds> metric_bounds(sqlite3* db) {
  std::map<std::string, Bounds> out;
  Statement read(db, "SELECT metric, lower, upper FROM main.pp_metric_bounds");
  while (read.step())
    out[read.column_text(0)] = {read.column_null(1) ? -INFINITY : read.column_double(1),
                                read.column_null(2) ? INFINITY : read.column_double(2)};
  return out;
}

// One system: a job and a metric.
struct SystemKey {
  std::string job_id, metric;
  bool operator<(const SystemKey& o) const { return std::tie(job_id, metric) < std::tie(o.job_id, o.metric); }
};

// The rows of every system for one timing shift, from every aligned GPU.
std::map<SystemKey, DeconvolveData> build_systems(sqlite3* db, const std::vector<std::string>& gpus, bool by_type,
                                                  int shift, const std::map<std::string, Bounds>& bounds,
                                                  std::map<std::string, std::string>& layer_types,
                                                  std::set<SystemKey>& window_unknown) {
  std::map<SystemKey, DeconvolveData> systems;
  for (size_t g = 0; g < gpus.size(); ++g) {
    const GpuTimeline gpu = read_gpu_timeline(db, gpus[g], std::nullopt, std::nullopt, shift);
    const TimelineSample* current = nullptr;
    size_t current_series = 0;
    std::vector<std::pair<uint32_t, int64_t>> groups;
    auto flush = [&] {
      if (!current || current->null) return;
      const TimelineSeries& series = gpu.series[current_series];
      const std::string key = sample_key_integer((static_cast<int64_t>(g) << 44) + current->ts_ms);
      const double window = std::max(series.window_ns, 1.0);
      // Per group, then summed per unknown (a layer type gathers several groups).
      std::map<std::pair<uint32_t, std::string>, double> weights;  // (job, unknown) -> fraction
      for (const auto& [group, weight] : groups) {
        const TimelineGroup& gr = gpu.groups[group];
        const std::string unknown = (by_type ? gr.layer_type : gr.layer) + "|" + std::to_string(gr.forward);
        layer_types.emplace(unknown, gr.layer_type);
        weights[{gr.job, unknown}] += static_cast<double>(weight) / window;
      }
      for (const auto& [job_unknown, fraction] : weights) {
        const std::string& job_id = gpu.jobs[job_unknown.first].job_id;
        auto [it, added] = systems.try_emplace(SystemKey{job_id, series.metric});
        if (added) {
          const auto b = bounds.find(series.metric);
          if (b != bounds.end()) it->second.set_bounds(b->second.lower, b->second.upper);
        }
        it->second.add(key, job_unknown.second, std::min(1.0, fraction), current->value);
        if (series.off_own_grid > 0) window_unknown.insert(it->first);
      }
    };
    sweep_overlaps(gpu, [&](int64_t, uint32_t group, size_t series, const TimelineSample& sample, int64_t weight) {
      if (&sample != current) {
        flush();
        current = &sample;
        current_series = series;
        groups.clear();
      }
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& p) { return p.first == group; });
      if (it == groups.end())
        groups.emplace_back(group, weight);
      else
        it->second += weight;
    });
    flush();
  }
  return systems;
}

struct EstimatesCursor : RowsCursor {
  static constexpr const char* kName = "pp_estimates";
  static constexpr const char* kSchema =
      "CREATE TABLE x(job_id TEXT, layer TEXT, layer_type TEXT, forward INTEGER, metric TEXT, estimate REAL, "
      "stderr REAL, lower90 REAL, upper90 REAL, windows INTEGER, identified INTEGER, condition REAL, "
      "grouping HIDDEN)";
  static constexpr int kFirstArgument = 12;
  static constexpr bool kDoesIo = false;
  using RowsCursor::RowsCursor;

  static int plan(sqlite3_index_info* info) {
    const int rc = plan_arguments(info, kFirstArgument, kArguments);
    if (rc != SQLITE_OK) return rc;
    info->estimatedRows = 1000;
    info->estimatedCost = 1e7;
    return SQLITE_OK;
  }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, kArguments.size());
    keep_arguments(args);
    const std::string grouping = required_text(args[0], "grouping");
    if (grouping != "layer" && grouping != "layer_type")
      throw argument_error("grouping", "must be 'layer' or 'layer_type', got '" + grouping + "'");
    const bool by_type = grouping == "layer_type";
    sqlite3* db = connection->db();
    std::vector<std::string> gpus;
    {
      Statement list(db, "SELECT DISTINCT uuid FROM main.pp_alignment ORDER BY uuid");
      while (list.step()) gpus.push_back(list.column_text(0));
    }
    const auto bounds = metric_bounds(db);
    std::map<std::string, std::string> layer_types;  // unknown -> layer type
    // One shift's systems at a time: the central results, then the variants' (only their
    // intervals are kept).
    std::map<SystemKey, DeconvolveResult> central;
    std::map<SystemKey, std::vector<DeconvolveResult>> variants;
    std::set<SystemKey> window_unknown;  // systems with samples whose window is not known
    for (int shift : kShifts) {
      for (auto& [key, data] : build_systems(db, gpus, by_type, shift, bounds, layer_types, window_unknown)) {
        DeconvolveResult r = deconvolve(data);
        if (shift == 0)
          central.emplace(key, std::move(r));
        else
          variants[key].push_back(std::move(r));
      }
    }
    std::vector<std::vector<SqlValue>> rows;
    for (const auto& [key, result] : central) {
      const DeconvolveResult hull = deconvolve_hull(result, variants[key]);
      // GPU_UTIL samples off their driver's grid were fitted as DCGM windows, which they are not:
      // the fit says nothing about how far that moves the estimate, so it is never identified.
      const bool windows_known = window_unknown.count(key) == 0;
      for (const DeconvolveUnknown& u : hull.unknowns) {
        if (u.name == DeconvolveData::kRest) continue;
        const size_t bar = u.name.rfind('|');
        const std::string name = u.name.substr(0, bar);
        const int64_t forward = std::stoll(u.name.substr(bar + 1));
        auto optional = [](const std::optional<double>& v) { return v ? SqlValue(*v) : SqlValue(); };
        std::optional<double> lower90 = u.lower90, upper90 = u.upper90;
        if (!windows_known) {  // and the interval is only what the metric's bounds say
          const auto b = bounds.find(key.metric);
          lower90 = b != bounds.end() && std::isfinite(b->second.lower) ? std::optional<double>(b->second.lower) : std::nullopt;
          upper90 = b != bounds.end() && std::isfinite(b->second.upper) ? std::optional<double>(b->second.upper) : std::nullopt;
        }
        rows.push_back({key.job_id, by_type ? SqlValue() : SqlValue(name), layer_types[u.name], forward, key.metric,
                        optional(u.estimate), optional(u.std_error), optional(lower90), optional(upper90), u.n,
                        int64_t{u.identified && windows_known ? 1 : 0}, optional(hull.condition_scaled)});
      }
    }
    set_rows(std::move(rows));
  }
};

}  // namespace

const sqlite3_module kEstimatesModule = table_function_module<EstimatesCursor>();

}  // namespace pp
