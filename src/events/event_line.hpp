// Parsing one line of the hook client's JSON Lines (docs/reference/layer_events.md has the
// format): an event, the job header written once per process, the record of a MIG device the
// process ran on, a blank line, or something malformed (with the reason).
#pragma once
#include <string>
#include <string_view>

#include "events/event_fields.hpp"

namespace pp {

enum class LineKind {
  Event,      // `event` holds the line's event
  JobHeader,  // {"record": "job", ...}: once per process, not an event
  MigDevice,  // {"record": "mig_device", ...}: which GPU instance a MIG device is, not an event
  Blank,      // empty or whitespace only (EventDecoder: also a line that only sets context)
  Malformed,  // not JSON, not an object, or a field missing or of the wrong type
};

// Parses one line (without its '\n'). For Malformed, `problem` says why ("missing field
// 'layer'", "invalid JSON at byte 17"); fields of `event` are then unspecified.
// Unknown fields are ignored, so newer clients can add fields without breaking old readers.
LineKind parse_event_line(std::string_view line, LayerEvent& event, std::string& problem);

}  // namespace pp
