#include "attribution/offset_drift.hpp"

#include <algorithm>
#include <utility>

namespace pp {

double mid_ns(const SegmentRecord& s) { return (static_cast<double>(s.from_ms) + static_cast<double>(s.through_ms)) * 1e6 / 2; }

double drift_ppm(const std::vector<SegmentRecord>& segments, double window_ns) {
  std::vector<std::pair<double, double>> points;  // (mid ns, offset ns), newest first
  for (auto it = segments.rbegin(); it != segments.rend() && points.size() < 6; ++it)
    if (it->status == "estimated") points.emplace_back(mid_ns(*it), it->offset_ns);
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
