#include "attribution/alignment.hpp"
#include "attribution/flicker_path.hpp"
#include "attribution/profile_peak.hpp"
#include "attribution/window_fit.hpp"
#include "attribution/window_grid.hpp"
#include "attribution/window_mixes.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace pp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kT95With3Dof = 2.353;  // Student t for the scatter of four quarters
// How far each quarter's own offset is looked for around the stretch's, in steps of the search;
// and, where it peaks at that edge decisively, how far again.
constexpr double kQuarterReachSteps = 3;
constexpr double kQuarterFarReachSteps = 20;
constexpr double kSignificantDriftSe = 3;
// Student t (2 degrees of freedom, 99%) by which the quarters' trend must stand out of their
// scatter about it.
constexpr double kQuarterTrendT = 9.92;  // a stretch's own drift must exceed this many standard errors
constexpr double kUniqueMargin = 10;    // log-likelihood units a second peak must stay below
constexpr double kSameWindowNs = 3e6;   // two placements of a window this close are the same
constexpr double kMoveMargin = 25;      // chi-square units by which a moved window must fit better
constexpr double kWrapMargin = 50;
constexpr int kMoveRounds = 4;
// How far a peak is looked for again once windows moved, as a share of the period (the first
// peak, pulled by the windows a period off, can lie well between the two placements), and no
// further than this beyond the range it was found in.
constexpr double kRepeakReach = 0.3;
constexpr double kRepeakBeyondRangeNs = 4e6;
constexpr size_t kLeastHalf = 20;  // samples each half of a stretch needs to be searched alone
constexpr double kHalfGridPerWindow = 200;

// What the fits of one offset search share, each keeping what it computed for the windows
// before: the windows' mixes, and their ends' grids.
struct SearchFits {
  explicit SearchFits(const AlignmentTimeline& t) : mix(t) {}
  WindowMixes mix;
  GridSnaps snap;
};

std::vector<int64_t> shifted_ends(const std::vector<int64_t>& ts, double offset, const std::vector<int>& shift,
                                  double period) {
  std::vector<int64_t> ends(ts.size());
  for (size_t i = 0; i < ts.size(); ++i)
    ends[i] = static_cast<int64_t>(std::llround(static_cast<double>(ts[i]) - offset -
                                                (shift.empty() ? 0 : shift[i]) * period));
  return ends;
}

double evaluate(SearchFits& fits, const AlignmentSamples& s, double window, double offset,
                const std::vector<int>& shift, double period) {
  std::vector<int64_t> ends = shifted_ends(s.ts_ns, offset, shift, period);
  fits.snap(ends, period);  // the scrapes' jitter is not the windows'
  const WindowFit f = fit_windows(fits.mix(ends, window), s.values, fits.mix.timeline().unknowns);
  return f.any_layer ? f.log_likelihood : -std::numeric_limits<double>::infinity();
}

// The windows' ends of the stored times, those `drop` leaves on the straight grid fitted to
// them (a copy and its original would share a grid step), the dropped ones where `shift` puts
// them.
std::vector<int64_t> snapped_ends(GridSnaps& snap, const std::vector<int64_t>& ts, double offset,
                                  const std::vector<int>& shift, const std::vector<char>& drop, double period) {
  std::vector<int64_t> ends = shifted_ends(ts, offset, shift, period);
  std::vector<int64_t> kept;
  for (size_t i = 0; i < ends.size(); ++i)
    if (!drop[i]) kept.push_back(ends[i]);
  snap(kept, period);
  for (size_t i = 0, k = 0; i < ends.size(); ++i)
    if (!drop[i]) ends[i] = kept[k++];
  return ends;
}

// evaluate over every sample, each copy (copy[i]) in the window of the sample before it.
double evaluate_with_copies(SearchFits& fits, const AlignmentSamples& s, double window, double offset,
                            const std::vector<int>& shift, const std::vector<char>& copy, double period) {
  std::vector<int64_t> ends = snapped_ends(fits.snap, s.ts_ns, offset, shift, copy, period);
  for (size_t i = 1; i < ends.size(); ++i)
    if (copy[i]) ends[i] = ends[i - 1];
  const WindowFit f = fit_windows(fits.mix(ends, window), s.values, fits.mix.timeline().unknowns);
  return f.any_layer ? f.log_likelihood : -std::numeric_limits<double>::infinity();
}

// The least-squares slope of y over x, in ppm: zero unless it stands more than `t` standard
// errors (from the points' scatter about the line) from zero. At least three points.
double significant_slope_ppm(const std::vector<double>& x, const std::vector<double>& y, double t) {
  const size_t n = x.size();
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  if (!(sxx > 0)) return 0;
  const double slope = sxy / sxx;
  double rss = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = y[i] - my - slope * (x[i] - mx);
    rss += r * r;
  }
  const double slope_se = std::sqrt(rss / static_cast<double>(n - 2) / sxx);
  return std::fabs(slope) > t * slope_se ? slope * 1e6 : 0;
}

// The trend of stored time - window end over a stretch, in ppm: zero unless it stands out of
// the stored times' own scatter (on a loaded machine Prometheus' scrapes jitter by tens of ms,
// and a few seconds of them show any slope). A window a period off its neighbours (a copy, a
// skip, an idle window whose period the values cannot tell) is a wrap, not a drift: the
// differences are unwound to within half a period first.
double stretch_drift_ppm(const std::vector<int64_t>& ts_ns, const std::vector<int64_t>& ends_ns, double period_ns) {
  const size_t n = ts_ns.size();
  if (n <= 2) return 0;
  std::vector<double> y(n), t(n);
  for (size_t i = 0; i < n; ++i) {
    t[i] = static_cast<double>(ts_ns[i] - ts_ns[0]);
    y[i] = static_cast<double>(ts_ns[i] - ends_ns[i]);
    if (i > 0 && period_ns > 0) y[i] -= period_ns * std::round((y[i] - y[i - 1]) / period_ns);
  }
  return significant_slope_ppm(t, y, kSignificantDriftSe);
}

// The trend of the quarters' own offsets (each at the middle of its stored times, ns after the
// first) in ppm: zero unless it stands out of their scatter about it by kQuarterTrendT. Where
// DCGM's period runs a per mille or more long, the stored times (at the scrapes' period) put the
// windows on a grid of the wrong period, and its tilt says nothing; the quarters' offsets from
// it walk by a few ms each.
double quarters_trend_ppm(const std::vector<double>& offsets, const std::vector<double>& at) {
  return offsets.size() < 3 ? 0 : significant_slope_ppm(at, offsets, kQuarterTrendT);
}

// The rows of a stretch's mixes (windows) that hold some of the first layer_columns columns.
std::vector<size_t> windows_with_layers(const Eigen::MatrixXd& mixes, Eigen::Index layer_columns) {
  std::vector<size_t> rows;
  for (Eigen::Index r = 0; r < mixes.rows(); ++r)
    if ((mixes.row(r).head(layer_columns).array() > 0).any()) rows.push_back(static_cast<size_t>(r));
  return rows;
}

// The best point of a grid from lo to hi.
template <class F>
double best_on_grid(F&& loglik, double lo, double hi, double step) {
  double best = lo, value = -std::numeric_limits<double>::infinity();
  for (double d = lo; d <= hi + step / 2; d += step) {
    const double l = loglik(d);
    if (l > value) best = d, value = l;
  }
  return best;
}

// Per sample, the chi-square its values gain when its window is taken one period earlier
// (+1) or later (-1) than `shift` says, under the fit of every window as `shift` places them;
// and how many samples gain either way.
struct Gains {
  std::vector<double> earlier, later;
  size_t fit_earlier = 0, fit_later = 0;
};

Gains sample_gains(SearchFits& fits, const AlignmentSamples& s, double window, double offset,
                   const std::vector<int>& shift, double period) {
  const size_t n = s.ts_ns.size();
  std::vector<int64_t> ends = shifted_ends(s.ts_ns, offset, shift, period);
  fits.snap(ends, period);
  const Eigen::MatrixXd A0 = fits.mix(ends, window);
  const WindowFit at = fit_windows(A0, s.values, fits.mix.timeline().unknowns);
  const auto moved = [&](double by) {
    std::vector<int64_t> out(ends.size());
    for (size_t i = 0; i < ends.size(); ++i) out[i] = ends[i] + static_cast<int64_t>(std::llround(by));
    return out;
  };
  const Eigen::MatrixXd Aearlier = fits.mix(moved(-period), window);
  const Eigen::MatrixXd Alater = fits.mix(moved(period), window);
  auto misfit = [&](const Eigen::MatrixXd& A, size_t i) {
    double sum = 0;
    for (size_t m = 0; m < s.values.size(); ++m) {
      const double y = s.values[m][i];
      if (!std::isfinite(y) || !(at.variance[m] > 0)) continue;
      const double e = y - A.row(static_cast<Eigen::Index>(i)).dot(at.x[m]);
      sum += e * e / at.variance[m];
    }
    return sum;
  };
  Gains g;
  g.earlier.resize(n);
  g.later.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const double s0 = misfit(A0, i);
    g.earlier[i] = s0 - misfit(Aearlier, i);
    g.later[i] = s0 - misfit(Alater, i);
    g.fit_earlier += g.earlier[i] > 0;
    g.fit_later += g.later[i] > 0;
  }
  return g;
}

// For windows that flicker at the exporter's latency (flicker_path.hpp): per sample, the misfit
// of its values at shifts lo (near when lo is the offset's own, 0) and lo + 1 (far: one period
// earlier), under the fit of the samples `drop` leaves, their windows as `shift` places them.
std::array<std::vector<double>, 2> placement_misfits(SearchFits& fits, const AlignmentSamples& s,
                                                     double window, double offset, const std::vector<int>& shift,
                                                     const std::vector<char>& drop, double period, int lo) {
  const size_t n = s.ts_ns.size();
  const std::vector<int64_t> ends = snapped_ends(fits.snap, s.ts_ns, offset, shift, drop, period);
  std::vector<int64_t> fitted;
  for (size_t i = 0; i < n; ++i)
    if (!drop[i]) fitted.push_back(ends[i]);
  const WindowFit at = fit_windows(fits.mix(fitted, window), without(s, drop).values, fits.mix.timeline().unknowns);
  std::array<std::vector<double>, 2> misfit;
  for (int state = 0; state < 2; ++state) {
    std::vector<int64_t> moved(n);
    for (size_t i = 0; i < n; ++i)
      moved[i] = ends[i] - static_cast<int64_t>(std::llround((lo + state - shift[i]) * period));
    // Moved ends stay in order, as window_fractions() needs; a sample dropped as a copy may not be.
    for (size_t i = 1; i < n; ++i) moved[i] = std::max(moved[i], moved[i - 1]);
    const Eigen::MatrixXd A = fits.mix(moved, window);
    misfit[static_cast<size_t>(state)].assign(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (size_t m = 0; m < s.values.size(); ++m) {
        const double y = s.values[m][i];
        if (!std::isfinite(y) || !(at.variance[m] > 0)) continue;
        const double e = y - A.row(static_cast<Eigen::Index>(i)).dot(at.x[m]);
        misfit[static_cast<size_t>(state)][i] += e * e / at.variance[m];
      }
  }
  return misfit;
}

// A point of the stretch past which (or before which) every window is one period off the
// offset's: where the drift carries the offset across the exporter's latency.
struct Wrap {
  size_t at = 0;      // the first sample of the tail, or one past the head
  bool head = false;  // the samples before `at` move, else those from `at` on
  int periods = 0;    // +1: each describes the window one period earlier; -1: later
  double gain = 0;    // twice the log-likelihood gained (chi-square units)
};

// The best wrap by the profile likelihood, refitted for each candidate: a coarse pass over
// tenths of the stretch, then every sample near the best. A contaminated fit cannot be trusted
// to judge single samples here, since up to half the stretch may be off.
Wrap find_wrap(SearchFits& fits, const AlignmentSamples& s, double window, double offset, double period,
               const std::vector<int>& base, double base_loglik) {
  const size_t n = s.ts_ns.size();
  Wrap best;
  auto consider = [&](size_t at, bool head, int periods) {
    if (at == 0 || at >= n) return;
    std::vector<int> shift = base;
    for (size_t i = head ? 0 : at; i < (head ? at : n); ++i) shift[i] += periods;
    const double gain = 2 * (evaluate(fits, s, window, offset, shift, period) - base_loglik);
    if (gain > best.gain) best = {at, head, periods, gain};
  };
  const size_t step = std::max<size_t>(1, n / 10);
  for (int periods : {+1, -1})
    for (bool head : {false, true})
      for (size_t at = step; at < n; at += step) consider(at, head, periods);
  if (best.gain <= 0) return best;
  const Wrap coarse = best;
  for (size_t at = coarse.at > step ? coarse.at - step : 1; at <= std::min(n - 1, coarse.at + step); ++at)
    consider(at, coarse.head, coarse.periods);
  return best;
}

}  // namespace

double window_log_likelihood(const AlignmentTimeline& timeline, const std::vector<int64_t>& ends_ns, double window_ns,
                             const std::vector<std::vector<double>>& values) {
  return fit_windows(window_fractions(timeline, ends_ns, window_ns), values, timeline.unknowns).log_likelihood;
}

namespace {

// The samples from..to of s (their values; copies are not needed to fit them).
AlignmentSamples part(const AlignmentSamples& s, size_t from, size_t to) {
  AlignmentSamples out;
  out.ts_ns.assign(s.ts_ns.begin() + static_cast<std::ptrdiff_t>(from), s.ts_ns.begin() + static_cast<std::ptrdiff_t>(to));
  for (const auto& v : s.values)
    out.values.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to));
  return out;
}

// estimate_offset, the windows first placed as start_shift says (empty: as stored).
OffsetEstimate estimate_offset_from(SearchFits& fits, const AlignmentSamples& samples, double window_ns,
                                    double period_ns, const std::vector<OffsetRange>& ranges, double step_ns,
                                    const std::vector<int>& start_shift) {
  OffsetEstimate est;
  const size_t n = samples.ts_ns.size();
  std::vector<int> shift = start_shift;  // of the samples fitted (all but those found to be copies)
  AlignmentSamples reduced;
  const AlignmentSamples* fitted = &samples;
  auto loglik = [&](double d) { return evaluate(fits, *fitted, window_ns, d, shift, period_ns); };

  // 1. The coarse grid over every range; the best point and the best one elsewhere.
  std::vector<std::pair<double, double>> coarse;
  for (const OffsetRange& r : ranges)
    for (double d = r.lo_ns; d <= r.hi_ns + step_ns / 2; d += step_ns) coarse.emplace_back(d, loglik(d));
  auto best = std::max_element(coarse.begin(), coarse.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  if (best == coarse.end() || !std::isfinite(best->second)) return est;
  const double peak = best->first;
  double elsewhere = -std::numeric_limits<double>::infinity(), elsewhere_at = kNaN;
  const double apart = std::max(5e6, 5 * step_ns);
  for (const auto& [d, l] : coarse)
    if (std::fabs(d - peak) > apart && l > elsewhere) elsewhere = l, elsewhere_at = d;

  // Once windows moved: the best offset on the grid near the peak, within its range.
  const auto repeak = [&](double at) {
    const OffsetRange* within = &ranges.front();
    for (const OffsetRange& r : ranges)
      if (std::max(r.lo_ns - at, at - r.hi_ns) < std::max(within->lo_ns - at, at - within->hi_ns)) within = &r;
    const double lo = std::max(at - kRepeakReach * period_ns, within->lo_ns - kRepeakBeyondRangeNs);
    const double hi = std::min(at + kRepeakReach * period_ns, within->hi_ns + kRepeakBeyondRangeNs);
    return best_on_grid(loglik, std::min(lo, at), std::max(hi, at), step_ns / 2);
  };

  // 2. Refine; find a wrap (step 2a); move single windows by one period where their values say
  // so; refine again.
  Peak p = refine(loglik, peak, 1.5 * step_ns, step_ns / 20);
  est.found = true;
  est.shift = start_shift.empty() ? std::vector<int>(n, 0) : start_shift;
  if (period_ns > 0 && window_ns > 0) {
    Gains g = sample_gains(fits, samples, window_ns, p.at, est.shift, period_ns);
    // 2a. Many windows that fit one period off: the offset may wrap within the stretch.
    const size_t suspicious = std::max<size_t>(5, n / 20);
    if (g.fit_earlier >= suspicious || g.fit_later >= suspicious) {
      const Wrap wrap = find_wrap(fits, samples, window_ns, p.at, period_ns, est.shift, p.value);
      if (wrap.gain > kWrapMargin) {
        for (size_t i = wrap.head ? 0 : wrap.at; i < (wrap.head ? wrap.at : n); ++i) est.shift[i] += wrap.periods;
        shift = est.shift;
        // The first peak settled between the two placements: it may lie further than the
        // refinement's reach from the one peak of the windows wrapped.
        p = refine(loglik, repeak(p.at), 1.5 * step_ns, step_ns / 20);
        g = sample_gains(fits, samples, window_ns, p.at, est.shift, period_ns);
      }
    }
    // Near the wrap the exporter's jitter makes windows flicker between the two. Scraped at
    // DCGM's period, the copies it stored say where (flicker_path): the pattern of least misfit,
    // under the fit of the others, for the offset taken as the near window's and as the far
    // one's; a few rounds, since every window put right makes that fit cleaner.
    bool taken = false;  // a flicker path placed the windows
    const bool copies = std::any_of(samples.copy_after.begin(), samples.copy_after.end(), [](char c) { return c != 0; });
    if (copies && at_period(samples.ts_ns, period_ns)) {
      std::vector<char> maybe_copy(n, 0);
      for (size_t i = 1; i < n; ++i) {
        bool idle_twice = true;
        for (const auto& v : samples.values)
          idle_twice = idle_twice && ((v[i] == 0 && v[i - 1] == 0) || (std::isnan(v[i]) && std::isnan(v[i - 1])));
        maybe_copy[i] = idle_twice;
      }
      est.copy.assign(n, 0);
      for (int round = 0; round < kMoveRounds; ++round) {
        Flicker best_path;
        double best_loglik = -std::numeric_limits<double>::infinity();
        for (int lo : {0, -1}) {
          const auto misfit = placement_misfits(fits, samples, window_ns, p.at, est.shift, est.copy, period_ns, lo);
          Flicker path = flicker_path(samples, maybe_copy, misfit, lo, period_ns);
          if (path.shift.empty()) continue;
          const double l = evaluate(fits, without(samples, path.copy), window_ns, p.at,
                                    without(path.shift, path.copy), period_ns);
          if (l > best_loglik) best_loglik = l, best_path = std::move(path);
        }
        if (best_path.shift.empty() || (best_path.shift == est.shift && best_path.copy == est.copy)) break;
        // The path must fit the samples it keeps better than their present windows by the
        // margin a single moved window needs: with few copies, noise alone can otherwise move
        // a window whose two candidates read alike.
        const double present = evaluate(fits, without(samples, best_path.copy), window_ns, p.at,
                                        without(est.shift, best_path.copy), period_ns);
        if (!(2 * (best_loglik - present) > kMoveMargin)) break;
        taken = true;
        est.shift = best_path.shift;
        est.copy = best_path.copy;
        // From here on the samples found to be copies are left out, as the align step leaves
        // out the copies it knew.
        reduced = without(samples, est.copy);
        fitted = &reduced;
        shift = without(est.shift, est.copy);
        p = refine(loglik, repeak(p.at), step_ns / 4, step_ns / 20);
      }
    }
    if (!taken) est.copy.clear();  // no path: the windows move one by one, as elsewhere
    // Elsewhere each window moves on its own, from where it is, judged by the fit of the others;
    // a few rounds, since every window put right makes that fit cleaner.
    for (int round = 0; est.copy.empty() && round < kMoveRounds; ++round) {
      if (round > 0) g = sample_gains(fits, samples, window_ns, p.at, est.shift, period_ns);
      const std::vector<int> before = est.shift;
      for (size_t i = 0; i < n; ++i) {
        const double ge = g.earlier[i], gl = g.later[i];
        if (std::max(ge, gl) > kMoveMargin) est.shift[i] += ge > gl ? +1 : -1;
      }
      // Windows stay in order: a move that would make two windows meet is undone.
      const std::vector<int64_t> ends = shifted_ends(samples.ts_ns, p.at, est.shift, period_ns);
      for (size_t i = 0; i < n; ++i) {
        if (est.shift[i] == before[i]) continue;
        const bool clash = (i > 0 && ends[i] <= ends[i - 1]) || (i + 1 < n && ends[i] >= ends[i + 1]);
        if (clash) est.shift[i] = before[i];
      }
      if (est.shift == before) break;
      shift = est.shift;
      // Windows misplaced by a period pulled the first peak; with them put right it may lie
      // further than the refinement's reach.
      p = refine(loglik, repeak(p.at), step_ns / 4, step_ns / 20);
    }
    for (size_t i = 0; i < n; ++i) est.moved += est.shift[i] != 0 && (est.copy.empty() || !est.copy[i]);
  }
  est.offset_ns = p.at;
  // Over every sample, a copy in its original's window, as the coarse grid's values and other
  // window lengths' estimates are: fewer samples alone would lower the likelihood.
  est.log_likelihood = fitted == &samples ? p.value
                                           : evaluate_with_copies(fits, samples, window_ns, p.at, est.shift, est.copy, period_ns);
  est.likelihood_half90_ns = p.half90;
  est.unique = !(elsewhere > est.log_likelihood - kUniqueMargin);
  est.elsewhere_log_likelihood = elsewhere;
  est.elsewhere_offset_ns = elsewhere_at;

  // 3. The windows on the whole stretch's grid; the scatter of four quarters' own offsets from
  // it (how far the grid holds: the honest uncertainty, beyond what the likelihood sees); and
  // the trend of stored time minus window end (the drift the stretch shows of its own).
  const AlignmentSamples& kept = *fitted;
  const size_t n_kept = kept.ts_ns.size();
  std::vector<int64_t> grid = shifted_ends(kept.ts_ns, p.at, shift, period_ns);
  est.on_grid = fits.snap(grid, period_ns);
  if (!est.on_grid) est.off_grid_spread_ns = spread_about_grid(grid, period_ns);
  // The quarters are of the windows that hold layers, each with the windows without any among
  // or before them: a job's end leaves the idle GPU's windows in its stretch, and a quarter of
  // mostly those would have its likelihood from the few that hold layers, peaked anywhere.
  const std::vector<size_t> with_layers = windows_with_layers(fits.mix(grid, window_ns), fits.mix.timeline().unknowns);
  const size_t quarter = with_layers.size() / 4;
  double quarters_drift_ppm = 0;
  if (quarter >= 20) {
    std::vector<double> q, q_at;  // each quarter's offset from the grid, and the middle of its stored times
    bool beyond_reach = false;
    for (int k = 0; k < 4; ++k) {
      const size_t from = k == 0 ? 0 : with_layers[k * quarter], to = k == 3 ? n_kept : with_layers[(k + 1) * quarter];
      const std::vector<std::vector<double>> values = part(kept, from, to).values;
      const auto loglik_of_quarter = [&](double d) {
        std::vector<int64_t> ends(grid.begin() + static_cast<std::ptrdiff_t>(from), grid.begin() + static_cast<std::ptrdiff_t>(to));
        for (int64_t& e : ends) e -= static_cast<int64_t>(std::llround(d));
        const WindowFit f = fit_windows(fits.mix(ends, window_ns), values, fits.mix.timeline().unknowns);
        return f.any_layer ? f.log_likelihood : -std::numeric_limits<double>::infinity();
      };
      Peak pk = refine(loglik_of_quarter, 0, kQuarterReachSteps * step_ns, step_ns / 10);
      if (!std::isfinite(pk.value)) continue;
      // A peak at the search's edge may lie beyond it, where it fits the quarter decisively
      // better than the stretch's offset does (a flat quarter peaks at an edge by chance): the
      // search is made again, wider, and its peak taken where it fits decisively better than the
      // edge's (a broad quarter's likelihood, a 1 s window's, wanders a few steps on noise);
      // still at the wider edge, the quarter's offset is that far at least.
      const auto at_edge = [&](const Peak& peak, double reach) { return std::fabs(peak.at) >= reach - step_ns / 20; };
      if (at_edge(pk, kQuarterReachSteps * step_ns) && 2 * (pk.value - loglik_of_quarter(0)) > kChi2Half90) {
        const Peak far = refine(loglik_of_quarter, 0, kQuarterFarReachSteps * step_ns, step_ns / 10);
        if (2 * (far.value - pk.value) > kChi2Half90) {
          pk = far;
          beyond_reach = beyond_reach || at_edge(pk, kQuarterFarReachSteps * step_ns);
        }
      }
      q.push_back(pk.at);
      q_at.push_back(static_cast<double>(kept.ts_ns[(from + to) / 2] - kept.ts_ns[0]));
    }
    if (q.size() >= 2) {
      double mean = 0;
      for (double v : q) mean += v;
      mean /= static_cast<double>(q.size());
      double ss = 0;
      for (double v : q) ss += (v - mean) * (v - mean);
      const double sd = std::sqrt(ss / static_cast<double>(q.size() - 1));
      est.quarters_half90_ns = kT95With3Dof * sd / std::sqrt(static_cast<double>(q.size()));
    }
    quarters_drift_ppm = quarters_trend_ppm(q, q_at);
    if (beyond_reach) est.quarters_half90_ns = std::max(est.quarters_half90_ns, kQuarterFarReachSteps * step_ns);
  }
  est.stretch_drift_ppm = stretch_drift_ppm(kept.ts_ns, grid, period_ns);
  if (est.stretch_drift_ppm == 0) est.stretch_drift_ppm = quarters_drift_ppm;
  est.half90_ns = std::max(est.likelihood_half90_ns, est.quarters_half90_ns);
  return est;
}

// Whether two estimates put all but a twentieth of the windows in the same place.
bool same_windows(const OffsetEstimate& a, const OffsetEstimate& b, double period_ns) {
  size_t apart = 0;
  for (size_t i = 0; i < a.shift.size(); ++i)
    apart += std::fabs(a.offset_ns + a.shift[i] * period_ns - b.offset_ns - b.shift[i] * period_ns) > kSameWindowNs;
  return apart <= a.shift.size() / 20;
}

// Whether an estimate puts all but a twentieth of the windows where one offset, with none
// moved, puts them.
bool same_windows_as(const OffsetEstimate& a, double offset_ns, double period_ns) {
  OffsetEstimate b;
  b.offset_ns = offset_ns;
  b.shift.assign(a.shift.size(), 0);
  return same_windows(a, b, period_ns);
}

// The ranges within a period of `at`: where a second placement of the windows lies from a
// peak that settled between two.
std::vector<OffsetRange> within_a_period(const std::vector<OffsetRange>& ranges, double at, double period_ns) {
  std::vector<OffsetRange> near;
  for (const OffsetRange& r : ranges) {
    const double lo = std::max(r.lo_ns, at - period_ns);
    const double hi = std::min(r.hi_ns, at + period_ns);
    if (lo <= hi) near.push_back({lo, hi});
  }
  return near;
}

}  // namespace

size_t windows_to_fit(const AlignmentTimeline& timeline) {
  return kLeastWindowsToFit + timeline.unknowns + 1;  // (+1: the rest of each window)
}

size_t windows_with_values(const AlignmentSamples& samples) {
  size_t most = 0;
  for (const auto& v : samples.values)
    most = std::max<size_t>(most, static_cast<size_t>(std::count_if(v.begin(), v.end(), [](double x) { return std::isfinite(x); })));
  return most;
}

OffsetEstimate estimate_offset(const AlignmentTimeline& timeline, const AlignmentSamples& samples, double window_ns,
                               double period_ns, const std::vector<OffsetRange>& ranges, double step_ns) {
  const size_t n = samples.ts_ns.size();
  if (timeline.events.empty() || windows_with_values(samples) < windows_to_fit(timeline)) return {};
  SearchFits fits(timeline);
  OffsetEstimate as_stored = estimate_offset_from(fits, samples, window_ns, period_ns, ranges, step_ns, {});
  // Where no one offset fits the windows as stored, a search over a period or more can settle
  // between two placements and never recover; it is made again from where each would start,
  // the best fit kept, and two placements that fit alike leave it open. (A stretch that
  // follows its predecessor searches a few ms around the offset it predicts.)
  double searched = 0;
  for (const OffsetRange& r : ranges) searched += r.hi_ns - r.lo_ns;
  if (!as_stored.found || !(period_ns > 0 && window_ns > 0) || searched < period_ns) return as_stored;
  const std::vector<OffsetRange> near = within_a_period(ranges, as_stored.offset_ns, period_ns);
  std::vector<OffsetEstimate> others;
  // A scrape the exporter answers late takes the window after its own, and the next scrape the
  // same one again (a copy): search from each copy's original put a period later.
  const auto copies = static_cast<size_t>(std::count(samples.copy_after.begin(), samples.copy_after.end(), 1));
  if (copies >= std::max<size_t>(2, n / 20) && at_period(samples.ts_ns, period_ns)) {
    std::vector<int> late(n, 0);
    for (size_t i = 0; i < n; ++i) late[i] = samples.copy_after[i] ? -1 : 0;
    others.push_back(estimate_offset_from(fits, samples, window_ns, period_ns, near, step_ns, late));
  }
  // The exporter's latency can step by a period within the stretch: from there on each scrape
  // takes the window before (or after) the one it took. One half of the stretch then holds one
  // placement alone: search from each half's own peak, where it differs from the windows the
  // estimate gives that half. Scraped at DCGM's period, as the late start (above) is.
  if (n >= 2 * kLeastHalf && at_period(samples.ts_ns, period_ns)) {
    // Within a period of the whole stretch's peak, on a grid as fine as the search's but no
    // finer than a long window's peak is narrow.
    const double half_step = std::max(step_ns, window_ns / kHalfGridPerWindow);
    for (const auto& [from, to] : {std::pair<size_t, size_t>{0, n / 2}, {n / 2, n}}) {
      const AlignmentSamples half = part(samples, from, to);
      const auto loglik = [&](double d) { return evaluate(fits, half, window_ns, d, {}, period_ns); };
      double peak = kNaN, peak_value = -std::numeric_limits<double>::infinity();
      for (const OffsetRange& r : near)
        for (double d = r.lo_ns; d <= r.hi_ns + half_step / 2; d += half_step)
          if (const double l = loglik(d); l > peak_value) peak = d, peak_value = l;
      if (!std::isfinite(peak_value)) continue;
      std::vector<double> placed;
      for (size_t i = from; i < to; ++i) placed.push_back(as_stored.offset_ns + as_stored.shift[i] * period_ns);
      std::nth_element(placed.begin(), placed.begin() + static_cast<std::ptrdiff_t>(placed.size() / 2), placed.end());
      if (std::fabs(placed[placed.size() / 2] - peak) <= std::max(kSameWindowNs, half_step)) continue;
      const double reach = 2 * half_step;
      std::vector<OffsetRange> around;
      for (const OffsetRange& r : near)
        if (std::max(r.lo_ns, peak - reach) <= std::min(r.hi_ns, peak + reach))
          around.push_back({std::max(r.lo_ns, peak - reach), std::min(r.hi_ns, peak + reach)});
      others.push_back(estimate_offset_from(fits, samples, window_ns, period_ns, around, step_ns, {}));
    }
  }
  OffsetEstimate* better = &as_stored;
  for (OffsetEstimate& o : others)
    if (o.found && o.log_likelihood > better->log_likelihood) better = &o;
  // The first search's best offset away from its peak counts against a better fit that places
  // the windows elsewhere, within the margin; so does another placement that fits alike.
  if (better != &as_stored && better->log_likelihood - as_stored.elsewhere_log_likelihood < kUniqueMargin &&
      !same_windows_as(*better, as_stored.elsewhere_offset_ns, period_ns))
    better->unique = false;
  const auto fits_alike = [&](const OffsetEstimate& o) {
    return &o != better && o.found && better->log_likelihood - o.log_likelihood < kUniqueMargin &&
           !same_windows(*better, o, period_ns);
  };
  if (fits_alike(as_stored) || std::any_of(others.begin(), others.end(), fits_alike)) better->unique = false;
  return std::move(*better);
}

}  // namespace pp
