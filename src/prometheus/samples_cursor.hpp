// The cursor of prom_samples (prom_samples.cpp), also the base of the table that pp_refresh's
// fetch reads (attribution/gpu_samples_table.cpp): the same arguments, requests and errors,
// whatever columns a table built on it shows. Each table names its own errors and warnings
// (its kName: "prom_samples: ...", "pp_gpu_samples: ..."), as the user called it.
#pragma once
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

 private:
  StatementClock clock_;  // "now" in the time arguments, read once per cursor
};

}  // namespace pp
