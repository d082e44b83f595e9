// pp_gpu_samples: the rows of prom_samples as pp_refresh's fetch stores them (refresh.sql
// insert_samples_*), the labels that name a GPU read once per series instead of once per row.
//
//   SELECT metric, uuid, host, gpu, instance, ts_ms, value
//     FROM pp_gpu_samples('{__name__="DCGM_FI_DEV_GPU_UTIL"}', 1714557600, 1714561200);
//
// Arguments, requests, rows and errors are prom_samples' (same cursor), named "pp_gpu_samples: ...";
// the columns are what these expressions give on prom_samples' row, value for value:
//   uuid      coalesce(json_extract(labels, '$.UUID'), json_extract(labels, '$.uuid'))
//   host      coalesce(json_extract(labels, '$.Hostname'), json_extract(labels, '$.hostname'))
//   gpu       json_extract(labels, '$.gpu')
//   instance  json_extract(labels, '$.GPU_I_ID')
//   ts_ms     CAST(round(ts * 1000) AS INTEGER)
// (The label expressions run as SQL, once per series, so that they stay exactly SQLite's.)
#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "attribution/attribution_tables.hpp"
#include "core/statement.hpp"
#include "core/table_function.hpp"
#include "prometheus/samples_cursor.hpp"

namespace pp {
namespace {

enum GpuSamplesColumn { kMetric, kUuid, kHost, kGpu, kInstance, kTsMs, kValue, kFirstArgumentColumn };
constexpr int kLabelColumns = 4;  // kUuid .. kInstance

constexpr const char* kLabelsSql =
    "SELECT coalesce(json_extract(:labels, '$.UUID'), json_extract(:labels, '$.uuid')), "
    "coalesce(json_extract(:labels, '$.Hostname'), json_extract(:labels, '$.hostname')), "
    "json_extract(:labels, '$.gpu'), json_extract(:labels, '$.GPU_I_ID')";
constexpr const char* kTsMsSql = "SELECT CAST(round(:ts * 1000) AS INTEGER)";

// Below 2^50 ms (the year 37,000), (ts_ms / 1000.0) * 1000 is within 1/4 of ts_ms (two
// roundings of at most 2^-53 relative each), so SQLite's round() gives ts_ms back.
constexpr int64_t kExactMs = int64_t{1} << 50;

struct ValueFree {
  void operator()(sqlite3_value* value) const { sqlite3_value_free(value); }
};
using HeldValue = std::unique_ptr<sqlite3_value, ValueFree>;

struct GpuSamplesCursor : SamplesCursor {
  static constexpr const char* kName = "pp_gpu_samples";
  static constexpr const char* kSchema =
      "CREATE TABLE x(metric TEXT, uuid TEXT, host TEXT, gpu TEXT, instance TEXT, ts_ms INTEGER, value REAL, "
      "selector HIDDEN, start HIDDEN, \"end\" HIDDEN)";
  static constexpr int kFirstArgument = kFirstArgumentColumn;
  using SamplesCursor::SamplesCursor;

  static int plan(sqlite3_index_info* info) { return plan_samples(info, kFirstArgument); }
  void filter(int idx_num, int argc, sqlite3_value** argv) {
    refuse_partial_answers = true;  // what it gives is stored for good
    filter_samples(kName, idx_num, argc, argv);
  }

  void column(sqlite3_context* ctx, int column) const {
    switch (column) {
      case kMetric: MatrixCursor::column(ctx, kMetricColumn); break;
      case kValue: MatrixCursor::column(ctx, kValueColumn); break;
      case kTsMs: sqlite3_result_int64(ctx, ts_ms()); break;
      default: sqlite3_result_value(ctx, label(column - kUuid)); break;
    }
  }

 private:
  // The row's label value `index` (0: uuid .. 3: instance), read when its series is new.
  sqlite3_value* label(int index) const {
    if (labels_serial_ != series_serial() || !labels_statement_) {
      if (!labels_statement_) labels_statement_ = std::make_unique<Statement>(connection->db(), kLabelsSql);
      labels_statement_->bind(":labels", series().labels_json);
      if (!labels_statement_->step()) throw Error("internal: the label expressions gave no row");
      for (int i = 0; i < kLabelColumns; ++i) {
        labels_[i].reset(sqlite3_value_dup(sqlite3_column_value(labels_statement_->handle(), i)));
        if (!labels_[i]) throw std::bad_alloc();
      }
      sqlite3_reset(labels_statement_->handle());
      labels_serial_ = series_serial();
      check_one_series();
    }
    return labels_[index].get();
  }

  // The label value `index` as text, "" for NULL.
  std::string label_text(int index) const {
    const unsigned char* text = sqlite3_value_text(labels_[index].get());
    return text ? std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_value_bytes(labels_[index].get())))
                : std::string();
  }

  // Two series of one metric that name the same GPU over the same time (two exporters, or one
  // scraped by two jobs, with other labels that differ): pp_samples keeps the first sample it
  // stores at a time, and both where their times differ (two scrapes apart), so the GPU's
  // spacing and values mix them. A warning names both label sets, once per GPU and metric. Series that follow one another (an exporter restarted under a new pod name) are not
  // that: each stored time has one sample. (A series comes again in every chunk: its times are
  // the union of its chunks'.)
  void check_one_series() const {
    const PromSeries& current = series();
    if (current.points.empty()) return;
    const std::string metric = current.metric.value_or("");
    const std::string uuid = label_text(0);
    const std::string gpu = uuid.empty() ? "on host '" + label_text(1) + "' index '" + label_text(2) + "'" : uuid;
    const std::string instance = label_text(3);
    const std::string key = metric + '\x1f' + gpu + '\x1f' + instance;
    const int64_t first = std::min(current.points.front().ts_ms, current.points.back().ts_ms);
    const int64_t last = std::max(current.points.front().ts_ms, current.points.back().ts_ms);
    std::vector<SeriesSpan>& spans = series_spans_[key];
    SeriesSpan* own = nullptr;
    for (SeriesSpan& span : spans)
      if (span.labels_json == current.labels_json) own = &span;
    if (!own) own = &spans.emplace_back(SeriesSpan{current.labels_json, first, last});
    own->first_ms = std::min(own->first_ms, first);
    own->last_ms = std::max(own->last_ms, last);
    for (const SeriesSpan& other : spans) {
      if (&other == own || other.last_ms < own->first_ms || own->last_ms < other.first_ms) continue;
      if (!warned_.insert(key).second) return;
      const bool own_first = own < &other;  // (the label sets in the order first seen)
      connection->add_warning(std::string(kName) + ": GPU " + gpu + (instance.empty() ? "" : " instance " + instance) +
                              " has more than one series of " + metric + " at the same time, " +
                              (own_first ? own : &other)->labels_json + " and " +
                              (own_first ? &other : own)->labels_json +
                              ": pp_refresh keeps the first it stores where their times coincide and both where "
                              "they differ, so its windows and values mix the series; keep one of them (drop the "
                              "other scrape job or exporter, or relabel)");
      return;
    }
  }

  int64_t ts_ms() const {
    const int64_t ms = point().ts_ms;
    if (ms > -kExactMs && ms < kExactMs) return ms;
    // A timestamp so far off is rounded by SQLite itself, as the expression would be.
    if (!ts_statement_) ts_statement_ = std::make_unique<Statement>(connection->db(), kTsMsSql);
    ts_statement_->bind(":ts", static_cast<double>(ms) / 1000.0);
    if (!ts_statement_->step()) throw Error("internal: the ts_ms expression gave no row");
    const int64_t rounded = ts_statement_->column_int64(0);
    sqlite3_reset(ts_statement_->handle());
    return rounded;
  }

  mutable std::unique_ptr<Statement> labels_statement_, ts_statement_;
  mutable std::array<HeldValue, kLabelColumns> labels_;
  mutable uint64_t labels_serial_ = 0;
  // check_one_series: per GPU and metric, each label set's first and last time seen.
  struct SeriesSpan {
    std::string labels_json;
    int64_t first_ms, last_ms;
  };
  mutable std::unordered_map<std::string, std::vector<SeriesSpan>> series_spans_;
  mutable std::unordered_set<std::string> warned_;
};

}  // namespace

const sqlite3_module kGpuSamplesModule = table_function_module<GpuSamplesCursor>();

}  // namespace pp
