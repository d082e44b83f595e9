// One line of the compact event format (docs/reference/layer_events.md, "The compact format";
// the writer is python/precisionprobe/_compact_format.py): the grammar only. What a line means
// depends on the lines before it, which event_decoder.cpp keeps.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "events/event_fields.hpp"

namespace pp {

// Line 1 of a compact file: kFormatLinePrefix, then "compact 1".
constexpr std::string_view kFormatLinePrefix = "#precisionprobe-events ";
constexpr std::string_view kCompactFormat = "compact";
constexpr int64_t kCompactVersion = 1;
// Ids are dense (0, 1, ... in order of definition); this bounds what a damaged file can make a
// reader allocate.
constexpr int64_t kMaxCompactIds = int64_t{1} << 20;

enum class CompactKind {
  Event,      // LAYER f|bDEVICE START DURATION
  Block,      // @ BASE_NS EPOCH BATCH
  Device,     // D ID GPU|null "GPU_UUID"
  Layer,      // L ID "NAME" "TYPE"
  Malformed,  // none of these (`problem` says why)
};

struct CompactRecord {
  // Event: ids, direction, and times relative to the block (start) and to the start (duration).
  int64_t layer = 0, device = 0, start = 0, duration = 0;
  bool forward = false;
  // Block.
  int64_t base_ns = 0, epoch = 0, batch = 0;
  // Device and Layer: the id, and the two values (gpu, gpu_uuid) or (name, type).
  int64_t id = 0;
  Nullable<int64_t> gpu;
  std::string first, second;
};

// Parses a compact record line (without its '\n'); anything else, a JSON line included, is
// Malformed. Exactly one space between fields; integers are decimal, optionally negative
// where signed; text is a JSON string (escapes decoded).
CompactKind parse_compact_line(std::string_view line, CompactRecord& record, std::string& problem);

// For line 1: whether it claims to be a format line, and if so whether it is one this reader
// knows (`what` is then the rest of the line, e.g. "compact 2", for the error: non-printable
// bytes as '?', at most 40 of them).
bool is_format_line(std::string_view line);
bool is_known_format(std::string_view line, std::string& what);

}  // namespace pp
