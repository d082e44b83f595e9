// What the align step tells a user about one GPU's alignment in a refresh: the counts it keeps
// as it writes the stretches (align_samples.cpp) and the pp_last_warnings() lines they make.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pp {

// ns as ms with one decimal ("18.8"), as the warnings and pp_alignment.reason print them.
std::string ms_text(double ns);

// What one GPU's alignment in this refresh says in pp_last_warnings().
struct AlignmentReport {
  int64_t poorly = 0, not_determined = 0, repeats = 0, skipped = 0, jumps = 0, moved = 0, segments = 0;
  int64_t first_poorly_ms = 0, first_jump_ms = 0;
  double jump_from_ns = 0, jump_to_ns = 0;

  std::vector<std::string> warnings(const std::string& uuid) const;
};

}  // namespace pp
