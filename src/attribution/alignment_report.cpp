#include "attribution/alignment_report.hpp"

#include <cstdio>

namespace pp {

std::string ms_text(double ns) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", ns / 1e6);
  return buffer;
}

std::vector<std::string> AlignmentReport::warnings(const std::string& uuid) const {
  std::vector<std::string> out;
  if (not_determined)
    out.push_back("the timing of GPU " + uuid + "'s samples cannot be determined from the data in " +
                  std::to_string(not_determined) +
                  " stretch(es) (their layers' estimates are not identified; pin it with sample_offset_ms if known)");
  if (poorly)
    out.push_back("the timing of GPU " + uuid + "'s samples is poorly determined in " + std::to_string(poorly) +
                  " stretch(es) from ts_ms " + std::to_string(first_poorly_ms) +
                  " (pp_alignment.reason says why; the estimates' intervals are widened accordingly)");
  if (jumps)
    out.push_back("the offset of GPU " + uuid + "'s samples jumped " + std::to_string(jumps) + " time(s), first at ts_ms " +
                  std::to_string(first_jump_ms) + " to " + ms_text(jump_to_ns) + " ms where the stretches before it predict " +
                  ms_text(jump_from_ns) +
                  " ms (an exporter or Prometheus restart, clocks stepped, or a scrape interval that is no multiple of "
                  "DCGM's period?)");
  if (repeats || skipped)
    out.push_back("GPU " + uuid + ": the scrapes stored " + std::to_string(repeats) + " DCGM window(s) twice (counted once) and skipped " +
                  std::to_string(skipped) + " (scrape and DCGM phases drift; " + std::to_string(moved) +
                  " window(s) taken as the one before or after the offset's)");
  return out;
}

}  // namespace pp
