// Window mixes: which share of each sample window every unknown of one GPU's timeline ran (a
// group of layer calls, a job's untracked time, and the rest), the design matrix of each fit of
// the alignment (alignment.hpp).
//
//   const Eigen::MatrixXd A = window_fractions(timeline, ends_ns, 100e6);  // one fit's rows
//
//   WindowMixes mix(timeline);  // a search: hundreds of fits (window_fit.hpp), each window moved
//   for (double d : offsets) fit_windows(mix(ends_at(d), 100e6), values, timeline.unknowns);  // a little
//
// A window's length is taken to whole nanoseconds (a driver period of a sixth of a second is
// 166,666,667 ns), so its edges fall on the events' own ns: its events' overlaps add up as
// integers, exactly, divided once per unknown; so WindowMixes, which updates the overlaps of
// windows it has seen from the events near their moved edges, gives the rows of
// window_fractions to the bit.
#pragma once
#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <vector>

#include "attribution/alignment.hpp"

namespace pp {

// Row i: the fraction of window (ends[i] - window, ends[i]] spent in each unknown, each job's
// untracked time (the part of the job's span its events leave), and the rest (the last column).
// An instant (window 0) puts 1 where ends[i] falls. Ends ascending.
Eigen::MatrixXd window_fractions(const AlignmentTimeline& t, const std::vector<int64_t>& ends, double window);

// Whole-nanosecond windows and their overlaps: per window i, the ns each unknown ran in it
// (busy[i * unknowns + u]) and each job's events covered (covered[i * jobs + j]).
struct WindowOverlaps {
  int64_t window_ns = 0;
  std::vector<int64_t> ends, busy, covered;
  // Per window, where the scans of its end's and its start's edges began when it last moved
  // (SIZE_MAX: not yet): the next scan begins a step or two away.
  std::vector<size_t> end_scan, start_scan;
};

// window_fractions for the fits of one timeline (which must outlive it), keeping the overlaps of
// the last few sets of windows: of a set of as many windows as one kept, each window moved at
// most kNearNs takes only the events between its old and new edges, and one moved further
// (a driver's window whose grid phase crossed its DCGM end) its own events, where
// window_fractions reads every event of every window. A window ending where the one before it
// ends (driver windows longer than DCGM's) takes that one's overlaps. Ends out of order are
// passed to window_fractions.
class WindowMixes {
 public:
  explicit WindowMixes(const AlignmentTimeline& t);
  const AlignmentTimeline& timeline() const { return t_; }
  Eigen::MatrixXd operator()(const std::vector<int64_t>& ends, double window);

  static constexpr int64_t kNearNs = 5000000;
  // A call longer than this (a stuck one) is added to each moved edge on its own, not found by
  // reading back that far from the edge; with more than kMaxLongCalls such calls, each fit reads
  // every event instead.
  static constexpr int64_t kLongCallNs = 20000000;
  static constexpr size_t kMaxLongCalls = 64;

 private:
  size_t first_reaching_from(size_t& at, int64_t from) const;
  void add_edge(WindowOverlaps& o, size_t i, size_t first, int64_t from, int64_t to, int64_t sign) const;
  void move_edges(WindowOverlaps& o, const std::vector<int64_t>& ends) const;

  const AlignmentTimeline& t_;
  // Per event, the latest end of the calls up to kLongCallNs from the first to it (ascending):
  // the calls before the first that reaches past a time all end by it.
  std::vector<int64_t> reach_;
  std::vector<size_t> long_calls_;   // the longer ones
  std::array<WindowOverlaps, 3> kept_;  // the most recently used first
};

}  // namespace pp
