#include "events/mig_device.hpp"

#include <limits>
#include <nlohmann/json.hpp>

namespace pp {

bool parse_mig_device(std::string_view line, MigDevice& device, std::string& problem) {
  device = MigDevice();
  // parse_event_line() has validated the line, so this parse succeeds; records are one line per
  // device, so a JSON document is cheap enough.
  const nlohmann::json doc = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (!doc.is_object()) return problem = "invalid JSON", false;
  for (const char* key : {"mig_uuid", "gpu_uuid"}) {
    const auto it = doc.find(key);
    if (it == doc.end()) return problem = std::string("mig_device record without field '") + key + "'", false;
    if (!it->is_string() || it->get_ref<const std::string&>().empty())
      return problem = std::string("field '") + key + "' is not non-empty text", false;
  }
  device.mig_uuid = doc["mig_uuid"].get<std::string>();
  device.gpu_uuid = doc["gpu_uuid"].get<std::string>();
  // The fetch tells a MIG device's events from a whole GPU's by this prefix (as CUDA names them).
  if (device.mig_uuid.rfind("MIG-", 0) != 0) return problem = "field 'mig_uuid' does not start with 'MIG-'", false;
  const auto id = doc.find("gpu_instance_id");
  if (id == doc.end()) return problem = "mig_device record without field 'gpu_instance_id'", false;
  if (!id->is_number_integer() || (id->is_number_unsigned() && id->get<uint64_t>() > uint64_t{INT32_MAX}) ||
      id->get<int64_t>() < 0 || id->get<int64_t>() > INT32_MAX)
    return problem = "field 'gpu_instance_id' is not an integer in [0, 2^31)", false;
  device.gpu_instance_id = id->get<int64_t>();
  const auto profile = doc.find("profile");
  if (profile != doc.end() && !profile->is_null()) {
    if (!profile->is_string()) return problem = "field 'profile' is not text or null", false;
    device.profile = profile->get<std::string>();
  }
  return true;
}

}  // namespace pp
