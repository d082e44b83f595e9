// A scanner of JSON text (RFC 8259) over one buffer: validates strings (escapes, UTF-8),
// numbers, literals and nesting, and decodes strings and numbers only when asked. The event line
// parser (event_line.cpp) is built on it; everything here is inline because the parser calls
// it once per byte run of a line.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/text.hpp"

namespace pp {

inline void append_utf8(std::string& out, uint32_t cp) {
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

inline int hex_value(char c) {
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

class JsonScanner {
 public:
  explicit JsonScanner(std::string_view text) : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

 protected:
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
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
        return parse_string(ignored, skip_scratch_);
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
            if (p_ == end_ || *p_ != '"' || !parse_string(ignored, skip_scratch_)) return false;
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
  std::string skip_scratch_;  // escaped strings inside skipped values
};

}  // namespace pp
