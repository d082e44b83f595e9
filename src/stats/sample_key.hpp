// Keys identifying a sample window of pp_deconvolve, whatever SQL type its id has. Equal SQL
// values give equal keys (a REAL with an integral value is the same window as that INTEGER); a
// TEXT '1' is not the INTEGER 1.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pp {

std::string sample_key_integer(int64_t id);
std::string sample_key_real(double id);
std::string sample_key_text(std::string_view id);
std::string sample_key_blob(const void* data, size_t bytes);
// The id as a reader of an error message would write it: 17, 1.5, 'w-3', x'00ff'.
std::string sample_key_label(const std::string& key);

}  // namespace pp
