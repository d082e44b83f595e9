// The Prometheus HTTP API's response bodies: parse_matrix_body (query and query_range),
// parse_series_body and parse_label_values_body, all three on the same bytes.
//
// A response comes from outside (a proxy, a wrong URL, a hostile server), so whatever the bytes,
// each parser must return a result or throw pp::Error with a message in valid UTF-8 (the SQL
// boundary puts the function's name in front and hands it to SQLite). Any other exception, a
// crash, a leak or undefined behaviour fails the run.
// Results are checked too: labels_json is a JSON object of strings without __name__, NULL
// samples are exactly the NaN ones, and the counts match the response's own lists.
//
// Input: an optional first line "HTTP <status>\n" (default 200), then the body.
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.hpp"
#include "core/text.hpp"
#include "prometheus/response_parser.hpp"
#include "fuzz/fuzz_check.hpp"

namespace {

using nlohmann::json;

const std::string kUrl = "http://127.0.0.1:9090/api/v1/query_range";

pp::HttpResponse make_response(std::string_view input) {
  pp::HttpResponse response;
  response.status = 200;
  if (input.substr(0, 5) == "HTTP ") {
    const size_t eol = input.find('\n');
    long status = 0;
    for (size_t i = 5; i < std::min(eol, size_t{8}) && i < input.size(); ++i)
      if (input[i] >= '0' && input[i] <= '9') status = status * 10 + (input[i] - '0');
    response.status = status;
    input = eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1);
  }
  response.body.assign(input.data(), input.size());
  return response;
}

// Runs one parser; true when it returned a result, false for a pp::Error that says why.
template <class Parse>
bool result_or_error(const char* parser, Parse&& parse) {
  try {
    parse();
    return true;
  } catch (const pp::Error& e) {
    const std::string what = e.what();
    PP_FUZZ_CHECK(!what.empty() && pp::valid_utf8(what) == what, "%s: error text empty or not UTF-8: %s", parser,
                  pp_fuzz::printable(what).c_str());
    return false;
  } catch (const std::exception& e) {
    pp_fuzz::unexpected_exception(parser, e);
  }
}

void check_labels(const pp::PromSeries& series) {
  const json labels = json::parse(series.labels_json, nullptr, /*allow_exceptions=*/false);
  PP_FUZZ_CHECK(labels.is_object(), "labels_json is not an object: %s",
                pp_fuzz::printable(series.labels_json).c_str());
  PP_FUZZ_CHECK(!labels.contains("__name__"), "__name__ left in labels_json: %s",
                pp_fuzz::printable(series.labels_json).c_str());
  for (const auto& item : labels.items())
    PP_FUZZ_CHECK(item.value().is_string(), "label '%s' is not a string",
                  pp_fuzz::printable(item.key()).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const pp::HttpResponse response =
      make_response(std::string_view(reinterpret_cast<const char*>(data), size));
  // The reference view of the same body, for counts.
  const json doc = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  const json* result_list = nullptr;
  const json* data_member = nullptr;
  if (doc.is_object() && doc.contains("data")) {
    data_member = &doc["data"];
    if (data_member->is_object() && data_member->contains("result"))
      result_list = &(*data_member)["result"];
  }

  std::vector<std::string> warnings;
  pp::PromMatrix matrix;
  if (result_or_error("parse_matrix_body", [&] {
        matrix = pp::parse_matrix_body(response, kUrl, warnings);
      })) {
    PP_FUZZ_CHECK(result_list && result_list->is_array() &&
                      result_list->size() == matrix.series.size(),
                  "matrix parsed with %zu series, the body's result list disagrees",
                  matrix.series.size());
    PP_FUZZ_CHECK(matrix.bytes == response.body.size(), "bytes %zu != body size %zu",
                  matrix.bytes, response.body.size());
    for (const pp::PromSeries& series : matrix.series) {
      check_labels(series);
      for (const pp::PromPoint& point : series.points)
        PP_FUZZ_CHECK(point.is_null == std::isnan(point.value),
                      "is_null %d for value %g at %lld", point.is_null, point.value,
                      static_cast<long long>(point.ts_ms));
    }
  }

  warnings.clear();
  std::vector<pp::PromSeries> series;
  if (result_or_error("parse_series_body", [&] {
        series = pp::parse_series_body(response, kUrl, warnings);
      })) {
    PP_FUZZ_CHECK(data_member && data_member->is_array() && data_member->size() == series.size(),
                  "series parsed with %zu entries, the body's data list disagrees", series.size());
    for (const pp::PromSeries& s : series) {
      check_labels(s);
      PP_FUZZ_CHECK(s.points.empty(), "a series entry with points");
    }
  }

  warnings.clear();
  std::vector<std::string> values;
  if (result_or_error("parse_label_values_body", [&] {
        values = pp::parse_label_values_body(response, kUrl, warnings);
      })) {
    PP_FUZZ_CHECK(data_member && data_member->is_array(), "label values without a data list");
    size_t strings = 0;
    for (const json& v : *data_member) strings += v.is_string();
    PP_FUZZ_CHECK(strings == values.size(), "%zu label values for %zu strings", values.size(),
                  strings);
  }
  return 0;
}
