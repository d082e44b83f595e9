#include "prometheus/response_parser.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/text.hpp"

namespace pp {
namespace {

using json = nlohmann::json;

// An API answer nests 8 levels at most: a native histogram's buckets in a matrix item.
constexpr int kMaxJsonDepth = 64;

// The most of an error envelope's errorType an error message quotes.
constexpr size_t kMaxErrorTypeBytes = 64;

// The first 200 bytes of a body for an error message: on one line, valid UTF-8, without the
// credentials the request sent.
std::string body_start(const HttpResponse& response) {
  size_t longest_secret = 0;
  for (const std::string& secret : response.secrets) longest_secret = std::max(longest_secret, secret.size());
  std::string body = response.body.substr(0, 4096 + longest_secret);  // no secret cut at the end
  hide_secrets(body, response.secrets);
  std::string start = valid_utf8(body, 200);
  for (char& c : start)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  start.erase(start.find_last_not_of(' ') + 1);  // ("404 page not found\n" ends the message as it says it)
  return start;
}

// A member that should be text; `fallback` when it is absent or not text (json::value() would
// throw nlohmann's type_error, not an error that says what was wrong).
std::string text_member(const json& object, const char* key, const std::string& fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// Checks the envelope and returns its "data" member. Collects "warnings" and "infos", and sets
// *partial where the answer says it is partial. `keep`, when given, sees every value as it is
// parsed and may drop it from the document.
json envelope_data(const HttpResponse& response, const std::string& shown_url, std::vector<std::string>& warnings,
                   const ParsePoll& poll, const json::parser_callback_t& keep = nullptr, bool* partial = nullptr) {
  json doc;
  std::string invalid;  // why a body that looks like JSON is not
  uint32_t events = 0;
  const json::parser_callback_t checked = [&](int depth, json::parse_event_t event, json& parsed) {
    // The parser holds a value for each level it is in, some 40 bytes for each byte of brackets:
    // a body of max_response_bytes would take gigabytes.
    if (depth > kMaxJsonDepth)
      throw Error("HTTP " + std::to_string(response.status) + " from " + shown_url +
                  " is not a Prometheus API response: its JSON nests more than " + std::to_string(kMaxJsonDepth) +
                  " levels deep (an API answer nests 8 at most)");
    if (poll && ++events % 4096 == 0) poll();
    return keep ? keep(depth, event, parsed) : true;
  };
  try {
    doc = json::parse(response.body, checked);
  } catch (const json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 95: ..." (or
    // out_of_range.406 for a number beyond a double); the text it quotes from the body may
    // hold bytes that are not UTF-8.
    const std::string what = e.what();
    const size_t tag_end = what.find("] ");
    std::string quoted = tag_end == std::string::npos ? what : what.substr(tag_end + 2);
    hide_secrets(quoted, response.secrets);
    invalid = " (invalid JSON: " + valid_utf8(quoted, 300) + ")";
    doc = json();
  }
  if (!doc.is_object() || !doc.contains("status")) {
    if (response.status >= 300 && response.status < 400 && !response.location.empty()) {
      std::string location = response.location;
      hide_secrets(location, response.secrets);
      throw Error("HTTP " + std::to_string(response.status) + " from " + shown_url + " redirects to " +
                  valid_utf8(redact_url(location), 300) +
                  "; redirects are not followed (they would take the credentials along): set prometheus_url to "
                  "where it leads");
    }
    if (response.body.empty())
      throw Error("HTTP " + std::to_string(response.status) + " with an empty body from " +
                  shown_url);
    const size_t first = response.body.find_first_not_of(" \t\r\n");
    const bool looks_like_json = first != std::string::npos && (response.body[first] == '{' || response.body[first] == '[');
    // A 404 is nearly always a wrong path: say where the API is served, not only that it was not found.
    const std::string fix =
        response.status == 404
            ? " (no API at that path: prometheus_url is the base to which /api/v1/... is appended; Prometheus "
              "serves it at its root or under its --web.route-prefix, Mimir and Cortex under /prometheus, a "
              "VictoriaMetrics cluster under /select/<tenant>/prometheus)"
            : "";
    throw Error("HTTP " + std::to_string(response.status) + " from " + shown_url +
                " is not a Prometheus API response" + (looks_like_json ? invalid : "") + ": " +
                body_start(response) + fix);
  }
  for (const char* key : {"warnings", "infos"}) {
    auto it = doc.find(key);
    if (it != doc.end() && it->is_array())
      for (const auto& w : *it)
        if (w.is_string()) warnings.push_back(w.get<std::string>());
  }
  if (doc["status"] != "success") {
    // Each part cut to its own length, so that an overlong type cannot push the error text past
    // the message's length limit (real types are a word: bad_data, execution, timeout, ...).
    std::string type = text_member(doc, "errorType", "error");
    std::string error = text_member(doc, "error", "(no error text)");
    hide_secrets(type, response.secrets);
    hide_secrets(error, response.secrets);
    if (type.size() > kMaxErrorTypeBytes)
      type = valid_utf8(type, kMaxErrorTypeBytes) + " (" + std::to_string(type.size()) + " bytes)";
    throw Error("Prometheus error " + type + " (HTTP " + std::to_string(response.status) + "): " + error);
  }
  if (response.status != 200)
    throw Error("HTTP " + std::to_string(response.status) + " from " + shown_url + ": " +
                body_start(response));
  // VictoriaMetrics' cluster (vmselect) answers success with "isPartial": true when storage nodes
  // did not answer: the rows are then incomplete, which a user must not take for the whole.
  if (const auto is_partial = doc.find("isPartial"); is_partial != doc.end() && *is_partial == true) {
    if (partial) *partial = true;
    warnings.push_back("the answer from " + shown_url + " is partial (isPartial: true): some of the server's "
                       "storage nodes did not answer, so series or samples may be missing; run the query again");
  }
  auto data = doc.find("data");
  if (data == doc.end()) throw Error("response from " + shown_url + " has no 'data'");
  return std::move(*data);
}

// The labels object minus __name__, printed with sorted keys (nlohmann's object is ordered).
// Invalid UTF-8 cannot reach here (the parser rejects it), but dump() replaces it defensively.
void split_labels(json& metric, PromSeries& series) {
  auto name = metric.find("__name__");
  if (name != metric.end()) {
    // (A name that is not a string is refused as any other label is: as a missing name it
    // would read as a series of no metric.)
    if (!name->is_string()) throw Error("label '__name__' is not a string");
    series.metric = name->get<std::string>();
    metric.erase(name);
  }
  for (const auto& item : metric.items())
    if (!item.value().is_string()) throw Error("label '" + item.key() + "' is not a string");
  series.labels_json = metric.dump(-1, ' ', false, json::error_handler_t::replace);
}

PromPoint parse_point(const json& pair) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_string())
    throw Error("malformed sample " + valid_utf8(pair.dump(), 80) +
                " (expected [unix_seconds, \"value\"])");
  PromPoint point{};
  const double seconds = pair[0].get<double>();
  if (!std::isfinite(seconds)) throw Error("malformed sample timestamp");
  point.ts_ms = std::llround(seconds * 1000.0);
  const std::string& text = pair[1].get_ref<const std::string&>();
  if (!parse_sample_value(text, point.value, point.is_null))
    throw Error("sample value '" + valid_utf8(text, 40) + "' is not a number");
  return point;
}

// One item of a matrix result: {"metric": {...}, "values": [[ts, "v"], ...]}.
PromSeries matrix_series(json& item, size_t& histograms) {
  auto metric = item.find("metric");
  if (metric == item.end() || !metric->is_object())
    throw Error("matrix item without a 'metric' object");
  PromSeries series;
  split_labels(*metric, series);
  auto values = item.find("values");
  if (values != item.end()) {
    if (!values->is_array()) throw Error("'values' is not a list");
    series.points.reserve(values->size());
    for (const auto& pair : *values) series.points.push_back(parse_point(pair));
  }
  auto hist = item.find("histograms");
  if (hist != item.end() && hist->is_array()) histograms += hist->size();
  return series;
}

// Listings of a label set the answer listed before (a server lists each once; a proxy that
// merges replicas without deduplicating may not): how many, and the first as NAME{labels}, its
// labels' echoed credentials hidden before the cut (which could leave the start of one).
size_t repeated_listings(const std::vector<PromSeries>& series, const HttpResponse& response, std::string& first) {
  std::unordered_set<std::string> listed;
  size_t repeated = 0;
  for (const PromSeries& s : series) {
    const std::string shown = s.metric.value_or("") + s.labels_json;
    if (listed.insert(std::string(s.metric ? "n" : "-") + shown).second || repeated++ != 0) continue;
    std::string named = shown;
    hide_secrets(named, response.secrets);
    first = valid_utf8(named, 200);
  }
  return repeated;
}

std::string repeated_listings_warning(size_t repeated, const std::string& first, const char* given) {
  return "the answer lists " + std::to_string(repeated) + " series again that it listed before (the first: " +
         first + "); a server lists each label set once, so a proxy before it may merge replicas without "
         "deduplicating: each listing's " + given + " given";
}

}  // namespace

bool parse_sample_value(std::string_view text, double& value, bool& is_null) {
  is_null = false;
  if (text == "NaN") {
    is_null = true;
    value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (text == "+Inf" || text == "Inf") {
    value = std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "-Inf") {
    value = -std::numeric_limits<double>::infinity();
    return true;
  }
  return parse_double(text, value) && std::isfinite(value);
}

PromMatrix parse_matrix_body(const HttpResponse& response, const std::string& shown_url,
                             std::vector<std::string>& warnings, const ParsePoll& poll) {
  // Each series is converted as soon as the parser has read it and then dropped from the
  // document, so that a response of 50,000 series never exists as a whole JSON tree: memory
  // stays near the body's size instead of several times it.
  PromMatrix matrix;
  matrix.bytes = response.body.size();
  size_t& histograms = matrix.skipped_histograms;
  std::string keys[3];  // the key being read at depths 1 and 2 ("data", then "result")
  const json::parser_callback_t convert = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth <= 2) {
      keys[depth] = parsed.get<std::string>();
      // A repeated "data" or "result" replaces the earlier one, as it does in a document.
      if (keys[1] == "data" && (depth == 1 || keys[2] == "result")) {
        matrix.series.clear();
        histograms = 0;
      }
    }
    if (event != json::parse_event_t::object_end || depth != 3 || keys[1] != "data" || keys[2] != "result")
      return true;
    matrix.series.push_back(matrix_series(parsed, histograms));
    return false;
  };
  bool partial = false;
  json data = envelope_data(response, shown_url, warnings, poll, convert, &partial);
  if (partial) matrix.partial_from = shown_url;
  const std::string type = text_member(data, "resultType", "");
  if (type != "matrix")
    throw Error("expected a matrix result from " + shown_url + ", got '" +
                type + "'");
  auto result = data.find("result");
  if (result == data.end() || !result->is_array())
    throw Error("matrix result from " + shown_url + " has no result list");
  if (!result->empty())  // items that are not objects were left in the list
    throw Error("matrix item without a 'metric' object");
  matrix.repeated_series = repeated_listings(matrix.series, response, matrix.first_repeated);
  if (matrix.repeated_series) warnings.push_back(repeated_listings_warning(matrix.repeated_series, matrix.first_repeated, "rows are"));
  if (matrix.skipped_histograms)
    warnings.push_back(std::to_string(matrix.skipped_histograms) +
                       " native histogram samples are not supported and were skipped");
  return matrix;
}

std::vector<PromSeries> parse_series_body(const HttpResponse& response, const std::string& shown_url,
                                          std::vector<std::string>& warnings, const ParsePoll& poll) {
  json data = envelope_data(response, shown_url, warnings, poll);
  if (!data.is_array())
    throw Error("series response from " + shown_url + " is not a list");
  std::vector<PromSeries> out;
  out.reserve(data.size());
  for (auto& labels : data) {
    if (!labels.is_object()) throw Error("series entry is not an object");
    PromSeries series;
    split_labels(labels, series);
    out.push_back(std::move(series));
  }
  std::string first;
  if (const size_t repeated = repeated_listings(out, response, first))
    warnings.push_back(repeated_listings_warning(repeated, first, "row is"));
  return out;
}

std::vector<std::string> parse_label_values_body(const HttpResponse& response, const std::string& shown_url,
                                                 std::vector<std::string>& warnings, const ParsePoll& poll) {
  json data = envelope_data(response, shown_url, warnings, poll);
  if (!data.is_array())
    throw Error("label values from " + shown_url + " are not a list");
  std::vector<std::string> out;
  out.reserve(data.size());
  for (const auto& v : data) {
    // (Left out, a value that is not a string would shorten the list in silence.)
    if (!v.is_string())
      throw Error("label values from " + shown_url + " hold " + valid_utf8(v.dump(), 80) + ", not a string");
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace pp
