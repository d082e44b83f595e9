// The streaming cursor shared by prom_range and prom_samples: rows (metric, labels, ts, value)
// of a matrix result fetched one chunk at a time, so a long range never sits in memory whole.
// Each chunk keeps only points in (after_ms, through_ms], which makes chunk boundaries exact
// whether a server's range selector is closed (Prometheus 2.x) or open (VictoriaMetrics, 3.x)
// on the left: no point is returned twice and none is lost.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "prometheus/prom_api.hpp"
#include "core/table_function.hpp"

namespace pp {

// Column layout common to both tables; hidden argument columns follow kFirstArgument.
enum MatrixColumn { kMetricColumn, kLabelsColumn, kTsColumn, kValueColumn, kFirstArgument };
constexpr const char* kMatrixColumns = "metric TEXT, labels TEXT, ts REAL, value REAL";

struct MatrixChunk {
  std::function<std::shared_ptr<const PromMatrix>()> fetch;
  int64_t after_ms;
  int64_t through_ms;
};

struct MatrixCursor : ConnectionCursor {
  using ConnectionCursor::ConnectionCursor;
  ~MatrixCursor();

  // Replaces the chunks and moves to the first row. Hidden argument values are kept for xColumn.
  void start(std::vector<MatrixChunk> chunks, int argc, sqlite3_value** argv);
  void next();
  bool eof() const { return chunk_ >= chunks_.size(); }
  int column(sqlite3_context* ctx, int column);
  sqlite3_int64 rowid() const { return rowid_; }

 private:
  void settle();  // moves forward to a point that passes the chunk's window, fetching as needed
  void clear_arguments();

  std::vector<MatrixChunk> chunks_;
  size_t chunk_ = 0, series_ = 0, point_ = 0;
  std::shared_ptr<const PromMatrix> matrix_;
  sqlite3_int64 rowid_ = 0;
  std::vector<sqlite3_value*> arguments_;
};

// Module callbacks that only depend on the cursor (xOpen, xClose, xNext, xEof, xColumn, xRowid).
void fill_matrix_module(sqlite3_module& module);

}  // namespace pp
