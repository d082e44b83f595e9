// The streaming cursor shared by prom_range and prom_samples: rows (metric, labels, ts, value)
// of a matrix result fetched one chunk at a time, so a long range never sits in memory whole.
// Each chunk keeps only points in (after_ms, through_ms], which makes chunk boundaries exact
// whether a server's range selector is closed (Prometheus 2.x) or open (VictoriaMetrics, 3.x)
// on the left: no point is returned twice and none is lost.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "core/table_function.hpp"
#include "prometheus/response_parser.hpp"

namespace pp {

// Column layout common to both tables; hidden argument columns follow kMatrixFirstArgument.
enum MatrixColumn { kMetricColumn, kLabelsColumn, kTsColumn, kValueColumn, kMatrixFirstArgument };
#define PP_MATRIX_COLUMNS "metric TEXT, labels TEXT, ts REAL, value REAL"

struct MatrixChunk {
  std::function<std::shared_ptr<const PromMatrix>()> fetch;
  int64_t after_ms;
  int64_t through_ms;
};

class MatrixCursor : public TableCursor {
 public:
  static constexpr int kFirstArgument = kMatrixFirstArgument;
  static constexpr bool kDirectOnly = true;
  using TableCursor::TableCursor;

  // Replaces the chunks and moves to the first row.
  void start(std::vector<MatrixChunk> chunks);
  void next();
  void column(sqlite3_context* ctx, int column) const;

  // The row's series and point (while not eof), and a number that changes whenever the row's
  // series does (a new chunk's series may sit at the address of the last chunk's).
  const PromSeries& series() const { return matrix_->series[series_]; }
  // A table whose rows are stored for good (pp_gpu_samples, pp_refresh's fetch) sets this: a
  // partial answer is then an error instead of rows with a warning (and servers that can say so,
  // Thanos and VictoriaMetrics' cluster, are asked for the error).
  bool refuse_partial_answers = false;
  const PromPoint& point() const { return series().points[point_]; }
  uint64_t series_serial() const { return series_serial_; }

 private:
  void settle();  // moves forward to a point that passes the chunk's window, fetching as needed

  std::vector<MatrixChunk> chunks_;
  size_t chunk_ = 0, series_ = 0, point_ = 0;
  uint64_t series_serial_ = 0;
  std::shared_ptr<const PromMatrix> matrix_;
};

}  // namespace pp
