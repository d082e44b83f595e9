// One line of a layer events file: the hook client's JSON Lines (one event per line, plus one
// job header line per process). A purpose-built JSON parser validates the whole line (strings,
// escapes, UTF-8, numbers, nesting) but decodes only the fields of an event: a general JSON
// DOM per line would cost several times more than the rest of a scan.
#include "events/event_line.hpp"

#include <array>
#include <charconv>
#include <cstring>

#include "events/json_scanner.hpp"

namespace pp {
namespace {

// ---- Field table ------------------------------------------------------------------------

// Event fields by index (event_fields.hpp), then "record" ("job" on the job header line).
using Field = int;
constexpr Field kRecord = kEventFieldCount;
constexpr Field kUnknown = kEventFieldCount + 1;

constexpr std::string_view field_name(Field f) { return f < kEventFieldCount ? kEventFieldKeys[f] : "record"; }
FieldType field_type(Field f) { return kEventFieldTypes[f]; }

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
    const std::string_view name = field_name(static_cast<Field>(f));
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
constexpr bool keys_fit_two_words() {
  for (const KeyPattern& k : kKeyPatterns)
    if (k.size > 16) return false;
  return true;
}
static_assert(keys_fit_two_words(), "every key with its quotes fits two 8-byte words");

// The client writes keys in column order, so the field after the previous one is tried first.
Field field_of(std::string_view key, int& hint) {
  if (hint <= kRecord && field_name(hint) == key) return hint++;
  for (Field f = 0; f <= kRecord; ++f)
    if (field_name(f) == key) {
      hint = f + 1;
      return f;
    }
  return kUnknown;
}

// Field visitors (visit_event_field): a decoded text or integer into the field of its type, and
// JSON null into a nullable field. The parser calls them only for fields of the matching type.
struct Assign {
  std::string_view text;
  int64_t integer = 0;
  bool boolean = false;
  double number = 0;
  void operator()(std::string& out) const { out.assign(text.data(), text.size()); }
  void operator()(Nullable<std::string>& out) const {
    out.value.assign(text.data(), text.size());
    out.null = false;
  }
  void operator()(int64_t& out) const { out = integer; }
  void operator()(Nullable<int64_t>& out) const {
    out.value = integer;
    out.null = false;
  }
  void operator()(bool& out) const { out = boolean; }
  void operator()(double& out) const { out = number; }
};

struct SetNull {
  template <class T>
  void operator()(Nullable<T>& out) const { out.null = true; }
  template <class T>
  void operator()(T&) const {}
};

// Parses one line as a JSON object (RFC 8259), decoding the event fields into `event` and
// validating everything else without building it.
class LineParser : public JsonScanner {
 public:
  LineParser(std::string_view line, LayerEvent& event) : JsonScanner(line), event_(event) {}

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
    if (record_ == LineKind::JobHeader || record_ == LineKind::MigDevice) return record_;
    if (wrong_type_ != kUnknown) {
      problem = "field '" + std::string(field_name(wrong_type_)) + "' " +
                (out_of_range_ ? "is out of range" : type_phrase(field_type(wrong_type_)));
      return LineKind::Malformed;
    }
    for (Field f = 0; f < kEventFieldCount; ++f)
      if (!(seen_ & (1u << f))) {
        problem = "missing field '" + std::string(field_name(f)) + "'";
        return LineKind::Malformed;
      }
    // What names the event's job, GPU and layer: an empty name would attribute it to nothing.
    for (const auto& [text, name] : {std::pair{&event_.job_id, "job_id"}, std::pair{&event_.gpu_uuid, "gpu_uuid"},
                                     std::pair{&event_.layer, "layer"}})
      if (text->empty()) {
        problem = std::string("field '") + name + "' is empty";
        return LineKind::Malformed;
      }
    return LineKind::Event;
  }

 private:
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
      record_ = value == "job" ? LineKind::JobHeader : value == "mig_device" ? LineKind::MigDevice : LineKind::Event;
      return true;
    }
    const FieldType type = field_type(f);
    const char c = *p_;
    bool typed = false;
    if (c == 'n' && (type == FieldType::NullableText || type == FieldType::NullableInteger)) {
      if (!literal("null")) return false;
      visit_event_field(event_, f, SetNull{});
      typed = true;
    } else if (c == '"' && (type == FieldType::Text || type == FieldType::NullableText)) {
      std::string_view value;
      if (!parse_string(value, value_scratch_)) return false;
      visit_event_field(event_, f, Assign{value});
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
      visit_event_field(event_, f, Assign{{}, 0, c == 't'});
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
        visit_event_field(event_, f, Assign{{}, 0, false, number.negative ? -d : d});
        return true;
      }
      double d = 0;
      const auto [end, ec] = std::from_chars(first, last, d);
      if (ec == std::errc() && end == last) {
        visit_event_field(event_, f, Assign{{}, 0, false, d});
        return true;
      }
      mistyped(f, /*out_of_range=*/true);
      return false;
    }
    if (!number.integral) {
      mistyped(f, /*out_of_range=*/false);
      return false;
    }
    constexpr uint64_t kMax = uint64_t{INT64_MAX};
    if (number.exact && number.magnitude <= kMax + (number.negative ? 1 : 0)) {
      // -2^63 has no positive counterpart: negate in unsigned arithmetic.
      const int64_t value = number.negative ? static_cast<int64_t>(~number.magnitude + 1)
                                            : static_cast<int64_t>(number.magnitude);
      visit_event_field(event_, f, Assign{{}, value});
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
    const std::string_view name = field_name(hint);
    if (static_cast<size_t>(end_ - p_) < name.size() + 2 || p_[name.size() + 1] != '"' ||
        !same_bytes(p_ + 1, name))
      return false;
    p_ += name.size() + 2;
    field = static_cast<Field>(hint++);
    return true;
  }

  LayerEvent& event_;
  std::string key_scratch_, value_scratch_;
  uint32_t seen_ = 0;
  Field wrong_type_ = kUnknown;
  bool out_of_range_ = false;
  LineKind record_ = LineKind::Event;  // what the "record" field names: JobHeader, MigDevice, or none
};

static_assert(kEventFieldCount <= 32, "seen_ is a 32-bit mask");

}  // namespace

LineKind parse_event_line(std::string_view line, LayerEvent& event, std::string& problem) {
  return LineParser(line, event).run(problem);
}

}  // namespace pp
