// Per-connection settings, read and written with pp_config(key [, value]) and listed by the
// pp_settings table. Each setting is registered once, with its type, default and description,
// in the table at the top of settings.cpp (DuckDB's way of declaring extension options).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pp {

enum class SettingType { Text, Url, Integer, Real, Boolean, AutoBoolean, Path, HeadersJson, OffsetMs };

struct SettingDefinition {
  const char* name;
  SettingType type;
  const char* default_value;  // before environment overrides
  const char* environment;    // variable that overrides the default, or nullptr
  const char* description;
  // The range an integer or real setting accepts (both ends included).
  double minimum = 0;
  double maximum = 0;
};

const std::vector<SettingDefinition>& setting_definitions();
const char* setting_type_name(SettingType type);
// An absolute path, an existing file's name, or a relative name whose directory exists: what a
// secret file's setting must hold, and the only form in which errors show it (a token pasted
// where its file's path belongs must not be kept or echoed).
bool looks_like_a_path(const std::string& value);

class Settings {
 public:
  Settings();  // defaults, with environment overrides applied

  // Raw value; throws pp::Error for an unknown key, and for a setting whose environment
  // variable held a value it refuses (until pp_config sets one), so that a mistyped
  // PRECISIONPROBE_PROMETHEUS_URL is not silently replaced by the default.
  const std::string& get(const std::string& key) const;
  int64_t get_int(const std::string& key) const;
  double get_real(const std::string& key) const;
  bool get_bool(const std::string& key) const;

  // Validates and stores; throws pp::Error for unknown keys or bad values.
  void set(const std::string& key, const std::string& value);

  // The value as it may be shown to a user: passwords in URLs and header values are masked.
  // A setting whose environment variable was refused shows why, not the default it cannot use.
  std::string display(const std::string& key) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> environment_errors_;  // key -> why its variable was refused
};

// "http://user:secret@host:9090/x" -> "http://user:***@host:9090/x"; safe for messages
// whatever the URL holds: everything between "://" and the last '@' is masked (all of it when
// the user name itself might be a secret), and text without "://" is masked up to its last '@'.
std::string redact_url(const std::string& url);

}  // namespace pp
