#include "core/settings.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.hpp"
#include "core/text.hpp"

namespace pp {

const std::vector<SettingDefinition>& setting_definitions() {
  static const std::vector<SettingDefinition> definitions = {
      {"prometheus_url", SettingType::Url, "http://127.0.0.1:9090", "PRECISIONPROBE_PROMETHEUS_URL",
       "Base URL of the Prometheus HTTP API (Prometheus, VictoriaMetrics, Thanos, Mimir)"},
      {"timeout_ms", SettingType::Integer, "30000", nullptr,
       "Time limit of one HTTP request, connection included, in milliseconds", 1, 86400000},
      {"retries", SettingType::Integer, "3", nullptr,
       "Further attempts after HTTP 429, 5xx or a connection error (never after bad_data or a server's query timeout)", 0, 100},
      {"bearer_token_file", SettingType::Path, "", nullptr,
       "File holding a bearer token sent as 'Authorization: Bearer ...' (read on each request)"},
      {"basic_auth_user", SettingType::Text, "", nullptr, "User name for HTTP basic auth"},
      {"basic_auth_password_file", SettingType::Path, "", nullptr,
       "File holding the HTTP basic auth password (read on each request)"},
      {"headers", SettingType::HeadersJson, "{}", nullptr,
       "JSON object of extra request headers, e.g. {\"X-Scope-OrgID\":\"team-a\"}"},
      {"max_points_per_series", SettingType::Integer, "11000", nullptr,
       "Points per series per query_range request; longer ranges are split into chunks", 1, 1000000},
      {"max_requests_per_query", SettingType::Integer, "10000", nullptr,
       "Refuse a call that would need more HTTP requests than this", 1, 10000000},
      {"samples_chunk_seconds", SettingType::Integer, "3600", nullptr,
       "Time span of one raw-sample request made by prom_samples", 1, 31536000},
      {"max_response_bytes", SettingType::Integer, "268435456", nullptr,
       "Largest HTTP response body accepted, in bytes", 1, 17179869184},
      {"sample_interval_ms", SettingType::Integer, "0", nullptr,
       "The window a DCGM sample averages over (dcgm-exporter's -c), in ms; 0 = estimated from the data", 0, 3600000},
      {"sample_offset_ms", SettingType::OffsetMs, "auto", nullptr,
       "How long before its stored time a sample's window ends, in ms; auto = estimated from the data "
       "per GPU and stretch of time (pp_alignment). A number also says every stored time is its own window "
       "(none is a repeat)"},
      {"alignment_segment_seconds", SettingType::Integer, "10", nullptr,
       "pp_refresh: the offset between stored times and windows is estimated per stretch of at least "
       "this many seconds (and 100 samples), so that it may drift", 1, 86400},
      {"max_sample_lag_ms", SettingType::Integer, "1000", nullptr,
       "pp_refresh: the largest offset searched for when estimating alignment, in ms", 0, 600000},
      {"attribution_margin_seconds", SettingType::Integer, "60", nullptr,
       "pp_refresh: a job whose last event is older than this is complete, so all its sample "
       "windows are folded", 0, 3153600000},
      {"event_retention_minutes", SettingType::Integer, "0", nullptr,
       "pp_refresh: keep in pp_events (and pp_samples, pp_windows) only the last this many minutes "
       "before each GPU's fold point, once folded; 0 keeps everything", 0, 52560000},
      {"dedup_rel_tol", SettingType::Real, "0.05", nullptr,
       "pp_refresh: a layer's new means are kept in layer_history only when they differ from "
       "the last kept ones by more than this relative tolerance", 0, 1000},
      {"http_compression", SettingType::AutoBoolean, "auto", nullptr,
       "Ask the server for gzip-compressed responses; auto = on, but off for a server on this machine "
       "(localhost, 127.0.0.0/8, [::1]), where compressing costs the server more time than it saves"},
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
    case SettingType::AutoBoolean: return "auto or boolean";
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

std::string range_text(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e18) return std::to_string(static_cast<long long>(value));
  return std::to_string(value);
}

// An HTTP field name: a token of RFC 9110 (no space, colon or anything a server would reject).
bool is_header_name(std::string_view name) {
  if (name.empty()) return false;
  for (unsigned char c : name)
    if (!std::isalnum(c) && std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) == std::string_view::npos)
      return false;
  return true;
}

// Headers that frame the request or that libcurl sets from other settings: given here they
// would override its own (a Content-Length cut the form, leaving its rest to be read as the next
// request on the connection; Transfer-Encoding: chunked was refused with 501), so they are
// refused. The value: what to do instead ("" where nothing is to be done).
std::optional<std::string_view> framing_header_hint(std::string_view name) {
  static const std::pair<std::string_view, std::string_view> kFraming[] = {
      {"host", "; give the host in prometheus_url"},
      {"accept-encoding", "; the setting http_compression chooses it"},
      {"content-length", ""}, {"content-type", ""}, {"transfer-encoding", ""}, {"te", ""}, {"trailer", ""},
      {"connection", ""}, {"keep-alive", ""}, {"proxy-connection", ""}, {"upgrade", ""}, {"expect", ""},
  };
  const std::string lower = to_lower(name);
  for (const auto& [header, hint] : kFraming)
    if (lower == header) return hint;
  return std::nullopt;
}

// A header name as an error shows it: control characters written as \xNN, cut at 100 bytes.
std::string shown_header_name(std::string_view name) {
  std::string shown;
  for (unsigned char c : name.substr(0, 100)) {
    if (c < 0x20 || c == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      shown += "\\x";
      shown += kHex[c >> 4];
      shown += kHex[c & 15];
    } else {
      shown += static_cast<char>(c);
    }
  }
  return valid_utf8(shown) + (name.size() > 100 ? "..." : "");
}

bool has_control_character(std::string_view value) {
  for (unsigned char c : value)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

// The URL is never echoed in these messages: it may hold a password.
std::string normalize_url(const std::string& where, const std::string& value) {
  const std::string scheme_hint = "needs an http:// or https:// URL such as http://prometheus:9090";
  const auto scheme = value.find("://");
  const std::string scheme_name = scheme == std::string::npos ? "" : to_lower(value.substr(0, scheme));
  if (scheme_name != "http" && scheme_name != "https") throw Error(where + scheme_hint);
  for (unsigned char c : value)
    if (c <= 0x20 || c == 0x7f)
      throw Error(where + scheme_hint + "; this one holds a space or control character (percent-encode it)");
  const size_t authority = scheme + 3;
  const auto at = value.rfind('@');
  size_t host_start = authority;
  if (at != std::string::npos && at >= authority) {
    if (value.find_first_of("/?#", authority) < at)
      throw Error(where + scheme_hint + "; in this one '/', '?' or '#' comes before the last '@': "
                          "percent-encode them in the user name or password (%2F, %3F, %23), and '@' "
                          "in the path (%40)");
    if (value.find('@', authority) < at)  // (curl reads the first '@' as the host's start: a bad URL)
      throw Error(where + scheme_hint + "; in this one '@' comes twice before the host: percent-encode the '@' "
                          "of the user name or password as %40");
    host_start = at + 1;
  }
  const auto host_end = std::min(value.find_first_of("/?#", host_start), value.size());
  const std::string host = value.substr(host_start, host_end - host_start);
  const auto port = host.rfind(':');
  const bool bracketed = !host.empty() && host.front() == '[';
  // An IPv6 address: [address] or [address]:port, nothing else.
  if (bracketed) {
    const auto close = host.find(']');
    if (close == std::string::npos || (close + 1 < host.size() && host[close + 1] != ':'))
      throw Error(where + scheme_hint + "; this one's IPv6 address needs its brackets, as in http://[::1]:9090");
  } else if (host.find_first_of("[]") != std::string::npos) {
    throw Error(where + scheme_hint + "; this one's IPv6 address needs its brackets, as in http://[::1]:9090");
  }
  const std::string name = port == std::string::npos || (bracketed && host.back() == ']') ? host : host.substr(0, port);
  if (name.empty()) throw Error(where + scheme_hint + "; this one has no host");
  if (port != std::string::npos && !(bracketed && host.back() == ']')) {
    int64_t n = 0;
    if (!parse_int64(host.substr(port + 1), n) || n < 1 || n > 65535)
      throw Error(where + scheme_hint + "; this one's port is not a number from 1 to 65535");
  }
  if (value.find('#', host_end) != std::string::npos || value.find('?', host_end) != std::string::npos)
    throw Error(where + scheme_hint + "; a base URL has no query or fragment ('?' or '#')");
  // "http://host:9090//" too: Prometheus answers a path with "//" by a redirect, not followed.
  return value.substr(0, value.find_last_not_of('/') + 1);
}

// Lengths past what servers and the system take, refused when set rather than at the first
// request, and never echoed (the value may be a credential): nginx and Apache refuse a request
// or header line over 8 KiB by default, and basic auth sends the user name base64-encoded (a
// third longer) beside the password in one header; the system opens no path over PATH_MAX.
constexpr size_t kMaxUserBytes = 4096;
constexpr size_t kMaxHeaderLineBytes = 8192;
constexpr size_t kMaxUrlBytes = 4096;
constexpr size_t kMaxPathBytes = 4096;

std::string too_long(const std::string& where, size_t bytes, size_t limit, const char* why, bool secret = true) {
  return where + "is " + std::to_string(bytes) + " bytes long, more than " + std::to_string(limit) + " (" + why +
         "); not shown" + (secret ? ", since it may be a credential" : "");
}

// Whether a setting names a file holding a secret (a token or password): its value must look
// like a path, since a secret pasted in its place must not be kept or echoed.
bool names_secret_file(std::string_view setting) {
  return setting == "bearer_token_file" || setting == "basic_auth_password_file";
}

}  // namespace

bool looks_like_a_path(const std::string& value) {
  if (value.empty() || value.front() == '/' || ::access(value.c_str(), F_OK) == 0) return true;
  const auto slash = value.rfind('/');
  if (slash == std::string::npos) return false;
  const std::string directory = value.substr(0, slash);
  struct stat st {};
  return ::stat(directory.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

namespace {

std::string normalize(const SettingDefinition& d, const std::string& value) {
  const std::string where = std::string("setting '") + d.name + "' ";
  const std::string range = "from " + range_text(d.minimum) + " to " + range_text(d.maximum);
  switch (d.type) {
    case SettingType::Integer: {
      int64_t n = 0;
      // A whole number written as a float (5000.0: Python binds its floats so) is that integer.
      double as_real = 0;
      if (!parse_int64(trim(value), n) && parse_double(value, as_real) && std::isfinite(as_real) &&
          as_real == std::floor(as_real) && std::fabs(as_real) < 9e15)
        n = static_cast<int64_t>(as_real);
      else if (!parse_int64(trim(value), n))
        n = -1;
      if (n < 0)
        throw Error(where + "needs an integer " + range + ", got '" + value + "'");
      if (static_cast<double>(n) < d.minimum || static_cast<double>(n) > d.maximum)
        throw Error(where + "needs an integer " + range + ", got '" + value + "'" +
                    (std::string(d.name) == "timeout_ms" && n == 0 ? " (0 would mean no time limit at all)" : ""));
      return std::to_string(n);
    }
    case SettingType::Real: {
      double number = 0;
      if (!parse_double(value, number) || !std::isfinite(number) || number < d.minimum || number > d.maximum)
        throw Error(where + "needs a number " + range + ", got '" + value + "'");
      return number == 0 ? std::string("0") : std::string(trim(value));  // -0 and 0.000 as 0
    }
    case SettingType::OffsetMs: {
      if (to_lower(trim(value)) == "auto") return "auto";
      double ms = 0;
      if (!parse_double(value, ms) || !std::isfinite(ms) || ms < -60000 || ms > 600000)
        throw Error(where + "needs 'auto' or a number of milliseconds between -60000 and 600000, got '" + value + "'");
      return std::string(trim(value));
    }
    case SettingType::Boolean:
    case SettingType::AutoBoolean: {
      const std::string v = to_lower(value);
      if (v == "on" || v == "true" || v == "1" || v == "yes") return "on";
      if (v == "off" || v == "false" || v == "0" || v == "no") return "off";
      if (d.type == SettingType::AutoBoolean && v == "auto") return "auto";
      throw Error(where + "needs " + (d.type == SettingType::AutoBoolean ? "auto, " : "") +
                  "on/off, true/false, yes/no or 1/0, got '" + value + "'");
    }
    case SettingType::Url:
      if (value.size() > kMaxUrlBytes)
        throw Error(too_long(where, value.size(), kMaxUrlBytes, "4 KiB: a base URL with its user and password"));
      return normalize_url(where, value);
    case SettingType::HeadersJson: {
      // The parser keeps one value of a name given twice, and servers read "A" and "a" as one
      // header: a duplicate is refused rather than one of its values sent unseen.
      std::set<std::string> seen_names;
      std::string duplicate_name;
      const nlohmann::json::parser_callback_t note_duplicates = [&](int depth, nlohmann::json::parse_event_t event,
                                                                    nlohmann::json& parsed) {
        if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string() &&
            !seen_names.insert(to_lower(parsed.get<std::string>())).second && duplicate_name.empty())
          duplicate_name = parsed.get<std::string>();
        return true;
      };
      nlohmann::json j = nlohmann::json::parse(value, note_duplicates, false);
      if (j.is_discarded() || !j.is_object())
        throw Error(where + "needs a JSON object of header names to string values");
      for (const auto& item : j.items())
        if (!item.value().is_string() || !is_header_name(item.key()) ||
            has_control_character(item.value().get<std::string>()))
          throw Error(where + "header '" + shown_header_name(item.key()) +
                      "' needs a plain name (letters, digits and !#$%&'*+-.^_`|~) and a string value without line "
                      "breaks or control characters");
      for (const auto& item : j.items())
        if (const auto hint = framing_header_hint(item.key()))
          throw Error(where + "header '" + item.key() +
                      "' is set by the request itself (it frames the request or says how it is sent), so it cannot "
                      "be given here" + std::string(*hint));
      // Shown only once every name is known to be a plain token; never a value, which may be a secret.
      if (!duplicate_name.empty())
        throw Error(where + "names header '" + duplicate_name +
                    "' more than once (header names ignore case); give each header once");
      for (const auto& item : j.items()) {
        const size_t line = item.key().size() + 2 + item.value().get<std::string>().size();  // "name: value"
        if (line > kMaxHeaderLineBytes)
          throw Error(too_long(where + "header '" + item.key() + "' with its value ", line, kMaxHeaderLineBytes,
                               "8 KiB, the longest header line nginx and Apache accept by default"));
      }
      return j.dump();
    }
    case SettingType::Text:
      if (d.name == std::string_view("basic_auth_user") && value.size() > kMaxUserBytes)
        throw Error(too_long(where, value.size(), kMaxUserBytes,
                             "4 KiB: basic auth sends it with the password in one header line, which servers "
                             "refuse past 8 KiB"));
      if (has_control_character(value)) throw Error(where + "must not hold control characters");
      // Basic auth sends "user:password": a user name with a colon would move its tail into
      // the password the server reads.
      if (d.name == std::string_view("basic_auth_user") && value.find(':') != std::string::npos)
        throw Error(where + "must not hold ':' (basic auth sends user:password, so the server would read the "
                            "rest as part of the password)");
      return value;
    case SettingType::Path:
      if (value.size() > kMaxPathBytes)
        throw Error(too_long(where, value.size(), kMaxPathBytes, "4 KiB, the longest path the system opens",
                             names_secret_file(d.name)));
      if (value.find('\0') != std::string::npos) throw Error(where + "must not hold a NUL byte");
      // A token or password pasted where its file's path belongs would otherwise be kept,
      // shown by pp_settings and echoed by the errors that name the file.
      if (names_secret_file(d.name) && !value.empty() && !looks_like_a_path(value))
        throw Error(where + "needs the path of a file holding the secret, and neither a file nor a directory "
                            "holding one has the name given (not shown, since it may be the secret itself: put the "
                            "secret in a file and give that file's path)");
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
        } catch (const Error& e) {
          // The default stays in force for display, but using the setting fails with this.
          environment_errors_[d.name] = std::string("environment variable ") + d.environment +
                                        " is not usable: " + e.what() +
                                        "; correct it, or set the value with pp_config('" + d.name + "', ...)";
        }
      }
    }
    values_[d.name] = value;
  }
}

const std::string& Settings::get(const std::string& key) const {
  find_definition(key);
  const auto refused = environment_errors_.find(key);
  if (refused != environment_errors_.end()) throw Error(refused->second);
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
  environment_errors_.erase(key);
}

std::string Settings::display(const std::string& key) const {
  const SettingDefinition& d = find_definition(key);
  const auto refused = environment_errors_.find(key);
  if (refused != environment_errors_.end()) return "(not usable) " + refused->second;
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
  const size_t authority = scheme == std::string::npos ? 0 : scheme + 3;
  const auto at = url.rfind('@');
  if (at == std::string::npos || at < authority) return url;
  // A user name is kept only where it cannot hold part of the secret: before a ':' that is
  // followed by the password, with nothing that could end the authority in it.
  const std::string userinfo = url.substr(authority, at - authority);
  const auto colon = userinfo.find(':');
  std::string shown = "***";
  if (scheme != std::string::npos && colon != std::string::npos && colon > 0 &&
      userinfo.find_first_of("/?#") > colon)
    shown = userinfo.substr(0, colon) + ":***";
  return url.substr(0, authority) + shown + url.substr(at);
}

}  // namespace pp
