// The cursor of prom_samples (prom_samples.cpp), also the base of the table that pp_refresh's
// fetch reads (attribution/gpu_samples_table.cpp): the same arguments, requests and errors
// ("prom_samples: ..."), whatever columns a table built on it shows.
#pragma once
#include "prometheus/matrix_cursor.hpp"
#include "prometheus/time_parse.hpp"

namespace pp {

struct SamplesCursor : MatrixCursor {
  static constexpr const char* kName = "prom_samples";
  using MatrixCursor::MatrixCursor;

  // xBestIndex of a table whose arguments (selector, start, end) begin at first_argument and
  // whose metric column is kMetricColumn.
  static int plan_samples(sqlite3_index_info* info, int first_argument);
  void filter(int idx_num, int argc, sqlite3_value** argv);

 private:
  StatementClock clock_;  // "now" in the time arguments, read once per cursor
};

}  // namespace pp
