// The job header line that the hook client writes once per process ({"record": "job", ...},
// python/precisionprobe/_event_format.py job_header): what ran and how big the model is.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pp {

// A field that is absent or null is nullopt.
struct JobHeader {
  std::string job_id;
  std::optional<std::string> host_name, torch_version;
  std::optional<std::string> command;  // the JSON text of the value (the client writes a list)
  std::optional<int64_t> pid, params, start_time_ns;
};

// Decodes a line that parse_event_line() classified as LineKind::JobHeader. Returns false, with
// `problem`, when job_id is missing or a field has the wrong type. The parameter count is the
// client's "parameters", or "params" when that is an integer (earlier writers; an object there
// is something else and gives nullopt). Headers are one line per process, so this one builds a
// JSON document rather than adding cases to the event parser.
bool parse_job_header(std::string_view line, JobHeader& header, std::string& problem);

}  // namespace pp
