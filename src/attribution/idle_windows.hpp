// The windows of a stretch without layers (align_samples.cpp): the idle GPU's, after a job and
// between jobs; and those of a stretch too short to fit (not determined), placed alike. No search
// places them (there is no mix of layers to fit), and the offset the
// stretches before predict holds only for stored times as those stretches took them: where
// Prometheus scrapes at an interval that is no multiple of DCGM's period, put on a lattice of
// the period first (scrape_phases.hpp), so that for stored times as they are it places every
// window of one scrape phase half a period or more off. Each stored time's lateness (stored
// time - window end) is a matter of its phase in the period: the scrape's place in DCGM's grid.
// So each window is placed as the windows stored just before it at its phase were, carried on
// by the offset's drift, and the windows are put on the grid they continue.
#pragma once
#include <cstdint>
#include <vector>

#include "attribution/alignment_data.hpp"

namespace pp {

// The window end of each of the stored times ts_ms (ascending, one per window: no copies), from
// `before`: the own windows placed just before them (ascending), their period window_ns and the
// offset's drift in ppm. Empty where nothing was placed before.
std::vector<int64_t> idle_window_ends(const std::vector<WindowRecord>& before, const std::vector<int64_t>& ts_ms,
                                      double window_ns, double drift_ppm);

}  // namespace pp
