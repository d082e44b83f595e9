// The grammar of compact event lines: hand-written integer and token scanning (an event line is
// four numbers; a general tokenizer would cost more than the line), JSON strings through the
// same scanner as JSON Lines.
#include "events/compact_line.hpp"

#include "events/json_scanner.hpp"

namespace pp {
namespace {

// A cursor over one line with the few tokens the format has.
class CompactScanner : public JsonScanner {
 public:
  explicit CompactScanner(std::string_view line) : JsonScanner(line) {}

  bool at_end() const { return p_ == end_; }
  bool space() { return p_ < end_ && *p_ == ' ' ? (++p_, true) : false; }
  bool byte(char c) { return p_ < end_ && *p_ == c ? (++p_, true) : false; }

  // -?[0-9]{1,19} that fits int64 (a non-negative one when !allow_negative).
  bool integer(int64_t& out, bool allow_negative) {
    const bool negative = allow_negative && byte('-');
    uint64_t value = 0;
    const char* first = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      if (p_ - first == 19) return false;
      value = value * 10 + static_cast<uint64_t>(*p_++ - '0');
    }
    if (p_ == first || value > uint64_t{INT64_MAX} + (negative ? 1 : 0)) return false;
    out = negative ? static_cast<int64_t>(~value + 1) : static_cast<int64_t>(value);
    return true;
  }

  bool text(std::string& out) {
    if (p_ == end_ || *p_ != '"') return false;
    std::string_view value;
    if (!parse_string(value, scratch_)) return false;
    out.assign(value.data(), value.size());
    return true;
  }

  bool nullable_integer(Nullable<int64_t>& out) {
    if (literal("null")) return out.null = true, true;
    out.null = false;
    return integer(out.value, true);
  }

 private:
  std::string scratch_;
};

CompactKind malformed(std::string& problem, const char* why) {
  problem = why;
  return CompactKind::Malformed;
}

}  // namespace

CompactKind parse_compact_line(std::string_view line, CompactRecord& r, std::string& problem) {
  CompactScanner s(line);
  if (line.empty()) return malformed(problem, "empty line");
  const char tag = line[0];
  if (tag >= '0' && tag <= '9') {
    int64_t device = 0;
    if (!s.integer(r.layer, false) || !s.space() || line.size() < 2)
      return malformed(problem, "an event is 'LAYER f|bDEVICE START DURATION': bad layer id");
    r.forward = s.byte('f');
    if ((!r.forward && !s.byte('b')) || !s.integer(device, false) || !s.space())
      return malformed(problem, "an event is 'LAYER f|bDEVICE START DURATION': bad direction or device");
    r.device = device;
    if (!s.integer(r.start, true) || !s.space() || !s.integer(r.duration, true) || !s.at_end())
      return malformed(problem, "an event is 'LAYER f|bDEVICE START DURATION': bad start or duration");
    return CompactKind::Event;
  }
  switch (tag) {
    case '@':
      s.byte('@');
      if (!s.space() || !s.integer(r.base_ns, true) || !s.space() || !s.integer(r.epoch, true) || !s.space() ||
          !s.integer(r.batch, true) || !s.at_end())
        return malformed(problem, "a block line is '@ BASE_NS EPOCH BATCH'");
      return CompactKind::Block;
    case 'D':
      s.byte('D');
      if (!s.space() || !s.integer(r.id, false) || !s.space() || !s.nullable_integer(r.gpu) || !s.space() ||
          !s.text(r.second) || !s.at_end())
        return malformed(problem, "a device line is 'D ID GPU_INDEX|null \"GPU_UUID\"'");
      return CompactKind::Device;
    case 'L':
      s.byte('L');
      if (!s.space() || !s.integer(r.id, false) || !s.space() || !s.text(r.first) || !s.space() ||
          !s.text(r.second) || !s.at_end())
        return malformed(problem, "a layer line is 'L ID \"NAME\" \"TYPE\"'");
      return CompactKind::Layer;
    default:
      problem = "unknown record type '";
      if (static_cast<unsigned char>(tag) >= 0x20 && static_cast<unsigned char>(tag) < 0x7F)
        problem += tag;
      else
        problem += "\\x" + std::string(1, "0123456789abcdef"[(tag >> 4) & 15]) + "0123456789abcdef"[tag & 15];
      problem += "'";
      return CompactKind::Malformed;
  }
}

bool is_format_line(std::string_view line) { return line.substr(0, kFormatLinePrefix.size()) == kFormatLinePrefix; }

bool is_known_format(std::string_view line, std::string& what) {
  std::string_view rest = line.substr(kFormatLinePrefix.size());
  if (!rest.empty() && rest.back() == '\r') rest.remove_suffix(1);
  if (rest == std::string(kCompactFormat) + " " + std::to_string(kCompactVersion)) return true;
  // For the error message: printable, and short (the line may be anything).
  what.clear();
  for (const char c : rest.substr(0, 40))
    what += static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7F ? c : '?';
  if (rest.size() > 40) what += "...";
  return false;
}

}  // namespace pp
