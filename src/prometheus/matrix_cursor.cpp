#include "prometheus/matrix_cursor.hpp"

namespace pp {

MatrixCursor::~MatrixCursor() { clear_arguments(); }

void MatrixCursor::clear_arguments() {
  for (sqlite3_value* v : arguments_) sqlite3_value_free(v);
  arguments_.clear();
}

void MatrixCursor::start(std::vector<MatrixChunk> chunks, int argc, sqlite3_value** argv) {
  clear_arguments();
  for (int i = 0; i < argc; ++i) arguments_.push_back(sqlite3_value_dup(argv[i]));
  chunks_ = std::move(chunks);
  chunk_ = series_ = point_ = 0;
  matrix_.reset();
  rowid_ = 0;
  settle();
}

void MatrixCursor::settle() {
  while (chunk_ < chunks_.size()) {
    if (!matrix_) {
      matrix_ = chunks_[chunk_].fetch();
      series_ = point_ = 0;
    }
    const MatrixChunk& chunk = chunks_[chunk_];
    while (series_ < matrix_->series.size()) {
      const auto& points = matrix_->series[series_].points;
      while (point_ < points.size()) {
        const int64_t ts = points[point_].ts_ms;
        if (ts > chunk.after_ms && ts <= chunk.through_ms) return;
        ++point_;
      }
      ++series_;
      point_ = 0;
    }
    matrix_.reset();
    ++chunk_;
  }
}

void MatrixCursor::next() {
  ++rowid_;
  ++point_;
  settle();
}

int MatrixCursor::column(sqlite3_context* ctx, int column) {
  const PromSeries& series = matrix_->series[series_];
  const PromPoint& point = series.points[point_];
  switch (column) {
    case kMetricColumn:
      if (series.metric)
        sqlite3_result_text(ctx, series.metric->c_str(), static_cast<int>(series.metric->size()),
                            SQLITE_TRANSIENT);
      else
        sqlite3_result_null(ctx);
      break;
    case kLabelsColumn:
      sqlite3_result_text(ctx, series.labels_json.c_str(), static_cast<int>(series.labels_json.size()),
                          SQLITE_TRANSIENT);
      break;
    case kTsColumn:
      sqlite3_result_double(ctx, static_cast<double>(point.ts_ms) / 1000.0);
      break;
    case kValueColumn:
      if (point.is_null) sqlite3_result_null(ctx);
      else sqlite3_result_double(ctx, point.value);
      break;
    default: {
      // Hidden argument columns echo the arguments (as series.c does); absent ones are NULL.
      const size_t i = static_cast<size_t>(column - kFirstArgument);
      if (i < arguments_.size() && arguments_[i]) sqlite3_result_value(ctx, arguments_[i]);
      else sqlite3_result_null(ctx);
    }
  }
  return SQLITE_OK;
}

namespace {

int xClose(sqlite3_vtab_cursor* cursor) {
  delete static_cast<MatrixCursor*>(cursor);
  return SQLITE_OK;
}

int xNext(sqlite3_vtab_cursor* base) {
  auto* cursor = static_cast<MatrixCursor*>(base);
  return guard_vtab(base->pVtab, "prometheus", [&] {
    cursor->next();
    return SQLITE_OK;
  });
}

int xEof(sqlite3_vtab_cursor* cursor) { return static_cast<MatrixCursor*>(cursor)->eof(); }

int xColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  return static_cast<MatrixCursor*>(base)->column(ctx, column);
}

int xRowid(sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) {
  *rowid = static_cast<MatrixCursor*>(cursor)->rowid();
  return SQLITE_OK;
}

int xOpen(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) {
  return guard_vtab(vtab, "prometheus", [&] {
    *out = new MatrixCursor(static_cast<ConnectionTable*>(vtab));
    return SQLITE_OK;
  });
}

}  // namespace

void fill_matrix_module(sqlite3_module& m) {
  m.xDisconnect = disconnect_table;
  m.xOpen = xOpen;
  m.xClose = xClose;
  m.xNext = xNext;
  m.xEof = xEof;
  m.xColumn = xColumn;
  m.xRowid = xRowid;
}

}  // namespace pp
