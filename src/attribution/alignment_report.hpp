// What the align step tells a user about one GPU's alignment in a refresh: why a stretch is
// poorly determined (pp_alignment.reason), the counts it keeps as it writes the stretches
// (align_samples.cpp) and the pp_last_warnings() lines they make.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attribution/alignment.hpp"

namespace pp {

// ns as ms with one decimal ("18.8"), as the warnings and pp_alignment.reason print them.
std::string ms_text(double ns);

// A stretch whose offset's 90% interval is wider than this is poorly determined.
constexpr double kDeterminedHalf90Ns = 2e6;

// Why a stretch of `samples` stored times is poorly determined (empty where it is estimated):
// each cause, in words. out_of_order of them read an older window than the one stored before
// them, too many where !in_order.
std::string poorly_determined_reason(const OffsetEstimate& best, bool in_order, int64_t out_of_order, int64_t samples);

// Why a stretch whose offset no search found is not determined: too few windows to fit
// (windows_to_fit), or none at any offset searched holding a layer's call with a value.
std::string not_determined_reason(const AlignmentTimeline& timeline, const AlignmentSamples& samples);

// What one GPU's alignment in this refresh says in pp_last_warnings().
struct AlignmentReport {
  int64_t poorly = 0, not_determined = 0, repeats = 0, skipped = 0, jumps = 0, moved = 0, segments = 0;
  int64_t first_poorly_ms = 0, first_jump_ms = 0;
  double jump_from_ns = 0, jump_to_ns = 0;
  // Steps after a gap in the stored times (an exporter restarted): the first's stored time
  // after the gap, how long the gap was, and the offsets predicted and found.
  int64_t restarts = 0, first_restart_ms = 0, restart_gap_ms = 0;
  double restart_from_ns = 0, restart_to_ns = 0;

  std::vector<std::string> warnings(const std::string& uuid) const;
};

}  // namespace pp
