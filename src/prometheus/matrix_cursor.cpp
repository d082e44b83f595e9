#include "prometheus/matrix_cursor.hpp"

#include "core/errors.hpp"

namespace pp {

void MatrixCursor::start(std::vector<MatrixChunk> chunks) {
  chunks_ = std::move(chunks);
  chunk_ = series_ = point_ = 0;
  ++series_serial_;
  matrix_.reset();
  settle();
}

void MatrixCursor::settle() {
  while (chunk_ < chunks_.size()) {
    if (!matrix_) {
      matrix_ = chunks_[chunk_].fetch();
      if (refuse_partial_answers && !matrix_->partial_from.empty())
        throw Error("the answer from " + matrix_->partial_from +
                    " is partial (isPartial: true): some of the server's storage nodes did not answer, so series "
                    "or samples may be missing; a refresh never asks again for a time it has fetched, so it stores "
                    "no partial answer: refresh again once every storage node answers");
      series_ = point_ = 0;
      ++series_serial_;
    }
    const MatrixChunk& chunk = chunks_[chunk_];
    while (series_ < matrix_->series.size()) {
      const auto& points = matrix_->series[series_].points;
      while (point_ < points.size()) {
        const int64_t ts = points[point_].ts_ms;
        if (ts > chunk.after_ms && ts <= chunk.through_ms) {
          eof = false;
          return;
        }
        ++point_;
      }
      ++series_;
      ++series_serial_;
      point_ = 0;
    }
    matrix_.reset();
    ++chunk_;
  }
  eof = true;
}

void MatrixCursor::next() {
  ++point_;
  settle();
}

void MatrixCursor::column(sqlite3_context* ctx, int column) const {
  const PromSeries& series = this->series();
  const PromPoint& point = this->point();
  switch (column) {
    case kMetricColumn:
      if (series.metric)
        result_text(ctx, *series.metric);
      else
        sqlite3_result_null(ctx);
      break;
    case kLabelsColumn: result_text(ctx, series.labels_json); break;
    case kTsColumn: sqlite3_result_double(ctx, static_cast<double>(point.ts_ms) / 1000.0); break;
    case kValueColumn:
      if (point.is_null)
        sqlite3_result_null(ctx);
      else
        sqlite3_result_double(ctx, point.value);
      break;
    default: sqlite3_result_null(ctx); break;
  }
}

}  // namespace pp
