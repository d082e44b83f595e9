// Reading Prometheus HTTP API responses (also VictoriaMetrics, Thanos, Mimir) into plain
// structs: the envelope ({"status", "data", "errorType", "error", "warnings", "infos"}), matrix
// results, series lists and label values. Pure parsing, no I/O: the client that sends requests
// is prom_client.hpp. Every failure is a pp::Error that carries the server's own errorType and
// error text.
#pragma once
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  size_t bytes = 0;             // size of the response body, for the cache's budget
  size_t skipped_histograms = 0;  // native histogram samples, which are not supported
  // Listings of a label set the answer listed before (a server lists each once; a proxy that
  // merges replicas without deduplicating may not), and the first such series as NAME{labels}.
  size_t repeated_series = 0;
  std::string first_repeated;
  // The server (its URL as shown) when the answer said "isPartial": true (a VictoriaMetrics
  // cluster whose storage nodes did not all answer): series or samples may be missing. Empty
  // for a whole answer.
  std::string partial_from;
};

// Sample values are strings: "0.5", "1e-07", "NaN", "+Inf", "-Inf". Locale-independent.
bool parse_sample_value(std::string_view text, double& value, bool& is_null);

// Parse a response body; `shown_url` (credentials removed) names the server in errors. The
// server's "warnings" and "infos" are appended to `warnings`. `poll`, when given, is called as
// the parse goes (every few thousand JSON values), so that an interrupt can end the parse of a
// large answer (it throws InterruptedError).
using ParsePoll = std::function<void()>;
PromMatrix parse_matrix_body(const HttpResponse& response, const std::string& shown_url,
                             std::vector<std::string>& warnings, const ParsePoll& poll = {});
std::vector<PromSeries> parse_series_body(const HttpResponse& response, const std::string& shown_url,
                                          std::vector<std::string>& warnings, const ParsePoll& poll = {});
std::vector<std::string> parse_label_values_body(const HttpResponse& response, const std::string& shown_url,
                                                 std::vector<std::string>& warnings, const ParsePoll& poll = {});

}  // namespace pp
