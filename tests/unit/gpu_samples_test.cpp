// pp_gpu_samples, which pp_refresh's fetch reads: its rows must be what prom_samples' rows give
// through the expressions refresh.sql used on them before, value for value, type for type and
// in the same order (the INSERT OR IGNORE keeps the first of two rows of one key). Against the
// loopback hostile server that CTest starts (tests/fixtures/hostile_server.py, mode gpu-labels).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "unit/test_db.hpp"

namespace {

std::string hostile_url() {
  const char* dir = std::getenv("PP_TEST_ENV_DIR");
  std::ifstream in(std::string(dir ? dir : "") + "/env.json");
  if (!in) return {};
  return nlohmann::json::parse(in)["hostile_url"].get<std::string>();
}

class GpuSamples : public ::testing::Test {
 protected:
  void SetUp() override {
    url = hostile_url();
    if (url.empty()) GTEST_SKIP() << "no test servers: run through ctest, which starts them";
  }
  std::string url;
};

const char* const kExpressionsOnPromSamples =
    "SELECT coalesce(json_extract(labels, '$.UUID'), json_extract(labels, '$.uuid')), metric, "
    "CAST(round(ts * 1000) AS INTEGER), value, "
    "coalesce(json_extract(labels, '$.Hostname'), json_extract(labels, '$.hostname')), "
    "json_extract(labels, '$.gpu'), json_extract(labels, '$.GPU_I_ID') FROM prom_samples('x', ?, ?)";
const char* const kColumnsOfGpuSamples =
    "SELECT uuid, metric, ts_ms, value, host, gpu, instance FROM pp_gpu_samples('x', ?, ?)";

TEST_F(GpuSamples, RowsAreThoseOfTheLabelExpressionsOnPromSamplesEvenAtOddTimes) {
  pp_test::TestDb db;
  db.query("SELECT pp_config('prometheus_url', ?)", {url + "/gpu-labels"});
  size_t rows_seen = 0;
  // Each range holds some of the server's odd times (whole and fractional ms, halves of one,
  // negative, and the last a query may ask for).
  for (const auto& [start, end] : std::vector<std::pair<std::string, std::string>>{
           {"1699999999", "1700000001"}, {"-2", "0"}, {"9223372035", "9223372036"}}) {
    const pp_test::Rows expected = db.query(kExpressionsOnPromSamples, {start, end});
    const pp_test::Rows rows = db.query(kColumnsOfGpuSamples, {start, end});
    ASSERT_EQ(rows.size(), expected.size()) << start;
    for (size_t r = 0; r < rows.size(); ++r)
      for (size_t c = 0; c < rows[r].size(); ++c) {
        const pp_test::Value &got = rows[r][c], &want = expected[r][c];
        EXPECT_EQ(got.type, want.type) << start << " row " << r << " column " << c;
        EXPECT_EQ(got.text, want.text) << start << " row " << r << " column " << c;
        EXPECT_EQ(got.integer, want.integer) << start << " row " << r << " column " << c;
        EXPECT_EQ(got.real, want.real) << start << " row " << r << " column " << c;
      }
    rows_seen += rows.size();
  }
  EXPECT_EQ(rows_seen, 6u * 11);  // 6 series, each with every odd time in one of the ranges
}

TEST_F(GpuSamples, ErrorsAreThoseOfPromSamplesNamedForTheFunctionCalled) {
  pp_test::TestDb db;
  db.query("SELECT pp_config('prometheus_url', ?)", {url + "/notnumber"});
  const auto renamed = [](std::string message) {
    EXPECT_EQ(message.rfind("prom_samples: ", 0), 0u) << message;
    return message.replace(0, std::string("prom_samples").size(), "pp_gpu_samples");
  };
  EXPECT_EQ(db.error("SELECT count(*) FROM pp_gpu_samples('x', 1700000000, 1700000001)"),
            renamed(db.error("SELECT count(*) FROM prom_samples('x', 1700000000, 1700000001)")));
  EXPECT_EQ(db.error("SELECT count(*) FROM pp_gpu_samples('  ', 1700000000, 1700000001)"),
            renamed(db.error("SELECT count(*) FROM prom_samples('  ', 1700000000, 1700000001)")));
}

}  // namespace
