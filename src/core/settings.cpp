#include "core/settings.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/text.hpp"

namespace pp {

const std::vector<SettingDefinition>& setting_definitions() {
  static const std::vector<SettingDefinition> definitions = {
      {"prometheus_url", SettingType::Url, "http://127.0.0.1:9090", "PRECISIONPROBE_PROMETHEUS_URL",
       "Base URL of the Prometheus HTTP API (Prometheus, VictoriaMetrics, Thanos, Mimir)"},
      {"timeout_ms", SettingType::Integer, "30000", nullptr,
       "Time limit of one HTTP request, connection included, in milliseconds"},
      {"retries", SettingType::Integer, "3", nullptr,
       "Further attempts after HTTP 429, 5xx or a connection error (never after bad_data)"},
      {"bearer_token_file", SettingType::Path, "", nullptr,
       "File holding a bearer token sent as 'Authorization: Bearer ...' (read on each request)"},
      {"basic_auth_user", SettingType::Text, "", nullptr, "User name for HTTP basic auth"},
      {"basic_auth_password_file", SettingType::Path, "", nullptr,
       "File holding the HTTP basic auth password (read on each request)"},
      {"headers", SettingType::HeadersJson, "{}", nullptr,
       "JSON object of extra request headers, e.g. {\"X-Scope-OrgID\":\"team-a\"}"},
      {"max_points_per_series", SettingType::Integer, "11000", nullptr,
       "Points per series per query_range request; longer ranges are split into chunks"},
      {"max_requests_per_query", SettingType::Integer, "10000", nullptr,
       "Refuse a call that would need more HTTP requests than this"},
      {"samples_chunk_seconds", SettingType::Integer, "3600", nullptr,
       "Time span of one raw-sample request made by prom_samples"},
      {"max_response_bytes", SettingType::Integer, "268435456", nullptr,
       "Largest HTTP response body accepted, in bytes"},
      {"sample_interval_ms", SettingType::Integer, "0", nullptr,
       "The window a DCGM sample averages over (dcgm-exporter's -c), in ms; 0 = estimated from the data"},
      {"sample_offset_ms", SettingType::OffsetMs, "auto", nullptr,
       "How long before its stored time a sample's window ends, in ms; auto = estimated from the data "
       "per GPU and stretch of time (pp_alignment). A number also says every stored time is its own window "
       "(none is a repeat)"},
      {"alignment_segment_seconds", SettingType::Integer, "10", nullptr,
       "pp_refresh: the offset between stored times and windows is estimated per stretch of at least "
       "this many seconds (and 100 samples), so that it may drift"},
      {"max_sample_lag_ms", SettingType::Integer, "1000", nullptr,
       "pp_refresh: the largest offset searched for when estimating alignment, in ms"},
      {"attribution_margin_seconds", SettingType::Integer, "60", nullptr,
       "pp_refresh: a job whose last event is older than this is complete, so all its sample "
       "windows are folded"},
      {"dedup_rel_tol", SettingType::Real, "0.05", nullptr,
       "pp_refresh: a layer's new means are kept in layer_history only when they differ from "
       "the last kept ones by more than this relative tolerance"},
      {"tls_verify", SettingType::Boolean, "on", nullptr, "Verify the server's TLS certificate"},
      {"tls_ca_file", SettingType::Path, "", nullptr, "CA bundle used to verify the server"},
  };
  return definitions;
}

const char* setting_type_name(SettingType type) {
  switch (type) {
    case SettingType::Text: return "text";
    case SettingType::Url: return "url";
    case SettingType::Integer: return "integer";
    case SettingType::Real: return "real";
    case SettingType::Boolean: return "boolean";
    case SettingType::Path: return "path";
    case SettingType::HeadersJson: return "json";
    case SettingType::OffsetMs: return "auto or ms";
  }
  return "text";
}

namespace {

const SettingDefinition& find_definition(const std::string& key) {
  for (const auto& d : setting_definitions())
    if (key == d.name) return d;
  std::string known;
  for (const auto& d : setting_definitions()) known += std::string(known.empty() ? "" : ", ") + d.name;
  throw Error("unknown setting '" + key + "' (known: " + known + ")");
}

std::string normalize(const SettingDefinition& d, const std::string& value) {
  const std::string where = std::string("setting '") + d.name + "' ";
  switch (d.type) {
    case SettingType::Integer: {
      int64_t n = 0;
      if (!parse_int64(value, n) || n < 0)
        throw Error(where + "needs a non-negative integer, got '" + value + "'");
      return std::to_string(n);
    }
    case SettingType::Real: {
      double d = 0;
      if (!parse_double(value, d) || d < 0)
        throw Error(where + "needs a non-negative number, got '" + value + "'");
      return std::string(trim(value));
    }
    case SettingType::OffsetMs: {
      if (to_lower(trim(value)) == "auto") return "auto";
      double ms = 0;
      if (!parse_double(value, ms) || !std::isfinite(ms) || ms < -60000 || ms > 600000)
        throw Error(where + "needs 'auto' or a number of milliseconds between -60000 and 600000, got '" + value + "'");
      return std::string(trim(value));
    }
    case SettingType::Boolean: {
      const std::string v = to_lower(value);
      if (v == "on" || v == "true" || v == "1" || v == "yes") return "on";
      if (v == "off" || v == "false" || v == "0" || v == "no") return "off";
      throw Error(where + "needs on/off, true/false or 1/0, got '" + value + "'");
    }
    case SettingType::Url:
      if (value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0)
        throw Error(where + "needs an http:// or https:// URL, got '" + redact_url(value) + "'");
      return value.back() == '/' ? value.substr(0, value.size() - 1) : value;
    case SettingType::HeadersJson: {
      nlohmann::json j = nlohmann::json::parse(value, nullptr, false);
      if (j.is_discarded() || !j.is_object())
        throw Error(where + "needs a JSON object of header names to string values");
      for (const auto& item : j.items())
        if (!item.value().is_string() || item.key().empty() ||
            item.key().find_first_of(":\r\n") != std::string::npos ||
            item.value().get<std::string>().find_first_of("\r\n") != std::string::npos)
          throw Error(where + "header '" + item.key() +
                      "' needs a plain name and a string value without line breaks");
      return j.dump();
    }
    case SettingType::Text:
    case SettingType::Path:
      return value;
  }
  return value;
}

}  // namespace

Settings::Settings() {
  for (const auto& d : setting_definitions()) {
    std::string value = d.default_value;
    if (d.environment) {
      const char* env = std::getenv(d.environment);
      if (env && *env) {
        try {
          value = normalize(d, env);
        } catch (const Error&) {
          // A malformed environment value keeps the default; pp_config shows which is in force.
        }
      }
    }
    values_[d.name] = value;
  }
}

const std::string& Settings::get(const std::string& key) const {
  find_definition(key);
  return values_.at(key);
}

int64_t Settings::get_int(const std::string& key) const {
  int64_t n = 0;
  parse_int64(get(key), n);
  return n;
}

double Settings::get_real(const std::string& key) const {
  double d = 0;
  parse_double(get(key), d);
  return d;
}

bool Settings::get_bool(const std::string& key) const { return get(key) == "on"; }

void Settings::set(const std::string& key, const std::string& value) {
  values_[key] = normalize(find_definition(key), value);
}

std::string Settings::display(const std::string& key) const {
  const SettingDefinition& d = find_definition(key);
  const std::string& value = values_.at(key);
  if (d.type == SettingType::Url) return redact_url(value);
  if (d.type == SettingType::HeadersJson) {
    nlohmann::json j = nlohmann::json::parse(value);
    for (auto& item : j.items()) item.value() = "***";
    return j.dump();
  }
  return value;
}

std::string redact_url(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto host_start = scheme + 3;
  const auto path_start = url.find_first_of("/?#", host_start);
  const auto at = url.rfind('@', path_start == std::string::npos ? url.size() : path_start);
  if (at == std::string::npos || at < host_start) return url;
  const auto colon = url.find(':', host_start);
  if (colon == std::string::npos || colon > at) return url;  // user name only, no password
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

}  // namespace pp
