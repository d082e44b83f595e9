// Requests to the Prometheus HTTP API (Prometheus, VictoriaMetrics, Thanos, Mimir) through the
// connection's HTTP client and per-statement cache; responses are read by response_parser.hpp.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/connection.hpp"
#include "prometheus/response_parser.hpp"

namespace pp {

// "All time" for the series and label APIs, which VictoriaMetrics answers for the last day
// only when no range is given (and when start is 0): from 1 s after 1970 began through the year
// 2100 (no series has samples older, and Prometheus means all time by either bound left out).
constexpr int64_t kAllTimeStartMs = 1000;
constexpr int64_t kAllTimeEndMs = 4102444800000;

class PromClient {
 public:
  // `table` names the SQL table in the warnings it adds to the connection; `cursor` is the
  // serial of the cursor it fetches for (the cache's answers it may use).
  PromClient(Connection& connection, const char* table, uint64_t cursor)
      : connection_(connection), table_(table), cursor_(cursor) {}

  // /api/v1/query_range: evaluation at start + k*step through end.
  std::shared_ptr<const PromMatrix> query_range(const std::string& query, int64_t start_ms, int64_t end_ms,
                                                int64_t step_ms);
  // /api/v1/query of `selector[range_ms]` at time_ms: the raw stored samples.
  // `whole_only`: asks Thanos (partial_response=false) and VictoriaMetrics' cluster
  // (deny_partial_response=1) for an error where some of their stores did not answer, instead of
  // the rest with a warning; Prometheus ignores both.
  std::shared_ptr<const PromMatrix> raw_samples(const std::string& selector, int64_t time_ms, int64_t range_ms,
                                                bool whole_only = false);
  // /api/v1/series and /api/v1/label/NAME/values (over all time).
  std::shared_ptr<const std::vector<PromSeries>> series(const std::string& match, int64_t start_ms, int64_t end_ms);
  std::shared_ptr<const std::vector<std::string>> label_values(const std::string& label,
                                                               const std::optional<std::string>& match);

 private:
  HttpResponse get(const std::string& path, const std::string& form, bool post);
  template <class T, class Parse>
  std::shared_ptr<const T> cached_call(const std::string& path, const std::string& form, bool post, Parse parse);
  std::shared_ptr<const PromMatrix> matrix_call(const std::string& path, const std::string& form);

  Connection& connection_;
  const char* table_;
  uint64_t cursor_;
};

}  // namespace pp
