// The encoding of a block of stored events: what varies from event to event of one process
// (layer, direction, epoch, batch, times, line), the rest (job, GPU, host, file) being the
// block's own columns (pp_events_blocks). Version 1:
//
//   byte 0     1 (the version)
//   varint     the number of events
//   per event  seven varints: the index minus the previous index minus 1 (zigzag; an event's
//              index is its place in the block when written, which stays its id when others
//              are removed), layer id * 8 + batch is NULL * 4 + epoch is NULL * 2 + forward,
//              then zigzag differences from the previous event of epoch, batch, t_start_ns and
//              line (a NULL epoch or batch counts as 0), and t_end_ns - t_start_ns (zigzag).
//              The first event's "previous" values are index -1 and 0 for the rest.
//
// Differences are taken modulo 2^64, so any int64 values round-trip. A varint is 7 bits a byte,
// low bits first, at most 10 bytes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pp {

struct BlockEvent {
  int64_t index = 0;     // place in the block when written
  int64_t layer_id = 0;  // pp_events_layers.id, >= 0
  bool forward = false;
  bool epoch_null = false, batch_null = false;
  int64_t epoch = 0, batch = 0;  // 0 when NULL
  int64_t t_start_ns = 0, t_end_ns = 0;
  int64_t line = 0;
};

// The most events a block holds: an event's id is its block's id * kBlockIdScale + its index.
constexpr int64_t kBlockIdScale = int64_t{1} << 16;

std::string encode_block(const std::vector<BlockEvent>& events);

// Appends the events of `data` to `out`; false, with `problem`, for bytes encode_block does not
// make (a database file may hold anything): `out` is then left as it was.
bool decode_block(std::string_view data, std::vector<BlockEvent>& out, std::string& problem);

}  // namespace pp
