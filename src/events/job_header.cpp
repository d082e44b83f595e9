#include "events/job_header.hpp"

#include <limits>
#include <nlohmann/json.hpp>

namespace pp {
namespace {

// Header fields: each optional one is absent, null, or of its type.
bool header_text(const nlohmann::json& doc, const char* key, std::optional<std::string>& out,
                 std::string& problem) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return true;
  if (!it->is_string()) return problem = std::string("field '") + key + "' is not text or null", false;
  out = it->get<std::string>();
  return true;
}

bool header_integer(const nlohmann::json& doc, const char* key, std::optional<int64_t>& out,
                    std::string& problem) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return true;
  if (it->is_number_integer() &&
      (!it->is_number_unsigned() ||
       it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    out = it->get<int64_t>();
    return true;
  }
  problem = std::string("field '") + key + "' " +
            (it->is_number_integer() ? "is out of range" : "is not an integer or null");
  return false;
}

}  // namespace

bool parse_job_header(std::string_view line, JobHeader& header, std::string& problem) {
  header = JobHeader();
  // parse_event_line() has validated the line (UTF-8 included), so this parse succeeds.
  const nlohmann::json doc = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (!doc.is_object()) return problem = "invalid JSON", false;
  const auto job_id = doc.find("job_id");
  if (job_id == doc.end()) return problem = "job header without field 'job_id'", false;
  if (!job_id->is_string()) return problem = "field 'job_id' is not text", false;
  header.job_id = job_id->get<std::string>();
  if (header.job_id.empty()) return problem = "field 'job_id' is empty", false;
  if (!header_text(doc, "host_name", header.host_name, problem) ||
      !header_text(doc, "torch_version", header.torch_version, problem) ||
      !header_integer(doc, "pid", header.pid, problem) ||
      !header_integer(doc, "start_time_ns", header.start_time_ns, problem) ||
      !header_integer(doc, "parameters", header.params, problem))
    return false;
  const auto params = doc.find("params");
  if (!header.params && params != doc.end() && params->is_number_integer()) {
    std::string ignored;
    header_integer(doc, "params", header.params, ignored);
  }
  const auto command = doc.find("command");
  if (command != doc.end() && !command->is_null()) header.command = command->dump();
  return true;
}

}  // namespace pp
