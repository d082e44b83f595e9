#include "events/event_block.hpp"

namespace pp {
namespace {

constexpr uint8_t kBlockVersion = 1;

uint64_t zigzag(uint64_t difference) {
  const auto v = static_cast<int64_t>(difference);
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }

constexpr size_t kLongestVarint = 10;  // 64 bits, 7 a byte

// Writes v at `at`, which has room for kLongestVarint bytes; returns the byte after it.
char* put_varint(char* at, uint64_t v) {
  while (v >= 0x80) {
    *at++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *at++ = static_cast<char>(v);
  return at;
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool varint(uint64_t& v) {
    // Where the longest varint fits in what is left, no byte needs its own check (most fields
    // of an event take one byte; a block's decoding is a step of every fold and alignment).
    if (data_.size() - pos_ >= kLongestVarint) {
      const auto* bytes = reinterpret_cast<const unsigned char*>(data_.data()) + pos_;
      uint64_t value = 0;
      for (size_t k = 0; k < kLongestVarint; ++k) {
        const uint64_t byte = bytes[k];
        if (k == kLongestVarint - 1 && byte > 1) return false;  // more than 64 bits
        value |= (byte & 0x7f) << (7 * k);
        if (!(byte & 0x80)) {
          v = value;
          pos_ += k + 1;
          return true;
        }
      }
      return false;
    }
    v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (pos_ >= data_.size()) return false;
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      if (shift == 63 && byte > 1) return false;  // more than 64 bits
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return true;
    }
    return false;
  }
  bool at_end() const { return pos_ == data_.size(); }
  size_t left() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }
int64_t s(uint64_t v) { return static_cast<int64_t>(v); }

}  // namespace

std::string encode_block(const std::vector<BlockEvent>& events) {
  // Room for the longest encoding, written through a pointer and cut to what was written: no
  // check of the string's capacity per byte (an import encodes every event it reads).
  std::string out(1 + kLongestVarint * (1 + 7 * events.size()), '\0');
  char* at = out.data();
  *at++ = static_cast<char>(kBlockVersion);
  at = put_varint(at, events.size());
  BlockEvent previous;
  previous.index = -1;
  for (const BlockEvent& e : events) {
    at = put_varint(at, zigzag(u(e.index) - u(previous.index) - 1));
    at = put_varint(at, (u(e.layer_id) << 3) | (e.batch_null ? 4 : 0) | (e.epoch_null ? 2 : 0) | (e.forward ? 1 : 0));
    at = put_varint(at, zigzag(u(e.epoch) - u(previous.epoch)));
    at = put_varint(at, zigzag(u(e.batch) - u(previous.batch)));
    at = put_varint(at, zigzag(u(e.t_start_ns) - u(previous.t_start_ns)));
    at = put_varint(at, zigzag(u(e.line) - u(previous.line)));
    at = put_varint(at, zigzag(u(e.t_end_ns) - u(e.t_start_ns)));
    previous = e;
  }
  out.resize(static_cast<size_t>(at - out.data()));
  return out;
}

bool decode_block(std::string_view data, std::vector<BlockEvent>& out, std::string& problem) {
  uint64_t count = 0;
  if (data.empty() || static_cast<uint8_t>(data[0]) != kBlockVersion) {
    problem = data.empty() ? "no bytes" : "an encoding version this reader does not know";
    return false;
  }
  Reader in(data.substr(1));
  // Each event takes at least 7 bytes: a count beyond that is damage, not a reason to allocate.
  if (!in.varint(count) || count > in.left() / 7 || count > static_cast<uint64_t>(kBlockIdScale)) {
    problem = "its event count is more than its bytes can hold";
    return false;
  }
  const size_t first = out.size();
  out.reserve(first + count);
  BlockEvent previous;
  previous.index = -1;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t f[7];
    for (uint64_t& v : f)
      if (!in.varint(v)) {
        out.resize(first);
        problem = "event " + std::to_string(i + 1) + " is cut short";
        return false;
      }
    BlockEvent e;
    e.index = s(u(previous.index) + 1 + unzigzag(f[0]));
    e.layer_id = s(f[1] >> 3);
    e.forward = (f[1] & 1) != 0;
    e.epoch_null = (f[1] & 2) != 0;
    e.batch_null = (f[1] & 4) != 0;
    e.epoch = s(u(previous.epoch) + unzigzag(f[2]));
    e.batch = s(u(previous.batch) + unzigzag(f[3]));
    e.t_start_ns = s(u(previous.t_start_ns) + unzigzag(f[4]));
    e.line = s(u(previous.line) + unzigzag(f[5]));
    e.t_end_ns = s(u(e.t_start_ns) + unzigzag(f[6]));
    if (e.index <= previous.index || e.index >= kBlockIdScale) {
      out.resize(first);
      problem = "its event indexes are out of order";
      return false;
    }
    out.push_back(e);
    previous = e;
  }
  if (!in.at_end()) {
    out.resize(first);
    problem = "bytes follow its last event";
    return false;
  }
  return true;
}

}  // namespace pp
