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
                  " stretch(es) (their windows' timing is half a window or more, which widens the estimates' "
                  "intervals; pin it with sample_offset_ms if known)");
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
  if (restarts)
    out.push_back("the offset of GPU " + uuid + "'s samples stepped " + std::to_string(restarts) +
                  " time(s) after a gap in them, first at ts_ms " + std::to_string(first_restart_ms) + " (no sample for " +
                  ms_text(static_cast<double>(restart_gap_ms) * 1e6) + " ms before it) to " + ms_text(restart_to_ns) +
                  " ms where the stretches before it predict " + ms_text(restart_from_ns) +
                  " ms (dcgm-exporter restarted, and DCGM's windows with it on a new grid: the stretches after it are "
                  "searched anew and the drift fitted to them alone)");
  if (repeats || skipped)
    out.push_back("GPU " + uuid + ": the scrapes stored " + std::to_string(repeats) + " DCGM window(s) twice (counted once) and skipped " +
                  std::to_string(skipped) + " (scrape and DCGM phases drift; " + std::to_string(moved) +
                  " window(s) taken as the one before or after the offset's)");
  return out;
}

std::string not_determined_reason(const AlignmentTimeline& timeline, const AlignmentSamples& samples) {
  const size_t have = windows_with_values(samples), needed = windows_to_fit(timeline);
  if (have >= needed) return "no window at any offset searched holds a layer's call with a value to fit";
  return "too few windows to fit: " + std::to_string(have) + ", " + std::to_string(needed) + " needed (" +
         std::to_string(kLeastWindowsToFit) + " more than the " + std::to_string(timeline.unknowns + 1) +
         " unknowns of its fit: its layer groups, each job's untracked time and the rest of each window)";
}

std::string poorly_determined_reason(const OffsetEstimate& best, bool in_order, int64_t out_of_order, int64_t samples) {
  std::vector<std::string> causes;
  if (!best.unique)
    causes.push_back("another placement of its windows fits almost as well (within 10 log-likelihood units: a "
                     "second peak, two scrape phases alike, or an exporter latency that stepped)");
  if (!in_order)
    causes.push_back(std::to_string(out_of_order) + " of its " + std::to_string(samples) +
                     " stored times read an older window than the one before (more than 1 in 40: an exporter "
                     "whose latency scatters by a period)");
  if (!best.on_grid)
    causes.push_back("its windows lie on no straight grid of the period (two in one step, or a period more than 1% "
                     "off the window's), so each keeps its scrape's lateness: they spread over " +
                     ms_text(best.off_grid_spread_ns) + " ms");
  if (best.half90_ns > kDeterminedHalf90Ns)
    causes.push_back("its offset's 90% interval is +-" + ms_text(best.half90_ns) +
                     " ms, wider than +-2 ms (the layers' mixes change little with the offset, or its quarters "
                     "disagree)");
  std::string reason;
  for (const std::string& cause : causes) reason += (reason.empty() ? "" : "; ") + cause;
  return reason;
}

}  // namespace pp
