// The Prometheus HTTP API (also served by VictoriaMetrics, Thanos, Mimir): building requests,
// sending them through the connection's HTTP client and per-statement cache, and reading the
// response envelope into plain structs. Every failure becomes a pp::Error that starts with the
// calling SQL function's name and carries the server's own errorType and error text.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/connection.hpp"
#include "core/http_client.hpp"

namespace pp {

struct PromPoint {
  int64_t ts_ms;
  double value;  // NaN in the response becomes SQL NULL (is_null)
  bool is_null;
};

struct PromSeries {
  std::optional<std::string> metric;  // __name__
  std::string labels_json;            // the other labels, keys sorted
  std::vector<PromPoint> points;
};

struct PromMatrix {
  std::vector<PromSeries> series;
  size_t bytes = 0;  // size of the response body, for the cache's budget
};

// Sample values are strings: "0.5", "1e-07", "NaN", "+Inf", "-Inf". Locale-independent.
bool parse_sample_value(std::string_view text, double& value, bool& is_null);

// Parses a response body; exposed for unit tests and fuzzing. `function` prefixes errors,
// `shown_url` (credentials removed) names the server. Warnings go to `warnings`.
PromMatrix parse_matrix_body(const HttpResponse& response, const std::string& shown_url,
                             const char* function, std::vector<std::string>& warnings);
std::vector<PromSeries> parse_series_body(const HttpResponse& response, const std::string& shown_url,
                                          const char* function, std::vector<std::string>& warnings);
std::vector<std::string> parse_label_values_body(const HttpResponse& response,
                                                 const std::string& shown_url, const char* function,
                                                 std::vector<std::string>& warnings);

class PromClient {
 public:
  PromClient(Connection& connection, const char* function);

  // /api/v1/query_range: evaluation at start + k*step through end.
  std::shared_ptr<const PromMatrix> query_range(const std::string& query, int64_t start_ms,
                                                int64_t end_ms, int64_t step_ms);
  // /api/v1/query of `selector[range_ms]` at time_ms: the raw stored samples.
  std::shared_ptr<const PromMatrix> raw_samples(const std::string& selector, int64_t time_ms,
                                                int64_t range_ms);
  // /api/v1/series and /api/v1/label/NAME/values.
  std::shared_ptr<const std::vector<PromSeries>> series(const std::string& match, int64_t start_ms,
                                                        int64_t end_ms);
  std::shared_ptr<const std::vector<std::string>> label_values(const std::string& label,
                                                               const std::optional<std::string>& match);

 private:
  HttpResponse get(const std::string& path, const std::string& form, bool post);
  template <class T, class Parse>
  std::shared_ptr<const T> cached_call(const std::string& path, const std::string& form, bool post,
                                       Parse parse);

  Connection& connection_;
  const char* function_;
};

}  // namespace pp
