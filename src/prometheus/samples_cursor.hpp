// The cursor of prom_samples (prom_samples.cpp), also the base of the table that pp_refresh's
// fetch reads (attribution/gpu_samples_table.cpp): the same arguments, requests and errors,
// whatever columns a table built on it shows. Each table names its own errors and warnings
// (its kName: "prom_samples: ...", "pp_gpu_samples: ..."), as the user called it.
#pragma once
#include <string>
#include <unordered_map>

#include "prometheus/matrix_cursor.hpp"
#include "prometheus/time_parse.hpp"

namespace pp {

struct SamplesCursor : MatrixCursor {
  using MatrixCursor::MatrixCursor;

  // xBestIndex of a table whose arguments (selector, start, end) begin at first_argument and
  // whose metric column is kMetricColumn.
  static int plan_samples(sqlite3_index_info* info, int first_argument);
  // xFilter of the table named `table` (its kName, which its warnings carry).
  void filter_samples(const char* table, int idx_num, int argc, sqlite3_value** argv);
  void next();

 private:
  // A row's rowid: its series' own numbering (TableCursor::part_rowid_base, the series' metric
  // and labels the part), plus its place among the series' points in the call's range. A
  // pushed-down metric leaves out whole series, never points of one, so the branches of a
  // MULTI-INDEX OR that push down different metrics (or none) give a sample one rowid.
  void number_row();

  const char* table_ = "";
  struct SeriesNumbering {
    sqlite3_int64 base;
    sqlite3_int64 points = 0;  // of the series so far
  };
  std::unordered_map<std::string, SeriesNumbering> series_numbering_;  // by part_key
  SeriesNumbering* numbering_ = nullptr;  // the row's series'
  uint64_t numbered_serial_ = 0;          // the series_serial() it is for
};

}  // namespace pp
