#include <gtest/gtest.h>

#include "core/errors.hpp"
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
}

TEST(Settings, SecretsAreMaskedWhenShown) {
  pp::Settings settings;
  settings.set("prometheus_url", "https://reader:hunter2@metrics.example:9090/");
  EXPECT_EQ(settings.display("prometheus_url"), "https://reader:***@metrics.example:9090");
  settings.set("headers", R"({"X-Scope-OrgID":"team-a","Authorization":"Bearer hunter2"})");
  EXPECT_EQ(settings.display("headers").find("hunter2"), std::string::npos);
  EXPECT_EQ(pp::redact_url("http://host:9090/api"), "http://host:9090/api");
}
