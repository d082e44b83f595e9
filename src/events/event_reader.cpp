#include "events/event_reader.hpp"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/text.hpp"

namespace pp {
namespace {

// ---- Field table ------------------------------------------------------------------------

enum Field : int {
  kJobId, kHostName, kIp, kPod, kNamespace, kGpuUuid, kGpu, kRank, kLocalRank, kWorldSize, kPid,
  kEpoch, kBatch, kLayer, kLayerType, kForward, kTStartNs, kTEndNs, kCpuNum,
  kFieldCount,
  kRecord = kFieldCount,  // "job" on the job header line
  kUnknown,
};

constexpr std::string_view kFieldNames[kFieldCount + 1] = {
    "job_id", "host_name", "ip", "pod", "namespace", "gpu_uuid", "gpu", "rank", "local_rank",
    "world_size", "pid", "epoch", "batch", "layer", "layer_type", "forward", "t_start_ns",
    "t_end_ns", "cpu_num", "record"};

enum class FieldType { Text, NullableText, Integer, NullableInteger, Boolean, Number };

FieldType field_type(Field f) {
  switch (f) {
    case kHostName: case kIp: case kPod: case kNamespace: return FieldType::NullableText;
    case kJobId: case kGpuUuid: case kLayer: case kLayerType: return FieldType::Text;
    case kGpu: return FieldType::NullableInteger;
    case kForward: return FieldType::Boolean;
    case kCpuNum: return FieldType::Number;
    default: return FieldType::Integer;
  }
}

const char* type_phrase(FieldType t) {
  switch (t) {
    case FieldType::Text: return "is not text";
    case FieldType::NullableText: return "is not text or null";
    case FieldType::Integer: return "is not an integer";
    case FieldType::NullableInteger: return "is not an integer or null";
    case FieldType::Boolean: return "is not true or false";
    case FieldType::Number: return "is not a number";
  }
  return "has the wrong type";
}

// Each key with its quotes ("job_id" is 8 bytes, none is over 16) as two little-endian words and
// masks, so the key a line is expected to have next is checked with two loads.
struct KeyPattern {
  uint64_t word[2] = {0, 0};
  uint64_t mask[2] = {0, 0};
  size_t size = 0;
};

constexpr std::array<KeyPattern, kRecord + 1> make_key_patterns() {
  std::array<KeyPattern, kRecord + 1> patterns{};
  for (size_t f = 0; f < patterns.size(); ++f) {
    const std::string_view name = kFieldNames[f];
    KeyPattern& k = patterns[f];
    k.size = name.size() + 2;
    for (size_t i = 0; i < k.size; ++i) {
      const char c = i == 0 || i == k.size - 1 ? '"' : name[i - 1];
      k.word[i / 8] |= uint64_t{static_cast<unsigned char>(c)} << (8 * (i % 8));
      k.mask[i / 8] |= uint64_t{0xFF} << (8 * (i % 8));
    }
  }
  return patterns;
}

constexpr std::array<KeyPattern, kRecord + 1> kKeyPatterns = make_key_patterns();
static_assert(kKeyPatterns[kLocalRank].size <= 16 && kKeyPatterns[kWorldSize].size <= 16 &&
                  kKeyPatterns[kLayerType].size <= 16 && kKeyPatterns[kTStartNs].size <= 16,
              "keys fit two words");

// The client writes keys in column order, so the field after the previous one is tried first.
Field field_of(std::string_view key, int& hint) {
  if (hint <= kRecord && kFieldNames[hint] == key) return static_cast<Field>(hint++);
  for (int f = 0; f <= kRecord; ++f)
    if (kFieldNames[f] == key) {
      hint = f + 1;
      return static_cast<Field>(f);
    }
  return kUnknown;
}

// ---- JSON syntax ----------------------------------------------------------------------

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr int kMaxDepth = 256;

// A scanned JSON number.
struct Number {
  std::string_view lexeme;
  bool integral = true;   // no fraction or exponent
  bool negative = false;
  bool exact = true;      // magnitude holds the integer part (at most 19 digits)
  uint64_t magnitude = 0;
};

// Parses one line as a JSON object (RFC 8259), decoding the event fields into `event` and
// validating everything else without building it.
class LineParser {
 public:
  LineParser(std::string_view line, LayerEvent& event)
      : begin_(line.data()), p_(line.data()), end_(line.data() + line.size()), event_(event) {}

  LineKind run(std::string& problem) {
    if (end_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) p_ += 3;  // UTF-8 BOM
    skip_ws();
    if (p_ == end_) return LineKind::Blank;
    if (*p_ != '{') {
      problem = "not a JSON object";
      return LineKind::Malformed;
    }
    if (!parse_object() || (skip_ws(), p_ != end_)) {
      problem = "invalid JSON at byte " + std::to_string(p_ - begin_ + 1);
      return LineKind::Malformed;
    }
    if (is_job_header_) return LineKind::JobHeader;
    if (wrong_type_ != kUnknown) {
      problem = "field '" + std::string(kFieldNames[wrong_type_]) + "' " +
                (out_of_range_ ? "is out of range" : type_phrase(field_type(wrong_type_)));
      return LineKind::Malformed;
    }
    for (int f = 0; f < kFieldCount; ++f)
      if (!(seen_ & (1u << f))) {
        problem = "missing field '" + std::string(kFieldNames[f]) + "'";
        return LineKind::Malformed;
      }
    return LineKind::Event;
  }

 private:
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }

  bool parse_object() {  // at '{'; the top level, where the event fields live
    ++p_;
    skip_ws();
    if (p_ < end_ && *p_ == '}') return ++p_, true;
    int hint = 0;
    for (;;) {
      if (p_ == end_ || *p_ != '"') return false;
      Field field;
      if (!expected_key(hint, field)) {
        std::string_view key;
        if (!parse_string(key, key_scratch_)) return false;
        field = field_of(key, hint);
      }
      skip_ws();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      skip_ws();
      if (p_ == end_ || !parse_field(field)) return false;
      skip_ws();
      if (p_ == end_) return false;
      if (*p_ == '}') return ++p_, true;
      if (*p_ != ',') return false;
      ++p_;
      skip_ws();
    }
  }

  // A value that should be field f: decoded when of the right type, otherwise remembered as
  // the line's problem and skipped (a header line may hold other types; syntax still counts).
  bool parse_field(Field f) {
    if (f == kUnknown) return skip_value(0);
    if (f == kRecord) {
      if (*p_ != '"') return skip_value(0);
      std::string_view value;
      if (!parse_string(value, value_scratch_)) return false;
      is_job_header_ = value == "job";
      return true;
    }
    const FieldType type = field_type(f);
    const char c = *p_;
    bool typed = false;
    if (c == 'n' && (type == FieldType::NullableText || type == FieldType::NullableInteger)) {
      if (!literal("null")) return false;
      set_null(f, true);
      typed = true;
    } else if (c == '"' && (type == FieldType::Text || type == FieldType::NullableText)) {
      std::string_view value;
      if (!parse_string(value, value_scratch_)) return false;
      text_field(f).assign(value.data(), value.size());
      set_null(f, false);
      typed = true;
    } else if ((c == '-' || (c >= '0' && c <= '9')) &&
               (type == FieldType::Integer || type == FieldType::NullableInteger ||
                type == FieldType::Number)) {
      Number number;
      if (!scan_number(number)) return false;
      typed = store_number(f, type, number);
      if (!typed) return true;  // syntax fine, value unusable: wrong_type_ is set
    } else if ((c == 't' || c == 'f') && type == FieldType::Boolean) {
      if (!literal(c == 't' ? "true" : "false")) return false;
      event_.forward = c == 't';
      typed = true;
    }
    if (typed) {
      seen_ |= 1u << f;
      return true;
    }
    mistyped(f, /*out_of_range=*/false);
    return skip_value(0);
  }

  bool store_number(Field f, FieldType type, const Number& number) {
    const char* first = number.lexeme.data();
    const char* last = first + number.lexeme.size();
    if (type == FieldType::Number) {
      if (number.integral && number.exact && number.magnitude <= (uint64_t{1} << 53)) {
        const double d = static_cast<double>(number.magnitude);
        event_.cpu_num = number.negative ? -d : d;
        return true;
      }
      const auto [end, ec] = std::from_chars(first, last, event_.cpu_num);
      if (ec == std::errc() && end == last) return true;
      mistyped(f, /*out_of_range=*/true);
      return false;
    }
    if (!number.integral) {
      mistyped(f, /*out_of_range=*/false);
      return false;
    }
    int64_t& out = integer_field(f);
    constexpr uint64_t kMax = uint64_t{INT64_MAX};
    if (number.exact && number.magnitude <= kMax + (number.negative ? 1 : 0)) {
      // -2^63 has no positive counterpart: negate in unsigned arithmetic.
      out = number.negative ? static_cast<int64_t>(~number.magnitude + 1)
                            : static_cast<int64_t>(number.magnitude);
      if (f == kGpu) event_.gpu_null = false;
      return true;
    }
    mistyped(f, /*out_of_range=*/true);
    return false;
  }


  // Remembers the first field whose value is unusable; the line is malformed unless it turns
  // out to be a job header.
  void mistyped(Field f, bool out_of_range) {
    if (wrong_type_ != kUnknown) return;
    wrong_type_ = f;
    out_of_range_ = out_of_range;
  }

  std::string& text_field(Field f) {
    switch (f) {
      case kJobId: return event_.job_id;
      case kHostName: return event_.host_name;
      case kIp: return event_.ip;
      case kPod: return event_.pod;
      case kNamespace: return event_.namespace_;
      case kGpuUuid: return event_.gpu_uuid;
      case kLayer: return event_.layer;
      default: return event_.layer_type;
    }
  }

  int64_t& integer_field(Field f) {
    switch (f) {
      case kGpu: return event_.gpu;
      case kRank: return event_.rank;
      case kLocalRank: return event_.local_rank;
      case kWorldSize: return event_.world_size;
      case kPid: return event_.pid;
      case kEpoch: return event_.epoch;
      case kBatch: return event_.batch;
      case kTStartNs: return event_.t_start_ns;
      default: return event_.t_end_ns;
    }
  }

  void set_null(Field f, bool null) {
    switch (f) {
      case kHostName: event_.host_name_null = null; break;
      case kIp: event_.ip_null = null; break;
      case kPod: event_.pod_null = null; break;
      case kNamespace: event_.namespace_null = null; break;
      case kGpu: event_.gpu_null = null; break;
      default: break;
    }
  }

  // Byte loops rather than memcmp: the words are a few bytes, and a libc call per key or
  // literal was a tenth of the scan.
  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || !same_bytes(p_, word)) return false;
    p_ += word.size();
    return true;
  }

  static bool same_bytes(const char* p, std::string_view word) {
    for (size_t i = 0; i < word.size(); ++i)
      if (p[i] != word[i]) return false;
    return true;
  }

  // The key the client writes next, matched in place ("job_id" needs no escapes), so the usual
  // key costs one comparison instead of a string scan and a table lookup.
  bool expected_key(int& hint, Field& field) {
    if (hint > kRecord) return false;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (end_ - p_ >= 16) {
      const KeyPattern& k = kKeyPatterns[hint];
      uint64_t a, b;
      std::memcpy(&a, p_, 8);
      std::memcpy(&b, p_ + 8, 8);
      if (((a ^ k.word[0]) & k.mask[0]) | ((b ^ k.word[1]) & k.mask[1])) return false;
      p_ += k.size;
      field = static_cast<Field>(hint++);
      return true;
    }
#endif
    const std::string_view name = kFieldNames[hint];
    if (static_cast<size_t>(end_ - p_) < name.size() + 2 || p_[name.size() + 1] != '"' ||
        !same_bytes(p_ + 1, name))
      return false;
    p_ += name.size() + 2;
    field = static_cast<Field>(hint++);
    return true;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; the integer part's value is accumulated
  // while scanning, so integers need no second pass.
  bool scan_number(Number& number) {
    const char* start = p_;
    auto digits = [&] {
      const char* s = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      return p_ > s;
    };
    if (p_ < end_ && *p_ == '-') {
      number.negative = true;
      ++p_;
    }
    if (p_ < end_ && *p_ == '0') {
      ++p_;
    } else {
      const char* first = p_;
      uint64_t magnitude = 0;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') magnitude = magnitude * 10 + (*p_++ - '0');
      if (p_ == first) return false;
      number.exact = p_ - first <= 19;  // 10^19 - 1 < 2^64: no wrap-around
      number.magnitude = magnitude;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!digits()) return false;
      number.integral = false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return false;
      number.integral = false;
    }
    number.lexeme = std::string_view(start, p_ - start);
    return true;
  }


  // At '"'. The common case (no escapes) returns a view into the line without copying.
  bool parse_string(std::string_view& out, std::string& scratch) {
    const char* start = ++p_;
    skip_plain_bytes();
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out = std::string_view(start, p_ - start);
        ++p_;
        return true;
      }
      if (c == '\\') break;
      if (c < 0x20) return false;
      if (c < 0x80) {
        ++p_;
      } else {
        const int n = utf8_length(reinterpret_cast<const unsigned char*>(p_),
                                  reinterpret_cast<const unsigned char*>(end_));
        if (n == 0) return false;
        p_ += n;
      }
    }
    if (p_ == end_) return false;
    scratch.assign(start, p_);
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        out = scratch;
        return true;
      }
      if (c < 0x20) return false;
      if (c >= 0x80) {
        const int n = utf8_length(reinterpret_cast<const unsigned char*>(p_),
                                  reinterpret_cast<const unsigned char*>(end_));
        if (n == 0) return false;
        scratch.append(p_, n);
        p_ += n;
        continue;
      }
      if (c != '\\') {
        scratch += static_cast<char>(c);
        ++p_;
        continue;
      }
      if (++p_ == end_) return false;
      switch (*p_++) {
        case '"': scratch += '"'; break;
        case '\\': scratch += '\\'; break;
        case '/': scratch += '/'; break;
        case 'b': scratch += '\b'; break;
        case 'f': scratch += '\f'; break;
        case 'n': scratch += '\n'; break;
        case 'r': scratch += '\r'; break;
        case 't': scratch += '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // lone low surrogate
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(scratch, cp);
          break;
        }
        default: return false;
      }
    }
    return false;
  }

  // Moves p_ over bytes that need no attention inside a string (not '"', '\\', a control
  // character or a non-ASCII byte), eight at a time.
  void skip_plain_bytes() {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
    while (end_ - p_ >= 8) {
      uint64_t v;
      std::memcpy(&v, p_, 8);
      const uint64_t quote = v ^ (kOnes * '"'), backslash = v ^ (kOnes * '\\');
      // A byte's high bit is set where it is zero after the xor / below 0x20 / non-ASCII. Borrows
      // only mark bytes above a marked one, so the lowest mark is exact.
      const uint64_t special = ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) |
                               ((v - kOnes * 0x20) & ~v) | v;
      const uint64_t marks = special & kHigh;
      if (marks) {
        p_ += __builtin_ctzll(marks) >> 3;
        return;
      }
      p_ += 8;
    }
#endif
  }

  bool hex4(uint32_t& out) {
    if (end_ - p_ < 4) return false;
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex_value(p_[i]);
      if (h < 0) return false;
      out = out * 16 + static_cast<uint32_t>(h);
    }
    p_ += 4;
    return true;
  }

  // Validates any JSON value and moves past it.
  bool skip_value(int depth) {
    if (p_ == end_ || depth > kMaxDepth) return false;
    switch (*p_) {
      case '"': {
        std::string_view ignored;
        return parse_string(ignored, value_scratch_);
      }
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      case '{':
      case '[': {
        const bool object = *p_ == '{';
        const char close = object ? '}' : ']';
        ++p_;
        skip_ws();
        if (p_ < end_ && *p_ == close) return ++p_, true;
        for (;;) {
          if (object) {
            std::string_view ignored;
            if (p_ == end_ || *p_ != '"' || !parse_string(ignored, value_scratch_)) return false;
            skip_ws();
            if (p_ == end_ || *p_ != ':') return false;
            ++p_;
            skip_ws();
          }
          if (!skip_value(depth + 1)) return false;
          skip_ws();
          if (p_ == end_) return false;
          if (*p_ == close) return ++p_, true;
          if (*p_ != ',') return false;
          ++p_;
          skip_ws();
        }
      }
      default: {
        Number ignored;
        return scan_number(ignored);
      }
    }
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  LayerEvent& event_;
  std::string key_scratch_, value_scratch_;
  uint32_t seen_ = 0;
  Field wrong_type_ = kUnknown;
  bool out_of_range_ = false;
  bool is_job_header_ = false;
};

static_assert(kFieldCount <= 32, "seen_ is a 32-bit mask");

// ---- Files ------------------------------------------------------------------------------

[[noreturn]] void throw_errno(const char* function, const char* what, const std::string& path,
                              int error) {
  throw Error(std::string(function) + ": " + what + " '" + path + "': " + std::strerror(error));
}

void append_jsonl_files(const std::string& directory, const char* function,
                        std::vector<std::string>& files, std::vector<std::string>& notes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> found;
  fs::recursive_directory_iterator it(directory, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->path().extension() == ".jsonl" && it->is_regular_file(type_ec))
      found.push_back(it->path().string());
  }
  if (ec)
    throw Error(std::string(function) + ": cannot read directory '" + directory + "': " + ec.message());
  if (found.empty())
    notes.push_back(std::string(function) + ": no *.jsonl files in directory '" + directory + "'");
  std::sort(found.begin(), found.end());
  files.insert(files.end(), found.begin(), found.end());
}

// Header fields: each optional one is absent, null, or of its type.
bool header_text(const nlohmann::json& doc, const char* key, std::optional<std::string>& out,
                 std::string& problem) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return true;
  if (!it->is_string()) return problem = std::string("field '") + key + "' is not text or null", false;
  out = it->get<std::string>();
  return true;
}

bool header_integer(const nlohmann::json& doc, const char* key, std::optional<int64_t>& out,
                    std::string& problem) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return true;
  if (it->is_number_integer() &&
      (!it->is_number_unsigned() ||
       it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    out = it->get<int64_t>();
    return true;
  }
  problem = std::string("field '") + key + "' " +
            (it->is_number_integer() ? "is out of range" : "is not an integer or null");
  return false;
}

}  // namespace

LineKind parse_event_line(std::string_view line, LayerEvent& event, std::string& problem) {
  return LineParser(line, event).run(problem);
}

bool parse_job_header(std::string_view line, JobHeader& header, std::string& problem) {
  header = JobHeader();
  // parse_event_line() has validated the line (UTF-8 included), so this parse succeeds.
  const nlohmann::json doc = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (!doc.is_object()) return problem = "invalid JSON", false;
  const auto job_id = doc.find("job_id");
  if (job_id == doc.end()) return problem = "job header without field 'job_id'", false;
  if (!job_id->is_string()) return problem = "field 'job_id' is not text", false;
  header.job_id = job_id->get<std::string>();
  if (!header_text(doc, "host_name", header.host_name, problem) ||
      !header_text(doc, "torch_version", header.torch_version, problem) ||
      !header_integer(doc, "pid", header.pid, problem) ||
      !header_integer(doc, "start_time_ns", header.start_time_ns, problem) ||
      !header_integer(doc, "parameters", header.params, problem))
    return false;
  const auto params = doc.find("params");
  if (!header.params && params != doc.end() && params->is_number_integer()) {
    std::string ignored;
    header_integer(doc, "params", header.params, ignored);
  }
  const auto command = doc.find("command");
  if (command != doc.end() && !command->is_null()) header.command = command->dump();
  return true;
}

LineReader::LineReader(const std::string& path, const char* function, int64_t offset, int64_t lines_before)
    : path_(path), function_(function), line_number_(lines_before), complete_bytes_(offset),
      complete_lines_(lines_before) {
  do fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw_errno(function_, "cannot open", path, errno);
  if (offset > 0 && ::lseek(fd_, offset, SEEK_SET) < 0) {
    const int error = errno;
    ::close(fd_);
    throw_errno(function_, "cannot seek in", path, error);
  }
  ::posix_fadvise(fd_, offset, 0, POSIX_FADV_SEQUENTIAL);
  buffer_.resize(256 * 1024);
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool LineReader::fill() {
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // a line longer than the buffer
  ssize_t n;
  do n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
  while (n < 0 && errno == EINTR);
  if (n < 0) throw_errno(function_, "cannot read", path_, errno);
  if (n == 0) {
    eof_ = true;
    return false;
  }
  end_ += static_cast<size_t>(n);
  return true;
}

bool LineReader::next(std::string_view& line, bool& complete) {
  size_t scanned = begin_;  // bytes before this offset hold no '\n'
  for (;;) {
    const char* data = buffer_.data();
    if (scanned < end_) {
      const void* newline = std::memchr(data + scanned, '\n', end_ - scanned);
      if (newline) {
        const size_t stop = static_cast<const char*>(newline) - data;
        line = std::string_view(data + begin_, stop - begin_);
        complete_bytes_ += static_cast<int64_t>(stop + 1 - begin_);
        ++complete_lines_;
        begin_ = stop + 1;
        complete = true;
        ++line_number_;
        return true;
      }
    }
    scanned = end_ - begin_;  // offsets move to the front in fill()
    if (eof_ || !fill()) break;
  }
  if (begin_ == end_) return false;
  line = std::string_view(buffer_.data() + begin_, end_ - begin_);
  begin_ = end_;
  complete = false;
  ++line_number_;
  return true;
}

std::vector<std::string> event_files(const std::string& path, const char* function,
                                     std::vector<std::string>& notes) {
  std::vector<std::string> files;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      append_jsonl_files(path, function, files, notes);
    else
      files.push_back(path);
    return files;
  }
  if (errno != ENOENT && errno != ENOTDIR) throw_errno(function, "cannot access", path, errno);
  if (path.find_first_of("*?[") != std::string::npos) {
    glob_t matches{};
    const int rc = ::glob(path.c_str(), 0, nullptr, &matches);
    struct Free {
      glob_t* g;
      ~Free() { ::globfree(g); }
    } free_matches{&matches};
    if (rc == GLOB_NOSPACE) throw std::bad_alloc();
    if (rc == GLOB_ABORTED)
      throw Error(std::string(function) + ": cannot read the directories of '" + path + "'");
    if (rc == 0) {
      for (size_t i = 0; i < matches.gl_pathc; ++i) {
        const std::string match = matches.gl_pathv[i];
        if (::stat(match.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
          append_jsonl_files(match, function, files, notes);
        else
          files.push_back(match);
      }
      return files;
    }
  }
  throw Error(std::string(function) + ": no such file or directory: '" + path + "'");
}

void EventFileScan::start(const std::string& path, const Positions& resume) {
  reader_.reset();
  next_file_ = 0;
  skipped_ = 0;
  resume_ = resume;
  ended_.clear();
  std::vector<std::string> notes;
  files_ = event_files(path, function_, notes);
  for (const std::string& note : notes) warn_(note);
}

// Where to go on reading `file`: its resume position when the file still ends a line there.
EventFileScan::Position EventFileScan::resume_position(const std::string& file) {
  const auto found = resume_.find(file);
  if (found == resume_.end() || found->second.bytes <= 0) return {};
  const Position position = found->second;
  int fd;
  do fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_errno(function_, "cannot open", file, errno);
  char last = 0;
  ssize_t n;
  do n = ::pread(fd, &last, 1, position.bytes - 1);
  while (n < 0 && errno == EINTR);
  const int error = errno;
  ::close(fd);
  if (n < 0) throw_errno(function_, "cannot read", file, error);
  if (n == 1 && last == '\n') return position;  // n == 0: the file is shorter now
  warn_(std::string(function_) + ": " + file + " no longer ends a line at byte " + std::to_string(position.bytes) +
        ", where it was last read (truncated or replaced?); reading it again from the start");
  return {};
}

bool EventFileScan::next(std::string_view& line, bool& complete) {
  for (;;) {
    if (!reader_) {
      if (next_file_ == files_.size()) return false;
      source_file_ = files_[next_file_++];
      const Position from = resume_.empty() ? Position{} : resume_position(source_file_);
      reader_ = std::make_unique<LineReader>(source_file_, function_, from.bytes, from.lines);
    }
    if (reader_->next(line, complete)) return true;
    finish_file();
  }
}

bool EventFileScan::next_record(LayerEvent& event, LineKind& kind, std::string_view& line,
                                bool& complete) {
  while (next(line, complete)) {
    kind = parse_event_line(line, event, problem_);
    if (kind == LineKind::Event || kind == LineKind::JobHeader) return true;
    if (kind == LineKind::Malformed) skip(problem_, complete);
  }
  return false;
}

void EventFileScan::skip(const std::string& problem, bool complete) {
  if (skipped_++ == 0) {
    first_skipped_line_ = reader_->line_number();
    first_skipped_problem_ = complete ? problem : "incomplete last line (" + problem + ")";
  }
}

void EventFileScan::finish_file() {
  if (skipped_ > 0)
    warn_(std::string(function_) + ": skipped " + std::to_string(skipped_) +
          (skipped_ == 1 ? " malformed line in " : " malformed lines in ") + source_file_ +
          " (first at line " + std::to_string(first_skipped_line_) + ": " + first_skipped_problem_ + ")");
  skipped_ = 0;
  ended_[source_file_] = Position{reader_->complete_bytes(), reader_->complete_lines()};
  reader_.reset();
}

}  // namespace pp
