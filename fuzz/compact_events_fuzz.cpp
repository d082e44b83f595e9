// A compact event file (docs/reference/layer_events.md), decoded line by line by EventDecoder as
// layer_events and pp_refresh decode it.
//
// Properties: decoding never crashes and throws only pp::Error, and only for a first line that
// is a format line of an unknown format; a malformed line says why; and, what pp_refresh relies
// on, restoring the decoder from state() after any line and decoding the rest gives the same
// verdicts and the same events as decoding on without stopping.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.hpp"
#include "events/event_decoder.hpp"
#include "fuzz/fuzz_check.hpp"

namespace {

std::string summary(pp::LineKind kind, const pp::LayerEvent& e) {
  if (kind != pp::LineKind::Event) return std::to_string(static_cast<int>(kind));
  return e.job_id + "|" + e.gpu_uuid + "|" + (e.gpu.null ? "-" : std::to_string(e.gpu.value)) + "|" + e.layer + "|" +
         e.layer_type + "|" + std::to_string(e.forward) + "|" + std::to_string(e.epoch) + "|" + std::to_string(e.batch) +
         "|" + std::to_string(e.t_start_ns) + "|" + std::to_string(e.t_end_ns) + "|" + std::to_string(e.pid);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t newline = text.find('\n', at);
    if (newline == std::string_view::npos) break;  // a torn tail: never decoded as a whole line
    lines.push_back(text.substr(at, newline - at));
    at = newline + 1;
  }
  if (lines.size() > 64) lines.resize(64);  // the resume check is quadratic

  pp::EventDecoder decoder;
  decoder.reset("f");
  pp::LayerEvent event;
  std::string problem;
  std::vector<std::string> verdicts;
  std::vector<std::string> states;
  try {
    for (size_t i = 0; i < lines.size(); ++i) {
      problem.clear();
      const pp::LineKind kind = decoder.decode(lines[i], static_cast<int64_t>(i + 1), true, event, problem);
      PP_FUZZ_CHECK(kind != pp::LineKind::Malformed || !problem.empty(), "no reason for line %s",
                    pp_fuzz::printable(std::string(lines[i])).c_str());
      verdicts.push_back(summary(kind, event));
      states.push_back(decoder.state());
    }
  } catch (const pp::Error& e) {
    PP_FUZZ_CHECK(verdicts.empty() && std::string(e.what()).find("is not one this reader knows") != std::string::npos,
                  "unexpected error: %s", e.what());
    return 0;
  } catch (const std::exception& e) {
    pp_fuzz::unexpected_exception("EventDecoder::decode", e);
  }
  if (!decoder.compact()) return 0;
  for (size_t stop = 1; stop < lines.size(); ++stop) {
    pp::EventDecoder resumed;
    resumed.reset("f");
    PP_FUZZ_CHECK(resumed.restore(states[stop - 1], problem), "state after line %zu not restored: %s", stop,
                  problem.c_str());
    for (size_t i = stop; i < lines.size(); ++i) {
      const pp::LineKind kind = resumed.decode(lines[i], static_cast<int64_t>(i + 1), true, event, problem);
      PP_FUZZ_CHECK(summary(kind, event) == verdicts[i], "resumed after line %zu, line %zu differs", stop, i + 1);
    }
  }
  return 0;
}
