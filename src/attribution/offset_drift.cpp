#include "attribution/offset_drift.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace pp {

double mid_ns(const SegmentRecord& s) { return (static_cast<double>(s.from_ms) + static_cast<double>(s.through_ms)) * 1e6 / 2; }

bool after_gap(const SegmentRecord& s) {
  if (s.first_ms <= s.from_ms) return false;  // (not known)
  const double gap_ns = static_cast<double>(s.first_ms - s.from_ms) * 1e6;
  const double spacing_ns =
      s.samples > 1 ? static_cast<double>(s.through_ms - s.first_ms) * 1e6 / static_cast<double>(s.samples - 1) : 0;
  return gap_ns >= std::max(kRestartGapNs, kGapSpacings * spacing_ns);
}

namespace {

// How far to's offset lies from where from with its drift puts it, a wrap by one window aside.
double unexplained_ns(const SegmentRecord& from, const SegmentRecord& to, double window_ns) {
  const double off = std::fabs(to.offset_ns - offset_at(from, mid_ns(to)));
  return window_ns > 0 ? std::min(off, std::fabs(off - window_ns)) : off;
}

}  // namespace

bool offset_unexplained(const SegmentRecord& from, const SegmentRecord& to, double window_ns) {
  return unexplained_ns(from, to, window_ns) > std::max(3e6, 3 * (to.timing_ns + from.timing_ns));
}

bool stepped(const std::vector<SegmentRecord>& segments, size_t from, size_t to, double window_ns) {
  if (!offset_unexplained(segments[from], segments[to], window_ns)) return false;
  bool gap = false;
  for (size_t i = from + 1; i <= to && !gap; ++i) gap = after_gap(segments[i]);
  return gap || unexplained_ns(segments[from], segments[to], window_ns) > kFollowReachNs;
}

double drift_ppm(const std::vector<SegmentRecord>& segments, double window_ns) {
  std::vector<std::pair<double, double>> points;  // (mid ns, offset ns), newest first
  size_t newer = segments.size();                 // the estimated segment taken last
  for (size_t i = segments.size(); i-- > 0 && points.size() < 6;) {
    if (segments[i].status != "estimated") continue;
    if (newer < segments.size() && stepped(segments, i, newer, window_ns)) break;
    points.emplace_back(mid_ns(segments[i]), segments[i].offset_ns);
    newer = i;
  }
  if (points.size() < 3) return segments.empty() ? 0 : segments.back().drift_ppm;
  std::reverse(points.begin(), points.end());
  for (size_t i = 1; i < points.size(); ++i) {
    while (points[i].second - points[i - 1].second > window_ns / 2) points[i].second -= window_ns;
    while (points[i - 1].second - points[i].second > window_ns / 2) points[i].second += window_ns;
  }
  double mx = 0, my = 0;
  for (const auto& [x, y] : points) mx += x, my += y;
  mx /= static_cast<double>(points.size());
  my /= static_cast<double>(points.size());
  double sxy = 0, sxx = 0;
  for (const auto& [x, y] : points) sxy += (x - mx) * (y - my), sxx += (x - mx) * (x - mx);
  return std::clamp(sxx > 0 ? sxy / sxx * 1e6 : 0.0, -kMaxDriftPpm, kMaxDriftPpm);
}

double offset_at(const SegmentRecord& s, double at_ns) { return s.offset_ns + s.drift_ppm * 1e-6 * (at_ns - mid_ns(s)); }

bool drift_established(const std::vector<SegmentRecord>& segments) {
  return std::count_if(segments.begin(), segments.end(), [](const SegmentRecord& s) { return s.status == "estimated"; }) >= 2;
}

}  // namespace pp
