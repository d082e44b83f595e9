// pp_fractions: the estimator's input for one GPU, from the aligned windows: for every window of
// every metric that overlaps a job's span, the fraction of it each (layer, direction) of that
// job ran, and the rest of the job's part of it as '(untracked)'.
//
//   SELECT job_id, metric, ts_ms, layer, forward, fraction, value FROM pp_fractions('GPU-5d1c...');
//   SELECT * FROM pp_fractions('GPU-5d1c...', 1);   -- every window moved by the timing uncertainty
//
// Arguments (HIDDEN columns uuid, timing_shift):
//   uuid          the GPU (required)
//   timing_shift  optional, -1, 0 (default) or 1: windows moved by that many times the
//                 uncertainty of its offset over its job's stretches (read_gpu_timeline); the
//                 estimate views solve all three and widen the intervals by how far they move
// Columns: job_id, metric, ts_ms (the stored time: with the GPU it names the window), layer,
//   layer_type, forward, fraction (of the window; 1 for an instant metric), value.
// A window's part outside the job's span has no row, so pp_deconvolve gives it its own '(rest)'.
// The view pp_window_fractions is this table over every aligned GPU (docs/reference/views.md).
//
// INNOCUOUS: it reads only tables of the database it runs in.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "attribution/attribution_tables.hpp"
#include "attribution/gpu_timeline.hpp"
#include "attribution/interval_sweep.hpp"
#include "attribution/schema.hpp"
#include "core/sql_values.hpp"
#include "core/table_function.hpp"

namespace pp {
namespace {

const std::vector<ArgumentSpec> kFractionArguments = {{"uuid", true}, {"timing_shift", false}, {"database", false}};

struct FractionsCursor : RowsCursor {
  static constexpr const char* kName = "pp_fractions";
  static constexpr const char* kSchema =
      "CREATE TABLE x(job_id TEXT, metric TEXT, ts_ms INTEGER, layer TEXT, layer_type TEXT, forward INTEGER, "
      "fraction REAL, value REAL, uuid HIDDEN, timing_shift HIDDEN, database HIDDEN)";
  static constexpr int kFirstArgument = 8;
  static constexpr bool kDirectOnly = false;
  using RowsCursor::RowsCursor;

  static int plan(sqlite3_index_info* info) {
    const int rc = plan_arguments(info, kFirstArgument, kFractionArguments);
    if (rc != SQLITE_OK) return rc;
    info->estimatedRows = 100000;
    info->estimatedCost = 1e6;
    return SQLITE_OK;
  }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, kFractionArguments.size());
    keep_arguments(args);
    refuse_other_database(connection->db(), args[2]);
    const std::string uuid = required_text(args[0], "uuid");
    int shift = 0;
    if (args[1] && sqlite3_value_type(args[1]) != SQLITE_NULL) {
      const double d = required_double(args[1], "timing_shift");
      if (d != -1 && d != 0 && d != 1) throw argument_error("timing_shift", "must be -1, 0 or 1");
      shift = static_cast<int>(d);
    }
    const GpuTimeline gpu =
        read_gpu_timeline(connection->db(), uuid, std::nullopt, std::nullopt, shift,
                          timing_horizon_ms(connection->settings().get_int("event_retention_minutes")));
    // The sweep visits a sample's pairs one after another: their weights are summed per group
    // and written out when the next sample begins.
    std::vector<std::vector<SqlValue>> rows;
    const TimelineSample* current = nullptr;
    size_t current_series = 0;
    std::vector<std::pair<uint32_t, int64_t>> groups;  // (group, weight) of the current sample
    auto flush = [&] {
      if (!current || current->null) return;
      const double window = std::max(gpu.series[current_series].window_of(*current), 1.0);
      for (const auto& [group, weight] : groups) {
        const TimelineGroup& g = gpu.groups[group];
        rows.push_back({gpu.job_id(group), gpu.series[current_series].metric, current->ts_ms, g.layer, g.layer_type,
                        int64_t{g.forward}, std::min(1.0, static_cast<double>(weight) / window), current->value});
      }
    };
    sweep_overlaps(gpu, [&](int64_t, uint32_t group, size_t series, const TimelineSample& sample, int64_t weight) {
      if (&sample != current) {
        flush();
        current = &sample;
        current_series = series;
        groups.clear();
      }
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == group; });
      if (it == groups.end())
        groups.emplace_back(group, weight);
      else
        it->second += weight;
    });
    flush();
    set_rows(std::move(rows));
  }
};

}  // namespace

const sqlite3_module kFractionsModule = table_function_module<FractionsCursor>();

}  // namespace pp
