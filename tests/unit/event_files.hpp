// Event files as the hook client writes them, in a temporary directory, for tests.
//
//   pp_test::TempDir dir;                                        // removed at scope exit
//   const std::string file = dir.write("job1/rank0.jsonl", pp_test::header_line() + "\n" +
//                                                          pp_test::lines(0, 3));
//   dir.write("job1/rank0.jsonl", pp_test::lines(3, 2), /*append=*/true);
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace pp_test {

constexpr int64_t kT0 = 1714000000000000000;  // 2024-04-24T23:06:40Z in ns

// One event as the hook client writes it (keys in column order).
inline nlohmann::ordered_json event_json(int i, const std::string& job = "job1") {
  nlohmann::ordered_json j;
  j["job_id"] = job;
  j["host_name"] = "node-1";
  j["ip"] = "10.0.0.7";
  j["pod"] = "dlrm-0";
  j["namespace"] = "ml";
  j["gpu_uuid"] = "GPU-5c2ab3a4-0000-1111-2222-333344445555";
  j["gpu"] = 0;
  j["rank"] = 0;
  j["local_rank"] = 0;
  j["world_size"] = 1;
  j["pid"] = 4242;
  j["epoch"] = 0;
  j["batch"] = i / 4;
  j["layer"] = "top_l." + std::to_string(i % 4);
  j["layer_type"] = i % 4 == 3 ? "Sigmoid" : "Linear";
  j["forward"] = i % 2 == 0;
  j["t_start_ns"] = kT0 + int64_t{i} * 1000000;
  j["t_end_ns"] = kT0 + int64_t{i} * 1000000 + 250000;
  j["cpu_num"] = 8.0;
  return j;
}

inline std::string event_line(int i, const std::string& job = "job1") { return event_json(i, job).dump(); }

inline std::string header_line(const std::string& job = "job1") {
  nlohmann::ordered_json j;
  j["record"] = "job";
  j["job_id"] = job;
  j["params"] = {{"layers", {512, 512, 64}}, {"lr", 0.1}, {"name", "dlrm"}};
  j["command"] = {"python", "train.py", "--epochs", "1"};
  j["torch_version"] = "1.13.1";
  j["start_time_ns"] = kT0;
  return j.dump();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "pp_test_XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  // Writes (or appends to) a file below the directory; returns its path.
  std::string write(const std::string& name, const std::string& content, bool append = false) {
    const std::filesystem::path p = std::filesystem::path(path_) / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, append ? std::ios::app | std::ios::binary : std::ios::binary);
    out << content;
    return p.string();
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

inline std::string lines(int first, int count, const std::string& job = "job1") {
  std::string text;
  for (int i = first; i < first + count; ++i) text += event_line(i, job) + "\n";
  return text;
}

// Events of a CPU run (gpu_uuid "cpu"): pp_refresh imports them without asking Prometheus.
// Event i of a job that ran on the CPU only (no GPU).
inline nlohmann::ordered_json cpu_event_json(int i) {
  nlohmann::ordered_json event = event_json(i);
  event["gpu_uuid"] = "cpu";
  event["gpu"] = nullptr;
  return event;
}

inline std::string cpu_line(int i) { return cpu_event_json(i).dump(); }

inline std::string cpu_lines(int first, int count) {
  std::string text;
  for (int i = first; i < first + count; ++i) text += cpu_line(i) + "\n";
  return text;
}

}  // namespace pp_test
