#include "stats/sample_key.hpp"

#include <cmath>
#include <cstring>

#include "core/number_text.hpp"

namespace pp {

std::string sample_key_integer(int64_t id) {
  std::string key(1 + sizeof id, 'i');
  std::memcpy(&key[1], &id, sizeof id);
  return key;
}

std::string sample_key_real(double id) {
  if (std::isfinite(id) && id == std::floor(id) && id >= -0x1p63 && id < 0x1p63)  // every int64's range
    return sample_key_integer(static_cast<int64_t>(id));
  std::string key(1 + sizeof id, 'r');
  std::memcpy(&key[1], &id, sizeof id);
  return key;
}

std::string sample_key_text(std::string_view id) { return "t" + std::string(id); }

std::string sample_key_blob(const void* data, size_t bytes) {
  return "b" + std::string(static_cast<const char*>(data), bytes);
}

std::string sample_key_label(const std::string& key) {
  if (key.empty()) return "?";
  switch (key[0]) {
    case 'i': {
      int64_t id = 0;
      std::memcpy(&id, key.data() + 1, sizeof id);
      return std::to_string(id);
    }
    case 'r': {
      double id = 0;
      std::memcpy(&id, key.data() + 1, sizeof id);
      return number_text(id);
    }
    case 't': {
      std::string quoted = "'";
      for (char c : key.substr(1, 60)) quoted += c == '\'' ? std::string("''") : std::string(1, c);
      return quoted + (key.size() > 61 ? "...'" : "'");
    }
    default: {
      static const char* hex = "0123456789abcdef";
      std::string text = "x'";
      for (size_t i = 1; i < key.size() && i <= 32; ++i) {
        const auto byte = static_cast<unsigned char>(key[i]);
        text += hex[byte >> 4];
        text += hex[byte & 15];
      }
      return text + (key.size() > 33 ? "...'" : "'");
    }
  }
}

}  // namespace pp
