// One line of a layer events file (JSON Lines from the hook client): parse_event_line, and
// parse_job_header on the lines it classifies as job headers.
//
// The reader has its own JSON parser (for speed), so it is checked against nlohmann::json as
// the reference: same verdict (event, job header, blank, malformed) and, for events, the same
// decoded values. Lines where the two may legitimately differ are only run, not compared: a
// number nlohmann cannot hold in a double, nesting deeper than the reader's limit, and duplicate
// top-level keys (RFC 8259 leaves their meaning open). A NUL byte, where nlohmann would stop
// reading, makes a line malformed. Malformed lines must say why.
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "events/event_fields.hpp"
#include "events/event_line.hpp"
#include "events/job_header.hpp"
#include "events/mig_device.hpp"
#include "fuzz/fuzz_check.hpp"

namespace {

using nlohmann::json;
using pp::LayerEvent;
using pp::LineKind;

bool is_int64(const json& v) {
  return v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t{INT64_MAX});
}

// Whether a JSON value has the type of an event field (events/event_fields.hpp).
bool has_type(const json& v, pp::FieldType type) {
  switch (type) {
    case pp::FieldType::Text: return v.is_string();
    case pp::FieldType::NullableText: return v.is_string() || v.is_null();
    case pp::FieldType::Integer: return is_int64(v);
    case pp::FieldType::NullableInteger: return is_int64(v) || v.is_null();
    case pp::FieldType::Boolean: return v.is_boolean();
    case pp::FieldType::Number: return v.is_number();
  }
  return false;
}

// What the line means to nlohmann; nullopt where the reader may differ (see above).
std::optional<LineKind> reference_kind(std::string_view line, json& out) {
  if (line.size() >= 3 && std::memcmp(line.data(), "\xEF\xBB\xBF", 3) == 0) line.remove_prefix(3);
  // One BOM at most, as JSON allows: a second is a stray U+FEFF before the object, which the
  // reader refuses, but which nlohmann, skipping a BOM of its own, would take.
  if (line.size() >= 3 && std::memcmp(line.data(), "\xEF\xBB\xBF", 3) == 0) return LineKind::Malformed;
  if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) return LineKind::Blank;
  // nlohmann ends its input at a NUL byte; JSON allows none outside strings, and inside a string
  // a raw control character is invalid too.
  if (line.find('\0') != std::string_view::npos) return LineKind::Malformed;
  int max_depth = 0;
  bool duplicate = false;
  std::set<std::string> keys;
  json::parser_callback_t track = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > max_depth) max_depth = depth;
    if (event == json::parse_event_t::key && depth == 1 && !keys.insert(parsed.get<std::string>()).second)
      duplicate = true;
    return true;
  };
  try {
    out = json::parse(line.begin(), line.end(), track);
  } catch (const json::exception& e) {
    if (std::strstr(e.what(), "number overflow") != nullptr) return std::nullopt;
    return max_depth > 200 ? std::nullopt : std::optional<LineKind>(LineKind::Malformed);
  }
  if (max_depth > 200 || duplicate) return std::nullopt;
  if (!out.is_object()) return LineKind::Malformed;
  if (out.contains("record") && out["record"] == "job") return LineKind::JobHeader;
  if (out.contains("record") && out["record"] == "mig_device") return LineKind::MigDevice;
  for (int f = 0; f < pp::kEventFieldCount; ++f) {
    const std::string key(pp::kEventFieldKeys[f]);
    if (!out.contains(key) || !has_type(out[key], pp::kEventFieldTypes[f])) return LineKind::Malformed;
  }
  for (const char* name : {"job_id", "gpu_uuid", "layer"})  // names that identify the event may not be empty
    if (out[name] == "") return LineKind::Malformed;
  return LineKind::Event;
}

// Checks one decoded field against the reference's value.
struct CheckField {
  const json& value;
  const char* name;
  void operator()(const std::string& text) const {
    PP_FUZZ_CHECK(value.get<std::string>() == text, "field %s: '%s' but the reference has '%s'", name,
                  pp_fuzz::printable(text).c_str(), pp_fuzz::printable(value.get<std::string>()).c_str());
  }
  void operator()(const pp::Nullable<std::string>& text) const {
    PP_FUZZ_CHECK(value.is_null() == text.null, "field %s: null %d but the reference %s", name, text.null,
                  value.is_null() ? "is null" : "is not");
    if (!value.is_null()) (*this)(text.value);
  }
  void operator()(int64_t n) const {
    PP_FUZZ_CHECK(value.get<int64_t>() == n, "field %s: %lld but the reference has %lld", name,
                  static_cast<long long>(n), static_cast<long long>(value.get<int64_t>()));
  }
  void operator()(const pp::Nullable<int64_t>& n) const {
    PP_FUZZ_CHECK(value.is_null() == n.null, "field %s: null %d but the reference %s", name, n.null,
                  value.is_null() ? "is null" : "is not");
    if (!value.is_null()) (*this)(n.value);
  }
  void operator()(bool b) const { PP_FUZZ_CHECK(value.get<bool>() == b, "field %s differs", name); }
  void operator()(double d) const {
    PP_FUZZ_CHECK(value.get<double>() == d, "field %s: %.17g, reference %.17g", name, d, value.get<double>());
  }
};

void check_event(const json& j, const LayerEvent& e) {
  for (int f = 0; f < pp::kEventFieldCount; ++f) {
    const std::string key(pp::kEventFieldKeys[f]);
    pp::visit_event_field(e, f, CheckField{j[key], key.c_str()});
  }
}

const char* kind_name(LineKind k) {
  switch (k) {
    case LineKind::Event: return "event";
    case LineKind::JobHeader: return "job header";
    case LineKind::MigDevice: return "mig_device record";
    case LineKind::Blank: return "blank";
    case LineKind::Malformed: return "malformed";
  }
  return "?";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  LayerEvent event;
  std::string problem;
  LineKind kind;
  try {
    kind = pp::parse_event_line(line, event, problem);
  } catch (const std::exception& e) {
    pp_fuzz::unexpected_exception("parse_event_line", e);
  }
  if (kind == LineKind::Malformed) PP_FUZZ_CHECK(!problem.empty(), "malformed without a problem");

  if (kind == LineKind::JobHeader) {
    pp::JobHeader header;
    std::string header_problem;
    try {
      if (!pp::parse_job_header(line, header, header_problem))
        PP_FUZZ_CHECK(!header_problem.empty(), "job header refused without a problem");
    } catch (const std::exception& e) {
      pp_fuzz::unexpected_exception("parse_job_header", e);
    }
  }

  if (kind == LineKind::MigDevice) {
    pp::MigDevice device;
    std::string device_problem;
    try {
      if (!pp::parse_mig_device(line, device, device_problem))
        PP_FUZZ_CHECK(!device_problem.empty(), "mig_device record refused without a problem");
    } catch (const std::exception& e) {
      pp_fuzz::unexpected_exception("parse_mig_device", e);
    }
  }

  json reference;
  const std::optional<LineKind> expected = reference_kind(line, reference);
  if (!expected) return 0;
  PP_FUZZ_CHECK(*expected == kind, "reader says %s (%s), reference says %s for '%s'",
                kind_name(kind), problem.c_str(), kind_name(*expected),
                pp_fuzz::printable(std::string(line)).c_str());
  if (kind == LineKind::Event) check_event(reference, event);
  return 0;
}
