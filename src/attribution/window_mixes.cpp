// Window mixes (window_mixes.hpp): the sweep of a timeline's events over sample windows, and
// its update when the windows move a little.
#include "attribution/window_mixes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

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
    if (i > 0 && end_ns == ends[i - 1]) {  // the same window again (a driver's, longer than DCGM's)
      std::copy(busy - units, busy, busy);
      std::copy(covered - jobs, covered, covered);
      continue;
    }
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

// The rows of window_fractions from whole-nanosecond overlaps. Column by column, where the
// divisions run several at a time; each row's sum adds its columns in order, as a sum over the
// row does.
Eigen::MatrixXd mixes_of(const AlignmentTimeline& t, const WindowOverlaps& o) {
  const size_t n = o.ends.size(), units = t.unknowns, jobs = t.jobs.size();
  const double window = static_cast<double>(o.window_ns);
  Eigen::MatrixXd A(static_cast<Eigen::Index>(n), t.unknowns + 1);
  std::vector<double> sum(n, 0.0);
  for (uint32_t u = 0; u < t.unknowns; ++u) {
    double* column = A.col(u).data();
    const int64_t* busy = o.busy.data() + u;
    for (size_t r = 0; r < n; ++r) column[r] = static_cast<double>(busy[r * units]) / window;
    if (u == 0)
      std::copy(column, column + n, sum.begin());
    else
      for (size_t r = 0; r < n; ++r) sum[r] += column[r];
  }
  for (size_t r = 0; r < n; ++r) {
    const auto i = static_cast<Eigen::Index>(r);
    const int64_t* covered = o.covered.data() + r * jobs;
    const double end = static_cast<double>(o.ends[r]), start = end - window;
    for (size_t j = 0; j < jobs; ++j) {
      const auto& job = t.jobs[j];
      const double span = std::min(end, static_cast<double>(job.last)) - std::max(start, static_cast<double>(job.first));
      const double covered_j = static_cast<double>(covered[j]);
      if (span > covered_j) {
        A(i, job.untracked) += (span - covered_j) / window;
        sum[r] += (span - covered_j) / window;
      }
    }
    A(i, t.unknowns) = std::max(0.0, 1 - sum[r]);
  }
  return A;
}

// How many of the windows moved at most kNearNs from those kept in o; 0 where o holds other
// windows (another length or count).
size_t windows_near(const WindowOverlaps& o, const std::vector<int64_t>& ends, int64_t window_ns) {
  if (o.window_ns != window_ns || o.ends.size() != ends.size()) return 0;
  size_t near = 0;
  for (size_t i = 0; i < ends.size(); ++i) near += std::llabs(ends[i] - o.ends[i]) <= WindowMixes::kNearNs;
  return near;
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
  reach_.reserve(t.events.size());
  int64_t reach = std::numeric_limits<int64_t>::min();
  for (size_t e = 0; e < t.events.size(); ++e) {
    if (t.events[e].end - t.events[e].start > kLongCallNs)
      long_calls_.push_back(e);
    else
      reach = std::max(reach, t.events[e].end);
    reach_.push_back(reach);
  }
}

Eigen::MatrixXd WindowMixes::operator()(const std::vector<int64_t>& ends, double window) {
  // Ends out of order (a stretch's head or tail moved by a period, where the grid could not be
  // fitted) are swept as window_fractions sweeps them, and not kept: moving a window's edges
  // exactly would not give what the sweep gives them.
  window = whole_ns(window);
  if (!is_window(window) || long_calls_.size() > kMaxLongCalls || !std::is_sorted(ends.begin(), ends.end()))
    return window_fractions(t_, ends, window);
  // The kept set with the most windows near these (the first of equals); none near: a sweep.
  const auto window_ns = static_cast<int64_t>(window);
  size_t best = 0, most_near = 0;
  for (size_t k = 0; k < kept_.size(); ++k)
    if (const size_t near = windows_near(kept_[k], ends, window_ns); near > most_near) best = k, most_near = near;
  if (most_near > 0) {
    std::rotate(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(best), kept_.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    move_edges(kept_.front(), ends);
    return mixes_of(t_, kept_.front());
  }
  std::rotate(kept_.rbegin(), kept_.rbegin() + 1, kept_.rend());  // the least recently used goes
  sweep_overlaps_ns(t_, ends, window_ns, kept_.front());
  return mixes_of(t_, kept_.front());
}

// The first event from which on a call up to kLongCallNs may reach past `from` (every one
// before it ends by then), found from `at` (where the same edge's last scan began, a step or two
// away; SIZE_MAX: a binary search), and kept there.
size_t WindowMixes::first_reaching_from(size_t& at, int64_t from) const {
  if (at > reach_.size()) {
    at = static_cast<size_t>(std::upper_bound(reach_.begin(), reach_.end(), from) - reach_.begin());
    return at;
  }
  while (at > 0 && reach_[at - 1] > from) --at;
  while (at < reach_.size() && reach_[at] <= from) ++at;
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
// new ends and loses what ran between its old and new starts (or the other way round). One
// moved further than kNearNs takes its events anew; one ending where the one before it ends
// takes that one's overlaps. (The overlaps are whole ns, so each way gives the same sums.)
void WindowMixes::move_edges(WindowOverlaps& o, const std::vector<int64_t>& ends) const {
  const size_t units = t_.unknowns, jobs = t_.jobs.size();
  o.end_scan.resize(ends.size(), SIZE_MAX);
  o.start_scan.resize(ends.size(), SIZE_MAX);
  for (size_t i = 0; i < ends.size(); ++i) {
    const int64_t from = o.ends[i], to = ends[i];
    o.ends[i] = to;
    int64_t* busy = o.busy.data() + i * units;
    int64_t* covered = o.covered.data() + i * jobs;
    if (i > 0 && to == ends[i - 1]) {
      std::copy(busy - units, busy, busy);
      std::copy(covered - jobs, covered, covered);
      continue;
    }
    if (from == to) continue;
    if (std::llabs(to - from) > kNearNs) {
      std::fill(busy, busy + units, 0);
      std::fill(covered, covered + jobs, 0);
      add_edge(o, i, first_reaching_from(o.start_scan[i], to - o.window_ns), to - o.window_ns, to, 1);
      continue;
    }
    const int64_t sign = to > from ? 1 : -1, lo = std::min(from, to), hi = std::max(from, to);
    add_edge(o, i, first_reaching_from(o.end_scan[i], lo), lo, hi, sign);
    add_edge(o, i, first_reaching_from(o.start_scan[i], lo - o.window_ns), lo - o.window_ns, hi - o.window_ns, -sign);
  }
}

}  // namespace pp
