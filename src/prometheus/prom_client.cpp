#include "prometheus/prom_client.hpp"

#include "core/errors.hpp"
#include "core/interrupt.hpp"
#include "core/text.hpp"
#include "prometheus/time_parse.hpp"

namespace pp {
namespace {

// A request over the server's sample limit (Prometheus' --query.max-samples, VictoriaMetrics'
// -search.maxSamplesPerQuery) or its time limit (errorType timeout) fails whole, naming a server
// flag the user may not control: say which setting of ours makes each request smaller.
template <class Call>
auto with_request_size_hint(const Call& call, const std::string& hint) {
  try {
    return call();
  } catch (const InterruptedError&) {
    throw;
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.find("too many samples") == std::string::npos &&
        message.find("maxSamplesPerQuery") == std::string::npos &&
        message.rfind("Prometheus error timeout ", 0) != 0)
      throw;
    throw Error(message + "; " + hint);
  }
}

}  // namespace

HttpResponse PromClient::get(const std::string& path, const std::string& form, bool post) {
  const std::string base = connection_.settings().get("prometheus_url");
  const std::string url = base + path + (post || form.empty() ? "" : "?" + form);
  return connection_.http().send(url, post ? form : std::string(), connection_.settings());
}

template <class T, class Parse>
std::shared_ptr<const T> PromClient::cached_call(const std::string& path, const std::string& form, bool post,
                                                 Parse parse) {
  const std::string base = connection_.settings().get("prometheus_url");
  // The key includes every setting that changes the answer or its source: a request with other
  // credentials may see other data.
  const Settings& settings = connection_.settings();
  const std::string separator(1, '\0');  // in none of the values
  const std::string key = base + path + "?" + form + separator + settings.get("headers") + separator +
                          settings.get("bearer_token_file") + separator + settings.get("basic_auth_user") +
                          separator + settings.get("basic_auth_password_file");
  size_t bytes = 0;
  auto value = connection_.cached(key, cursor_, bytes, [&](size_t& size) -> std::shared_ptr<const void> {
    HttpResponse response = get(path, form, post);
    std::vector<std::string> warnings;
    std::shared_ptr<T> parsed;
    try {
      InterruptCheck interrupted(connection_.db());
      parsed = std::make_shared<T>(parse(response, redact_url(base + path), warnings, [&] { interrupted.check(); }));
    } catch (const InterruptedError&) {
      throw;
    } catch (const Error& e) {
      // Whatever a message quotes from the answer (a value, a label, a type) may be the
      // request's credentials, echoed by a proxy or a hostile server.
      std::string message = e.what();
      hide_secrets(message, response.secrets);
      throw Error(message);
    }
    for (std::string& w : warnings) {  // (the server's own, and what the parse says of the answer)
      hide_secrets(w, response.secrets);
      connection_.add_warning(std::string(table_) + ": " + w);
    }
    size = response.body.size();
    return parsed;
  });
  return std::static_pointer_cast<const T>(value);
}

std::shared_ptr<const PromMatrix> PromClient::matrix_call(const std::string& path, const std::string& form) {
  return cached_call<PromMatrix>(path, form, true, parse_matrix_body);
}

std::shared_ptr<const PromMatrix> PromClient::query_range(const std::string& query, int64_t start_ms, int64_t end_ms,
                                                          int64_t step_ms) {
  HttpClient& http = connection_.http();
  const std::string form = "query=" + http.escape(query) + "&start=" + format_seconds(start_ms) +
                           "&end=" + format_seconds(end_ms) + "&step=" + format_seconds(step_ms) +
                           // VictoriaMetrics otherwise moves start to a multiple of step (for its
                           // cache), shifting every point; Prometheus ignores the parameter.
                           "&nocache=1";
  return with_request_size_hint([&] { return matrix_call("/api/v1/query_range", form); },
                                "each request asks for up to max_points_per_series (" +
                                    connection_.settings().get("max_points_per_series") +
                                    ") points of every series the query gives: lower that setting, use a larger step, "
                                    "or narrow the query");
}

std::shared_ptr<const PromMatrix> PromClient::raw_samples(const std::string& selector, int64_t time_ms,
                                                          int64_t range_ms, bool whole_only) {
  HttpClient& http = connection_.http();
  const std::string query = selector + "[" + format_promql_duration(range_ms) + "]";
  const std::string form = "query=" + http.escape(query) + "&time=" + format_seconds(time_ms) +
                           (whole_only ? "&partial_response=false&deny_partial_response=1" : "");
  return with_request_size_hint([&] { return matrix_call("/api/v1/query", form); },
                                "each request asks for up to samples_chunk_seconds (" +
                                    connection_.settings().get("samples_chunk_seconds") +
                                    ") of every series the selector matches: lower that setting, or narrow the "
                                    "selector");
}

std::shared_ptr<const std::vector<PromSeries>> PromClient::series(const std::string& match, int64_t start_ms,
                                                                  int64_t end_ms) {
  HttpClient& http = connection_.http();
  const std::string form = "match%5B%5D=" + http.escape(match) + "&start=" + format_seconds(start_ms) +
                           "&end=" + format_seconds(end_ms);
  return cached_call<std::vector<PromSeries>>("/api/v1/series", form, true, parse_series_body);
}

std::shared_ptr<const std::vector<std::string>> PromClient::label_values(const std::string& label,
                                                                         const std::optional<std::string>& match) {
  HttpClient& http = connection_.http();
  const std::string form = (match ? "match%5B%5D=" + http.escape(*match) + "&" : std::string()) +
                           "start=" + format_seconds(kAllTimeStartMs) + "&end=" + format_seconds(kAllTimeEndMs);
  // The label values endpoint is GET only.
  return cached_call<std::vector<std::string>>("/api/v1/label/" + http.escape(label) + "/values", form, false,
                                               parse_label_values_body);
}

}  // namespace pp
