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

#include "events/event_reader.hpp"
#include "fuzz/fuzz_check.hpp"

namespace {

using nlohmann::json;
using pp::LayerEvent;
using pp::LineKind;

struct FieldSpec {
  const char* name;
  char type;  // 's' text, 'S' text or null, 'i' integer, 'I' integer or null, 'b' bool, 'n' number
};
constexpr FieldSpec kFields[] = {
    {"job_id", 's'}, {"host_name", 'S'}, {"ip", 'S'}, {"pod", 'S'}, {"namespace", 'S'},
    {"gpu_uuid", 's'}, {"gpu", 'I'}, {"rank", 'i'}, {"local_rank", 'i'}, {"world_size", 'i'},
    {"pid", 'i'}, {"epoch", 'i'}, {"batch", 'i'}, {"layer", 's'}, {"layer_type", 's'},
    {"forward", 'b'}, {"t_start_ns", 'i'}, {"t_end_ns", 'i'}, {"cpu_num", 'n'}};

bool is_int64(const json& v) {
  return v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t{INT64_MAX});
}

bool has_type(const json& v, char type) {
  switch (type) {
    case 's': return v.is_string();
    case 'S': return v.is_string() || v.is_null();
    case 'i': return is_int64(v);
    case 'I': return is_int64(v) || v.is_null();
    case 'b': return v.is_boolean();
    default: return v.is_number();
  }
}

// What the line means to nlohmann; nullopt where the reader may differ (see above).
std::optional<LineKind> reference_kind(std::string_view line, json& out) {
  if (line.size() >= 3 && std::memcmp(line.data(), "\xEF\xBB\xBF", 3) == 0) line.remove_prefix(3);
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
  for (const FieldSpec& f : kFields)
    if (!out.contains(f.name) || !has_type(out[f.name], f.type)) return LineKind::Malformed;
  return LineKind::Event;
}

void check_text(const json& j, const char* name, const std::string& value, bool null) {
  if (j[name].is_null()) {
    PP_FUZZ_CHECK(null, "field %s: null not flagged", name);
  } else {
    PP_FUZZ_CHECK(!null, "field %s: flagged null", name);
    PP_FUZZ_CHECK(j[name].get<std::string>() == value, "field %s: '%s' but the reference has '%s'",
                  name, pp_fuzz::printable(value).c_str(),
                  pp_fuzz::printable(j[name].get<std::string>()).c_str());
  }
}

void check_integer(const json& j, const char* name, int64_t value) {
  PP_FUZZ_CHECK(j[name].get<int64_t>() == value, "field %s: %lld but the reference has %lld", name,
                static_cast<long long>(value), static_cast<long long>(j[name].get<int64_t>()));
}

void check_event(const json& j, const LayerEvent& e) {
  check_text(j, "job_id", e.job_id, false);
  check_text(j, "host_name", e.host_name, e.host_name_null);
  check_text(j, "ip", e.ip, e.ip_null);
  check_text(j, "pod", e.pod, e.pod_null);
  check_text(j, "namespace", e.namespace_, e.namespace_null);
  check_text(j, "gpu_uuid", e.gpu_uuid, false);
  if (j["gpu"].is_null())
    PP_FUZZ_CHECK(e.gpu_null, "field gpu: null not flagged");
  else
    PP_FUZZ_CHECK(!e.gpu_null && j["gpu"].get<int64_t>() == e.gpu, "field gpu differs");
  check_integer(j, "rank", e.rank);
  check_integer(j, "local_rank", e.local_rank);
  check_integer(j, "world_size", e.world_size);
  check_integer(j, "pid", e.pid);
  check_integer(j, "epoch", e.epoch);
  check_integer(j, "batch", e.batch);
  check_text(j, "layer", e.layer, false);
  check_text(j, "layer_type", e.layer_type, false);
  PP_FUZZ_CHECK(j["forward"].get<bool>() == e.forward, "field forward differs");
  check_integer(j, "t_start_ns", e.t_start_ns);
  check_integer(j, "t_end_ns", e.t_end_ns);
  PP_FUZZ_CHECK(j["cpu_num"].get<double>() == e.cpu_num, "field cpu_num: %.17g, reference %.17g",
                e.cpu_num, j["cpu_num"].get<double>());
}

const char* kind_name(LineKind k) {
  switch (k) {
    case LineKind::Event: return "event";
    case LineKind::JobHeader: return "job header";
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

  json reference;
  const std::optional<LineKind> expected = reference_kind(line, reference);
  if (!expected) return 0;
  PP_FUZZ_CHECK(*expected == kind, "reader says %s (%s), reference says %s for '%s'",
                kind_name(kind), problem.c_str(), kind_name(*expected),
                pp_fuzz::printable(std::string(line)).c_str());
  if (kind == LineKind::Event) check_event(reference, event);
  return 0;
}
