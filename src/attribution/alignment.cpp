#include "attribution/alignment.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

namespace pp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kChi2Half90 = 2.706;  // 2 x log-likelihood drop of a 90% profile interval (1 dof)
constexpr double kT95With3Dof = 2.353;  // Student t for the scatter of four quarters
constexpr double kUniqueMargin = 10;    // log-likelihood units a second peak must stay below
constexpr double kMoveMargin = 25;      // chi-square units by which a moved window must fit better

// The fraction of each window (end - window, end] spent in each unknown, the job's untracked
// time, and the rest (the last column); an instant (window 0) puts 1 where it falls. Ends
// ascending. A sweep: events enter when they start before a window's end and leave once they
// end before a window's start.
Eigen::MatrixXd fractions(const AlignmentTimeline& t, const std::vector<int64_t>& ends, double window) {
  const Eigen::Index n = static_cast<Eigen::Index>(ends.size());
  const Eigen::Index rest = t.unknowns;
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(n, t.unknowns + 1);
  std::vector<size_t> active;
  std::vector<double> covered(t.jobs.size(), 0.0);
  size_t next = 0;
  const bool instant = window <= 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double end = static_cast<double>(ends[static_cast<size_t>(i)]);
    const double start = instant ? end : end - window;
    // Instants: an event holds t when start <= t < end; windows: when it overlaps (start, end].
    while (next < t.events.size() && (instant ? static_cast<double>(t.events[next].start) <= end
                                              : static_cast<double>(t.events[next].start) < end))
      active.push_back(next++);
    std::fill(covered.begin(), covered.end(), 0.0);
    size_t kept = 0;
    for (size_t e : active) {
      const auto& ev = t.events[e];
      const double ev_end = static_cast<double>(ev.end);
      if (ev_end <= start) continue;  // ended before this window, so before every later one
      active[kept++] = e;
      if (instant) {
        A(i, ev.unknown) = 1;
        covered[ev.job] = 1;
      } else {
        const double w = std::min(ev_end, end) - std::max(static_cast<double>(ev.start), start);
        if (w > 0) {
          A(i, ev.unknown) += w / window;
          covered[ev.job] += w;
        }
      }
    }
    active.resize(kept);
    double sum = A.row(i).head(t.unknowns).sum();
    for (size_t j = 0; j < t.jobs.size(); ++j) {
      const auto& job = t.jobs[j];
      if (instant) {
        if (covered[j] == 0 && static_cast<double>(job.first) <= end && end < static_cast<double>(job.last)) {
          A(i, job.untracked) = 1;
          sum += 1;
        }
        continue;
      }
      const double span = std::min(end, static_cast<double>(job.last)) - std::max(start, static_cast<double>(job.first));
      if (span > covered[j]) {
        A(i, job.untracked) += (span - covered[j]) / window;
        sum += (span - covered[j]) / window;
      }
    }
    if (instant) {
      if (sum == 0) A(i, rest) = 1;
    } else {
      A(i, rest) = std::max(0.0, 1 - sum);
    }
  }
  return A;
}

// Least-squares fits of each metric on A; the profile log-likelihood, and per metric the
// coefficients and residual variance.
struct Fit {
  double log_likelihood = -std::numeric_limits<double>::infinity();
  std::vector<Eigen::VectorXd> x;
  std::vector<double> variance;
  bool any_layer = false;
};

Fit fit(const Eigen::MatrixXd& A, const std::vector<std::vector<double>>& values, Eigen::Index layer_columns) {
  Fit f;
  const Eigen::Index p = A.cols();
  f.any_layer = layer_columns > 0 && (A.leftCols(layer_columns).array() > 0).any();
  double total = 0;
  for (const auto& y : values) {
    std::vector<Eigen::Index> rows;
    for (size_t i = 0; i < y.size(); ++i)
      if (std::isfinite(y[i])) rows.push_back(static_cast<Eigen::Index>(i));
    const Eigen::Index n = static_cast<Eigen::Index>(rows.size());
    if (n <= p) {
      f.x.emplace_back(Eigen::VectorXd::Zero(p));
      f.variance.push_back(kNaN);
      continue;
    }
    Eigen::MatrixXd M = Eigen::MatrixXd::Zero(p, p);
    Eigen::VectorXd b = Eigen::VectorXd::Zero(p);
    double yy = 0;
    for (Eigen::Index r : rows) {
      const auto row = A.row(r);
      const double v = y[static_cast<size_t>(r)];
      M.selfadjointView<Eigen::Lower>().rankUpdate(row.transpose());
      b += row.transpose() * v;
      yy += v * v;
    }
    M = M.selfadjointView<Eigen::Lower>();
    // A column no window touches (or a tiny one) must not make the system singular.
    const double ridge = 1e-10 * std::max(1.0, M.diagonal().maxCoeff());
    M.diagonal().array() += ridge;
    const Eigen::VectorXd x = M.ldlt().solve(b);
    double rss = 0;
    for (Eigen::Index r : rows) {
      const double e = y[static_cast<size_t>(r)] - A.row(r).dot(x);
      rss += e * e;
    }
    const double scale = std::max(yy / static_cast<double>(n), 1e-300);
    rss = std::max(rss, 1e-15 * scale * static_cast<double>(n));  // an exact fit is not infinitely likely
    total += -0.5 * static_cast<double>(n) * std::log(rss / static_cast<double>(n));
    f.x.push_back(x);
    f.variance.push_back(rss / static_cast<double>(n - p));
  }
  f.log_likelihood = total;
  return f;
}

std::vector<int64_t> shifted_ends(const std::vector<int64_t>& ts, double offset, const std::vector<int>& shift,
                                  double period) {
  std::vector<int64_t> ends(ts.size());
  for (size_t i = 0; i < ts.size(); ++i)
    ends[i] = static_cast<int64_t>(std::llround(static_cast<double>(ts[i]) - offset -
                                                (shift.empty() ? 0 : shift[i]) * period));
  return ends;
}

double evaluate(const AlignmentTimeline& t, const AlignmentSamples& s, double window, double offset,
                const std::vector<int>& shift, double period) {
  std::vector<int64_t> ends = shifted_ends(s.ts_ns, offset, shift, period);
  const Fit f = fit(fractions(t, ends, window), s.values, t.unknowns);
  return f.any_layer ? f.log_likelihood : -std::numeric_limits<double>::infinity();
}

struct Peak {
  double at = 0, value = -std::numeric_limits<double>::infinity(), half90 = 0;
};

// The best point of a fine grid around center, and its 90% profile interval's half-width.
template <class F>
Peak refine(F&& loglik, double center, double reach, double step) {
  std::vector<std::pair<double, double>> grid;
  for (double d = center - reach; d <= center + reach + step / 2; d += step) grid.emplace_back(d, loglik(d));
  Peak p;
  for (const auto& [d, l] : grid)
    if (l > p.value) p = {d, l, 0};
  if (!std::isfinite(p.value)) return p;
  double lo = p.at, hi = p.at;
  for (const auto& [d, l] : grid)
    if (2 * (p.value - l) <= kChi2Half90) {
      lo = std::min(lo, d);
      hi = std::max(hi, d);
    }
  // An interval that reaches the grid's edge is at least that wide.
  p.half90 = std::max({p.at - lo, hi - p.at, step});
  if (lo <= grid.front().first || hi >= grid.back().first) p.half90 = std::max(p.half90, reach);
  return p;
}

}  // namespace

double window_log_likelihood(const AlignmentTimeline& timeline, const std::vector<int64_t>& ends_ns, double window_ns,
                             const std::vector<std::vector<double>>& values) {
  return fit(fractions(timeline, ends_ns, window_ns), values, timeline.unknowns).log_likelihood;
}

OffsetEstimate estimate_offset(const AlignmentTimeline& timeline, const AlignmentSamples& samples, double window_ns,
                               double period_ns, const std::vector<OffsetRange>& ranges, double step_ns) {
  OffsetEstimate est;
  const size_t n = samples.ts_ns.size();
  if (n < 8 || timeline.events.empty()) return est;
  std::vector<int> shift;  // none yet
  auto loglik = [&](double d) { return evaluate(timeline, samples, window_ns, d, shift, period_ns); };

  // 1. The coarse grid over every range; the best point and the best one elsewhere.
  std::vector<std::pair<double, double>> coarse;
  for (const OffsetRange& r : ranges)
    for (double d = r.lo_ns; d <= r.hi_ns + step_ns / 2; d += step_ns) coarse.emplace_back(d, loglik(d));
  auto best = std::max_element(coarse.begin(), coarse.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  if (best == coarse.end() || !std::isfinite(best->second)) return est;
  const double peak = best->first;
  double elsewhere = -std::numeric_limits<double>::infinity();
  const double apart = std::max(5e6, 5 * step_ns);
  for (const auto& [d, l] : coarse)
    if (std::fabs(d - peak) > apart) elsewhere = std::max(elsewhere, l);

  // 2. Refine; move single windows by one period where their values say so; refine again.
  Peak p = refine(loglik, peak, 1.5 * step_ns, step_ns / 20);
  est.found = true;
  est.shift.assign(n, 0);
  if (period_ns > 0 && window_ns > 0) {
    const std::vector<int> none;
    const Eigen::MatrixXd A0 = fractions(timeline, shifted_ends(samples.ts_ns, p.at, none, period_ns), window_ns);
    const Fit at = fit(A0, samples.values, timeline.unknowns);
    const Eigen::MatrixXd Aearlier = fractions(timeline, shifted_ends(samples.ts_ns, p.at + period_ns, none, period_ns), window_ns);
    const Eigen::MatrixXd Alater = fractions(timeline, shifted_ends(samples.ts_ns, p.at - period_ns, none, period_ns), window_ns);
    auto misfit = [&](const Eigen::MatrixXd& A, size_t i) {
      double s = 0;
      for (size_t m = 0; m < samples.values.size(); ++m) {
        const double y = samples.values[m][i];
        if (!std::isfinite(y) || !(at.variance[m] > 0)) continue;
        const double e = y - A.row(static_cast<Eigen::Index>(i)).dot(at.x[m]);
        s += e * e / at.variance[m];
      }
      return s;
    };
    for (size_t i = 0; i < n; ++i) {
      const double s0 = misfit(A0, i), se = misfit(Aearlier, i), sl = misfit(Alater, i);
      if (std::min(se, sl) < s0 - kMoveMargin) est.shift[i] = se < sl ? +1 : -1;
    }
    // Windows stay in order: a move that would make two windows meet is undone.
    const std::vector<int64_t> ends = shifted_ends(samples.ts_ns, p.at, est.shift, period_ns);
    for (size_t i = 0; i < n; ++i) {
      if (est.shift[i] == 0) continue;
      const bool clash = (i > 0 && ends[i] <= ends[i - 1]) || (i + 1 < n && ends[i] >= ends[i + 1]);
      if (clash) est.shift[i] = 0;
    }
    est.moved = static_cast<int>(std::count_if(est.shift.begin(), est.shift.end(), [](int s) { return s != 0; }));
    if (est.moved > 0) {
      shift = est.shift;
      p = refine(loglik, p.at, 1.5 * step_ns, step_ns / 20);
    }
  }
  est.offset_ns = p.at;
  est.log_likelihood = p.value;
  est.likelihood_half90_ns = p.half90;
  est.unique = !(elsewhere > p.value - kUniqueMargin);

  // 3. The scatter of the estimates of four quarters, each searched near the whole's estimate.
  const size_t quarter = n / 4;
  if (quarter >= 20) {
    std::vector<double> q;
    for (int k = 0; k < 4; ++k) {
      AlignmentSamples part;
      const size_t from = k * quarter, to = k == 3 ? n : (k + 1) * quarter;
      part.ts_ns.assign(samples.ts_ns.begin() + static_cast<std::ptrdiff_t>(from),
                        samples.ts_ns.begin() + static_cast<std::ptrdiff_t>(to));
      for (const auto& v : samples.values)
        part.values.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to));
      const std::vector<int> part_shift(est.shift.begin() + static_cast<std::ptrdiff_t>(from),
                                        est.shift.begin() + static_cast<std::ptrdiff_t>(to));
      const Peak pk = refine([&](double d) { return evaluate(timeline, part, window_ns, d, part_shift, period_ns); },
                             est.offset_ns, 3 * step_ns, step_ns / 10);
      if (std::isfinite(pk.value)) q.push_back(pk.at);
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
  }
  est.half90_ns = std::max(est.likelihood_half90_ns, est.quarters_half90_ns);
  return est;
}

int64_t driver_window_end(int64_t g_ns, double period_ns, double phase_ns) {
  const double k = std::floor((static_cast<double>(g_ns) - phase_ns) / period_ns);
  return static_cast<int64_t>(std::llround(phase_ns + k * period_ns));
}

GridEstimate estimate_driver_grid(const AlignmentTimeline& timeline, const std::vector<int64_t>& dcgm_ends_ns,
                                  const std::vector<double>& values, const std::vector<double>& periods_ns,
                                  double step_ns) {
  GridEstimate best;
  if (dcgm_ends_ns.size() < 8 || timeline.events.empty()) return best;
  const std::vector<std::vector<double>> y = {values};
  for (double period : periods_ns) {
    auto loglik = [&](double phase) {
      std::vector<int64_t> ends(dcgm_ends_ns.size());
      for (size_t i = 0; i < ends.size(); ++i) ends[i] = driver_window_end(dcgm_ends_ns[i], period, phase);
      const Fit f = fit(fractions(timeline, ends, period), y, timeline.unknowns);
      return f.any_layer ? f.log_likelihood : -std::numeric_limits<double>::infinity();
    };
    Peak coarse;
    for (double phase = 0; phase < period; phase += step_ns) {
      const double l = loglik(phase);
      if (l > coarse.value) coarse = {phase, l, 0};
    }
    if (!std::isfinite(coarse.value)) continue;
    const Peak p = refine(loglik, coarse.at, 1.5 * step_ns, step_ns / 20);
    if (p.value > best.log_likelihood || !best.found) {
      best.found = true;
      best.period_ns = period;
      best.phase_ns = std::fmod(std::fmod(p.at, period) + period, period);
      best.half90_ns = p.half90;
      best.log_likelihood = p.value;
    }
  }
  return best;
}

}  // namespace pp
