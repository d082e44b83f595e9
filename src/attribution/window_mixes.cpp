// Window mixes (window_mixes.hpp): the sweep of a timeline's events over sample windows, and
// its update when the windows move a little.
#include "attribution/window_mixes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace pp {
namespace {

// A window's edges are whole nanoseconds, as the events' times are: a length that is not (a
// driver period of a sixth or a third of a second) is taken to the nearest one, 0.5 ns at most
// (3e-9 of a 1/6 s window; a window is 1 ns at least), so that every window adds its overlaps
// as integers and a search's moved windows update them (WindowMixes). Instants (0) are not
// windows.
double whole_ns(double window) { return window > 0 && window < 0x1p62 ? std::max(1.0, std::round(window)) : window; }
bool is_window(double window) { return window > 0 && window < 0x1p62; }

// The first event that may reach past `from`: events end at most longest_ns after they start.
// A millisecond to spare, since times held as doubles are rounded to a few hundred ns.
size_t first_reaching(const AlignmentTimeline& t, double from) {
  const double skip_before = from - static_cast<double>(t.longest_ns) - 1e6;
  return static_cast<size_t>(
      std::partition_point(t.events.begin(), t.events.end(),
                           [&](const AlignmentTimeline::Event& e) { return static_cast<double>(e.start) < skip_before; }) -
      t.events.begin());
}

// The overlaps of whole-nanosecond windows by one sweep of the events.
void sweep_overlaps_ns(const AlignmentTimeline& t, const std::vector<int64_t>& ends, int64_t window_ns, WindowOverlaps& out) {
  const size_t n = ends.size(), units = t.unknowns, jobs = t.jobs.size();
  out.window_ns = window_ns;
  out.ends = ends;
  out.busy.assign(n * units, 0);
  out.covered.assign(n * jobs, 0);
  out.end_scan.assign(n, SIZE_MAX);
  out.start_scan.assign(n, SIZE_MAX);
  // The events before the first window are passed by (the search fits stretches and quarters of
  // a stretch). A window's events are those from `head` up to `next`, in the timeline's own
  // order: `head` passes the events that ended before the window, and puts one longer than a
  // window aside in `long_events` (so that it cannot hold back `head` while it runs). An event
  // past `head` that ended early overlaps nothing.
  size_t next = n > 0 ? first_reaching(t, static_cast<double>(ends.front() - window_ns)) : 0, head = next;
  std::vector<size_t> long_events;
  for (size_t i = 0; i < n; ++i) {
    const int64_t end_ns = ends[i], start_ns = end_ns - window_ns;
    while (next < t.events.size() && t.events[next].start < end_ns) ++next;
    while (head < next && (t.events[head].end <= start_ns || t.events[head].end - t.events[head].start > window_ns)) {
      if (t.events[head].end > start_ns) long_events.push_back(head);
      ++head;
    }
    int64_t* busy = out.busy.data() + i * units;
    int64_t* covered = out.covered.data() + i * jobs;
    const auto add = [&](const AlignmentTimeline::Event& ev) {
      const int64_t w = std::min(ev.end, end_ns) - std::max(ev.start, start_ns);
      if (w > 0) {
        busy[ev.unknown] += w;
        covered[ev.job] += w;
      }
    };
    for (size_t e = head; e < next; ++e) add(t.events[e]);
    size_t kept = 0;
    for (size_t e : long_events) {
      if (t.events[e].end <= start_ns) continue;  // ended before this window, so before every later one
      long_events[kept++] = e;
      add(t.events[e]);
    }
    long_events.resize(kept);
  }
}

// The rows of window_fractions from whole-nanosecond overlaps.
Eigen::MatrixXd mixes_of(const AlignmentTimeline& t, const WindowOverlaps& o) {
  const size_t n = o.ends.size(), units = t.unknowns, jobs = t.jobs.size();
  const double window = static_cast<double>(o.window_ns);
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(n), t.unknowns + 1);
  for (size_t r = 0; r < n; ++r) {
    const auto i = static_cast<Eigen::Index>(r);
    const int64_t* busy = o.busy.data() + r * units;
    const int64_t* covered = o.covered.data() + r * jobs;
    const double end = static_cast<double>(o.ends[r]), start = end - window;
    for (uint32_t u = 0; u < t.unknowns; ++u) A(i, u) = busy[u] ? static_cast<double>(busy[u]) / window : 0.0;
    double sum = A.row(i).head(t.unknowns).sum();
    for (size_t j = 0; j < jobs; ++j) {
      const auto& job = t.jobs[j];
      const double span = std::min(end, static_cast<double>(job.last)) - std::max(start, static_cast<double>(job.first));
      const double covered_j = static_cast<double>(covered[j]);
      if (span > covered_j) {
        A(i, job.untracked) += (span - covered_j) / window;
        sum += (span - covered_j) / window;
      }
    }
    A(i, t.unknowns) = std::max(0.0, 1 - sum);
  }
  return A;
}

bool near(const WindowOverlaps& o, const std::vector<int64_t>& ends, int64_t window_ns) {
  if (o.window_ns != window_ns || o.ends.size() != ends.size()) return false;
  for (size_t i = 0; i < ends.size(); ++i)
    if (std::llabs(ends[i] - o.ends[i]) > WindowMixes::kNearNs) return false;
  return true;
}

}  // namespace

Eigen::MatrixXd window_fractions(const AlignmentTimeline& t, const std::vector<int64_t>& ends, double window) {
  window = whole_ns(window);
  if (is_window(window)) {
    WindowOverlaps o;
    sweep_overlaps_ns(t, ends, static_cast<int64_t>(window), o);
    return mixes_of(t, o);
  }
  const Eigen::Index n = static_cast<Eigen::Index>(ends.size());
  const Eigen::Index rest = t.unknowns;
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(n, t.unknowns + 1);
  std::vector<size_t> active;
  std::vector<double> covered(t.jobs.size(), 0.0);
  const bool instant = window <= 0;
  size_t next = n > 0 ? first_reaching(t, static_cast<double>(ends.front()) - (instant ? 0 : window)) : 0;
  // A window's fractions add up in `row` (contiguous, where A's row is strided).
  std::vector<double> row(t.unknowns, 0.0);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double end = static_cast<double>(ends[static_cast<size_t>(i)]);
    const double start = instant ? end : end - window;
    std::fill(covered.begin(), covered.end(), 0.0);
    // Instants: an event holds t when start <= t < end; windows: when it overlaps (start, end].
    while (next < t.events.size() && (instant ? static_cast<double>(t.events[next].start) <= end
                                              : static_cast<double>(t.events[next].start) < end))
      active.push_back(next++);
    std::fill(row.begin(), row.end(), 0.0);
    size_t kept = 0;
    for (size_t e : active) {
      const auto& ev = t.events[e];
      const double ev_end = static_cast<double>(ev.end);
      if (ev_end <= start) continue;  // ended before this window (instant), so before every later one
      active[kept++] = e;
      if (instant) {
        row[ev.unknown] = 1;
        covered[ev.job] = 1;
        continue;
      }
      const double w = std::min(ev_end, end) - std::max(static_cast<double>(ev.start), start);
      if (w > 0) {
        row[ev.unknown] += w / window;
        covered[ev.job] += w;
      }
    }
    active.resize(kept);
    for (uint32_t u = 0; u < t.unknowns; ++u) A(i, u) = row[u];
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

WindowMixes::WindowMixes(const AlignmentTimeline& t) : t_(t) {
  for (size_t e = 0; e < t.events.size(); ++e) {
    const int64_t length = t.events[e].end - t.events[e].start;
    if (length > kLongCallNs)
      long_calls_.push_back(e);
    else
      longest_short_ns_ = std::max(longest_short_ns_, length);
  }
}

Eigen::MatrixXd WindowMixes::operator()(const std::vector<int64_t>& ends, double window) {
  // Ends out of order (a stretch's head or tail moved by a period, where the grid could not be
  // fitted) are swept as window_fractions sweeps them, and not kept: moving a window's edges
  // exactly would not give what the sweep gives them.
  window = whole_ns(window);
  if (!is_window(window) || long_calls_.size() > kMaxLongCalls || !std::is_sorted(ends.begin(), ends.end()))
    return window_fractions(t_, ends, window);
  const auto window_ns = static_cast<int64_t>(window);
  for (size_t k = 0; k < kept_.size(); ++k)
    if (near(kept_[k], ends, window_ns)) {
      std::rotate(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(k), kept_.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      move_edges(kept_.front(), ends);
      return mixes_of(t_, kept_.front());
    }
  std::rotate(kept_.rbegin(), kept_.rbegin() + 1, kept_.rend());  // the least recently used goes
  sweep_overlaps_ns(t_, ends, window_ns, kept_.front());
  return mixes_of(t_, kept_.front());
}

// The first event that may reach past `from`, of those up to kLongCallNs, found from `at` (where
// the same edge's last scan began, a step or two away; SIZE_MAX: a binary search), and kept there.
size_t WindowMixes::first_reaching_from(size_t& at, int64_t from) const {
  const int64_t skip_before = from - longest_short_ns_;
  const auto before = [&](size_t e) { return t_.events[e].start < skip_before; };
  if (at > t_.events.size()) {
    at = static_cast<size_t>(std::partition_point(t_.events.begin(), t_.events.end(),
                                                  [&](const AlignmentTimeline::Event& e) { return e.start < skip_before; }) -
                             t_.events.begin());
    return at;
  }
  while (at > 0 && !before(at - 1)) --at;
  while (at < t_.events.size() && before(at)) ++at;
  return at;
}

// Adds (sign +1) or takes away (-1) the overlaps of [from, to) to window i's: of the calls up
// to kLongCallNs from `first` on, and of the long ones.
void WindowMixes::add_edge(WindowOverlaps& o, size_t i, size_t first, int64_t from, int64_t to, int64_t sign) const {
  int64_t* busy = o.busy.data() + i * t_.unknowns;
  int64_t* covered = o.covered.data() + i * t_.jobs.size();
  const auto add = [&](const AlignmentTimeline::Event& ev) {
    const int64_t w = std::min(ev.end, to) - std::max(ev.start, from);
    if (w > 0) {
      busy[ev.unknown] += sign * w;
      covered[ev.job] += sign * w;
    }
  };
  for (size_t e = first; e < t_.events.size() && t_.events[e].start < to; ++e)
    if (t_.events[e].end - t_.events[e].start <= kLongCallNs) add(t_.events[e]);
  for (size_t e : long_calls_) add(t_.events[e]);
}

// Each window (end - w, end] becomes (end' - w, end']: it gains what ran between its old and
// new ends and loses what ran between its old and new starts (or the other way round).
void WindowMixes::move_edges(WindowOverlaps& o, const std::vector<int64_t>& ends) const {
  o.end_scan.resize(ends.size(), SIZE_MAX);
  o.start_scan.resize(ends.size(), SIZE_MAX);
  for (size_t i = 0; i < ends.size(); ++i) {
    const int64_t from = o.ends[i], to = ends[i];
    if (from == to) continue;
    const int64_t sign = to > from ? 1 : -1, lo = std::min(from, to), hi = std::max(from, to);
    add_edge(o, i, first_reaching_from(o.end_scan[i], lo), lo, hi, sign);
    add_edge(o, i, first_reaching_from(o.start_scan[i], lo - o.window_ns), lo - o.window_ns, hi - o.window_ns, -sign);
    o.ends[i] = to;
  }
}

}  // namespace pp
