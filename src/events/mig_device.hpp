// The record the hook client writes, before the first event of a device, when that device is a
// MIG instance ({"record": "mig_device", ...}, python/precisionprobe/_event_format.py
// mig_device_record): which physical GPU and GPU instance the MIG device UUID of its events is.
// dcgm-exporter labels a GPU instance's series with the parent GPU's UUID and GPU_I_ID, so
// pp_refresh needs this to find the samples of events whose gpu_uuid is "MIG-...".
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pp {

struct MigDevice {
  std::string mig_uuid;                // "MIG-..." as the process saw it (events' gpu_uuid)
  std::string gpu_uuid;                // the parent GPU's "GPU-...": dcgm-exporter's UUID label
  int64_t gpu_instance_id = 0;         // dcgm-exporter's GPU_I_ID label
  std::optional<std::string> profile;  // "3g.40gb" (GPU_I_PROFILE), when known
};

// Decodes a line that parse_event_line() classified as LineKind::MigDevice. Returns false, with
// `problem`, when mig_uuid, gpu_uuid or gpu_instance_id is missing or of the wrong type, or
// profile is neither text nor null.
bool parse_mig_device(std::string_view line, MigDevice& device, std::string& problem);

}  // namespace pp
