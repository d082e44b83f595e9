// The events of event_files.hpp in the compact format, written as the spec says
// (docs/reference/layer_events.md), for tests that compare it with the same events as JSON Lines.
//
//   pp_test::CompactWriter writer;
//   const std::string text = pp_test::concat({writer.file_start(), writer.events(0, 8)});  // one block
//   const std::string more = writer.events(8, 4);                        // the next write block
//   // the same rows as pp_test::header_line-less JSON: pp_test::lines(0, 12)
#pragma once
#include <initializer_list>
#include <map>
#include <string>
#include <utility>

#include "unit/event_files.hpp"

namespace pp_test {

// Joins texts in the order given: `a.events(0, 4) + a.events(4, 4)` may call them in either
// order, and a writer's output depends on what it wrote before; a braced list is sequenced.
inline std::string concat(std::initializer_list<std::string> parts) {
  std::string out;
  for (const std::string& part : parts) out += part;
  return out;
}

// The header with the job fields every event of event_json() has.
inline std::string compact_header_line(const std::string& job = "job1") {
  nlohmann::ordered_json j;
  j["record"] = "job";
  j["format_version"] = 1;
  j["job_id"] = job;
  j["host_name"] = "node-1";
  j["ip"] = "10.0.0.7";
  j["pod"] = "dlrm-0";
  j["namespace"] = "ml";
  j["rank"] = 0;
  j["local_rank"] = 0;
  j["world_size"] = 1;
  j["pid"] = 4242;
  j["cpu_num"] = 8.0;
  j["command"] = {"python", "train.py"};
  j["torch_version"] = "1.13.1";
  j["start_time_ns"] = kT0;
  j["parameters"] = 1234;
  return j.dump();
}

class CompactWriter {
 public:
  explicit CompactWriter(bool cpu = false, const std::string& job = "job1") : cpu_(cpu), job_(job) {}

  // The format line and the job header.
  std::string file_start() const { return "#precisionprobe-events compact 1\n" + compact_header_line(job_) + "\n"; }

  // One write block of events first .. first + count - 1 (event_json(i), or cpu_line(i)'s
  // event with cpu): definitions as they are first needed, a block line first and at every batch.
  std::string events(int first, int count) {
    std::string text;
    bool block = false;
    for (int i = first; i < first + count; ++i) {
      nlohmann::ordered_json e = event_json(i, job_);
      if (cpu_) e["gpu_uuid"] = "cpu", e["gpu"] = nullptr;
      const auto layer_key = std::make_pair(e["layer"].get<std::string>(), e["layer_type"].get<std::string>());
      auto layer = layers_.find(layer_key);
      if (layer == layers_.end()) {
        layer = layers_.emplace(layer_key, static_cast<int>(layers_.size())).first;
        text += "L " + std::to_string(layer->second) + " " + e["layer"].dump() + " " + e["layer_type"].dump() + "\n";
      }
      if (!device_defined_) {
        device_defined_ = true;
        text += "D 0 " + e["gpu"].dump() + " " + e["gpu_uuid"].dump() + "\n";
      }
      const int64_t start = e["t_start_ns"].get<int64_t>(), end = e["t_end_ns"].get<int64_t>();
      const int64_t batch = e["batch"].get<int64_t>(), epoch = e["epoch"].get<int64_t>();
      if (!block || batch != batch_ || epoch != epoch_) {
        block = true;
        base_ = start, batch_ = batch, epoch_ = epoch;
        text += "@ " + std::to_string(base_) + " " + std::to_string(epoch) + " " + std::to_string(batch) + "\n";
      }
      text += std::to_string(layer->second) + (e["forward"].get<bool>() ? " f0 " : " b0 ") +
              std::to_string(start - base_) + " " + std::to_string(end - start) + "\n";
    }
    return text;
  }

 private:
  bool cpu_;
  std::string job_;
  std::map<std::pair<std::string, std::string>, int> layers_;
  bool device_defined_ = false;
  int64_t base_ = 0, batch_ = 0, epoch_ = 0;
};

}  // namespace pp_test
