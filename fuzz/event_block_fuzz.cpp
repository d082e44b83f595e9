// The block encoding of pp_events over arbitrary bytes, as a database file may hold them.
//
// Checked: decoding never reads past the bytes or allocates for a count they cannot hold; a
// refused block leaves the output as it was; a block that decodes encodes back to bytes that
// decode to the same events (varints may be written longer than needed, so not the same
// bytes); events made from the input round-trip exactly.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "events/event_block.hpp"
#include "fuzz/fuzz_check.hpp"

namespace {

bool same(const std::vector<pp::BlockEvent>& a, const std::vector<pp::BlockEvent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].index != b[i].index || a[i].layer_id != b[i].layer_id || a[i].forward != b[i].forward ||
        a[i].epoch_null != b[i].epoch_null || a[i].batch_null != b[i].batch_null || a[i].epoch != b[i].epoch ||
        a[i].batch != b[i].batch || a[i].t_start_ns != b[i].t_start_ns || a[i].t_end_ns != b[i].t_end_ns ||
        a[i].line != b[i].line)
      return false;
  return true;
}

// Events whose fields are the input's bytes, 8 at a time (indexes increasing, layer ids < 2^60).
std::vector<pp::BlockEvent> events_from(const uint8_t* data, size_t size) {
  std::vector<pp::BlockEvent> events;
  int64_t index = -1;
  for (size_t at = 0; at + 56 <= size && events.size() < 4096; at += 56) {
    int64_t v[7];
    std::memcpy(v, data + at, sizeof v);
    pp::BlockEvent e;
    index += 1 + static_cast<int64_t>(static_cast<uint64_t>(v[0]) % 3);
    if (index >= pp::kBlockIdScale) break;
    e.index = index;
    e.layer_id = static_cast<int64_t>(static_cast<uint64_t>(v[1]) >> 4);
    e.forward = v[1] & 1, e.epoch_null = v[1] & 2, e.batch_null = v[1] & 4;
    e.epoch = e.epoch_null ? 0 : v[2], e.batch = e.batch_null ? 0 : v[3];
    e.t_start_ns = v[4], e.t_end_ns = v[5], e.line = v[6];
    events.push_back(e);
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<pp::BlockEvent> out(1), again;
  std::string problem;
  if (pp::decode_block(bytes, out, problem)) {
    out.erase(out.begin());
    const std::string encoded = pp::encode_block(out);
    PP_FUZZ_CHECK(pp::decode_block(encoded, again, problem), "a decoded block re-encoded is refused: %s", problem.c_str());
    PP_FUZZ_CHECK(same(out, again), "a decoded block re-encoded decodes to other events");
  } else {
    PP_FUZZ_CHECK(out.size() == 1, "a refused block changed the output");
    PP_FUZZ_CHECK(!problem.empty(), "a refused block without a reason");
  }
  const std::vector<pp::BlockEvent> made = events_from(data, size);
  again.clear();
  PP_FUZZ_CHECK(pp::decode_block(pp::encode_block(made), again, problem), "an encoded block is refused: %s", problem.c_str());
  PP_FUZZ_CHECK(same(made, again), "events do not round-trip");
  return 0;
}
