#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/http_client.hpp"
#include "core/settings.hpp"

TEST(Settings, DefaultsAndValidation) {
  pp::Settings settings;
  EXPECT_EQ(settings.get("max_points_per_series"), "11000");
  settings.set("timeout_ms", "2500");
  EXPECT_EQ(settings.get_int("timeout_ms"), 2500);
  EXPECT_THROW(settings.set("timeout_ms", "soon"), pp::Error);
  EXPECT_THROW(settings.set("no_such_key", "1"), pp::Error);
  settings.set("tls_verify", "false");
  EXPECT_FALSE(settings.get_bool("tls_verify"));
  // Trailing slashes go: Prometheus answers a path with "//" by a redirect.
  settings.set("prometheus_url", "http://prom:9090/prometheus//");
  EXPECT_EQ(settings.get("prometheus_url"), "http://prom:9090/prometheus");
  settings.set("prometheus_url", "http://prom:9090//");
  EXPECT_EQ(settings.get("prometheus_url"), "http://prom:9090");
}

TEST(Settings, SecretsAreMaskedWhenShown) {
  pp::Settings settings;
  settings.set("prometheus_url", "https://reader:hunter2@metrics.example:9090/");
  EXPECT_EQ(settings.display("prometheus_url"), "https://reader:***@metrics.example:9090");
  settings.set("headers", R"({"X-Scope-OrgID":"team-a","Authorization":"Bearer hunter2"})");
  EXPECT_EQ(settings.display("headers").find("hunter2"), std::string::npos);
  EXPECT_EQ(pp::redact_url("http://host:9090/api"), "http://host:9090/api");
}

// A PRECISIONPROBE_PROMETHEUS_URL the setting refuses is not replaced by the default in
// silence: the first request that needs the URL fails saying why (without echoing the value),
// and pp_settings shows why, until pp_config sets one.
TEST(Settings, UnusableEnvironmentUrlIsReportedAtFirstUse) {
  const char* before = std::getenv("PRECISIONPROBE_PROMETHEUS_URL");
  const std::string saved = before ? before : "";
  setenv("PRECISIONPROBE_PROMETHEUS_URL", "reader:hunter2@prom.example:9090", 1);
  pp::Settings settings;
  if (before) setenv("PRECISIONPROBE_PROMETHEUS_URL", saved.c_str(), 1); else unsetenv("PRECISIONPROBE_PROMETHEUS_URL");
  try {
    settings.get("prometheus_url");
    FAIL() << "an unusable environment variable must not be ignored";
  } catch (const pp::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("environment variable PRECISIONPROBE_PROMETHEUS_URL is not usable: setting "
                           "'prometheus_url' needs an http:// or https:// URL"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;
  }
  // Shown (pp_config, pp_settings) as what it is, not as the default it cannot use.
  EXPECT_EQ(settings.display("prometheus_url").rfind("(not usable) environment variable PRECISIONPROBE_PROMETHEUS_URL "
                                                     "is not usable", 0),
            0u);
  EXPECT_EQ(settings.display("prometheus_url").find("hunter2"), std::string::npos);
  settings.set("prometheus_url", "http://prom.example:9090");
  EXPECT_EQ(settings.get("prometheus_url"), "http://prom.example:9090");
}

// Every integer and real setting has a range; values outside it (or NaN, or past int64) are
// refused with the range in the message.
TEST(Settings, NumbersHaveCheckedRanges) {
  pp::Settings settings;
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"timeout_ms", "0"},
           {"timeout_ms", "9223372036854775807"},
           {"max_points_per_series", "9223372036854775807"},
           {"max_requests_per_query", "0"},
           {"samples_chunk_seconds", "9223372036854775"},
           {"retries", "1000"},
           {"dedup_rel_tol", "nan"},
           {"dedup_rel_tol", "1e999"},
           {"dedup_rel_tol", "-0.5"},
           {"attribution_margin_seconds", "99999999999999"},
           {"event_retention_minutes", "-1"},
           {"event_retention_minutes", "52560001"}}) {
    EXPECT_THROW(settings.set(key, value), pp::Error) << key << " = " << value;
  }
  try {
    settings.set("timeout_ms", "0");
  } catch (const pp::Error& e) {
    EXPECT_STREQ(e.what(),
                 "setting 'timeout_ms' needs an integer from 1 to 86400000, got '0' (0 would mean no time limit at all)");
  }
  settings.set("timeout_ms", "86400000");
  settings.set("dedup_rel_tol", "0");
  EXPECT_EQ(settings.get_int("timeout_ms"), 86400000);
}

// http_compression 'auto' asks no server on this machine for gzip (compressing costs it more
// than sending the answer plain there), and every other one.
TEST(Settings, CompressionIsAskedOfServersElsewhere) {
  pp::Settings settings;
  EXPECT_EQ(settings.get("http_compression"), "auto");
  for (const char* url : {"http://127.0.0.1:9090/api/v1/query", "http://localhost:9090", "https://LOCALHOST./x",
                          "http://reader:p%40ss@127.5.6.7:9090/", "http://[::1]:9090/api", "http://[::1]"})
    EXPECT_TRUE(pp::names_loopback(url)) << url;
  for (const char* url : {"http://prometheus:9090", "http://127.example.com:9090", "http://10.0.0.1:9090/x",
                          "http://localhost.example:9090", "http://[::2]:9090", "http://user@localhost.evil/x",
                          "http://host:9090/path@127.0.0.1"})
    EXPECT_FALSE(pp::names_loopback(url)) << url;
  settings.set("http_compression", "yes");
  EXPECT_EQ(settings.get("http_compression"), "on");
  EXPECT_THROW(settings.set("http_compression", "gzip"), pp::Error);
}
