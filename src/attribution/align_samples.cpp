// Refresh step: alignment. For each GPU whose stored samples are not aligned yet, the offset
// between the times Prometheus stored and the windows the samples describe, estimated from the
// data (alignment.hpp) per stretch of time, into pp_alignment; and each stored time's window
// into pp_windows, which the fold and the estimator read. A stretch is aligned once its samples
// and the events around it are all in (or the job ended, or final), and never again (but for
// the window length of one aligned before the data told it, which the next three stretches may
// tell: keep_unsettled_lengths), so any sequence of refreshes aligns as one refresh does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "attribution/align_stretches.hpp"
#include "attribution/alignment.hpp"
#include "attribution/alignment_data.hpp"
#include "attribution/stretch_sums.hpp"
#include "attribution/alignment_report.hpp"
#include "attribution/driver_grid.hpp"
#include "attribution/idle_windows.hpp"
#include "attribution/offset_drift.hpp"
#include "attribution/refresh.hpp"
#include "attribution/scrape_phases.hpp"
#include "core/embedded_sql.hpp"
#include "core/sql_relay.hpp"
#include "core/statement.hpp"
#include "core/text.hpp"

namespace pp {
namespace {

constexpr double kNsPerMs = 1e6;
// The windows before a stretch without layers that place its own: each scrape phase's many times.
constexpr int64_t kWindowsBeforeIdle = 64;
constexpr double kNearWrapShare = 0.1;  // a jump this close to whole periods is a stretch fitted a period off
// A stretch more of whose stored times than this share read a window older than the one stored
// just before them is poorly determined (served_out_of_order, alignment_data.hpp).
constexpr double kOutOfOrderShare = 1.0 / 40;
constexpr double kFollowEdgeNs = 1e6;        // a peak this close to that reach's edge is searched for in full
constexpr double kStretchDriftPpm = 50;      // a stretch's own drift that is taken out before the drift is known
// Window lengths dcgm-exporter's -c is usually set to, tried when the data must tell which.
constexpr double kCandidateWindowsMs[] = {100, 200, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000};
// NVML's utilization period is "between 1 second and 1/6 second, depending on the product".
constexpr double kCandidateDriverWindowsMs[] = {1000.0 / 6, 200, 250, 1000.0 / 3, 500, 1000};


// A stretch as pp_alignment keeps it (times in whole ns, write_segment): the next stretches of
// this refresh read it so, as a later refresh reads it back (refreshes in parts align alike).
SegmentRecord as_stored(SegmentRecord s) {
  s.offset_ns = std::round(s.offset_ns);
  s.timing_ns = std::round(s.timing_ns);
  if (!std::isnan(s.util_phase_ns)) s.util_phase_ns = std::round(s.util_phase_ns);
  if (!std::isnan(s.util_timing_ns)) s.util_timing_ns = std::round(s.util_timing_ns);
  return s;
}

double median_gap_ns(const std::vector<int64_t>& times_ns) {
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < times_ns.size(); ++i) gaps.push_back(times_ns[i] - times_ns[i - 1]);
  if (gaps.empty()) return 0;
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  return static_cast<double>(gaps[gaps.size() / 2]);
}


class GpuAligner {
 public:
  // Every call of SQLite goes through sql (the GPUs are aligned on two threads).
  GpuAligner(RefreshRun& run, std::string uuid, SqlRelay& sql) : run_(run), uuid_(std::move(uuid)), sql_(sql) {}

  void align() {
    sql_.run([&] {
      segments_ = read_segments(run_.db, uuid_);
      const std::optional<int64_t> aligned =
          segments_.empty() ? std::nullopt : std::optional<int64_t>(segments_.back().through_ms);
      extent_ = read_event_extent(run_.db, uuid_);
      folded_through_ms_ = static_cast<int64_t>(
          query_double(run_.db, named_sql("align", "folded_through"), {{":uuid", uuid_}}, 0));
      const double samples_after_ms =
          query_double(run_.db, named_sql("align", "samples_after"),
                       {{":uuid", uuid_}, {":after_ms", kSamplesAfterLastEventSeconds * 1000},
                        {":lag_ms", run_.connection.settings().get_int("max_sample_lag_ms")}},
                       static_cast<double>(kSamplesAfterLastEventSeconds * 1000));
      data_ = read_gpu_samples(run_.db, uuid_, extent_, static_cast<int64_t>(samples_after_ms * kNsPerMs), aligned);
    });
    if (data_.ts_ms.size() <= data_.first_new || data_.primary.empty()) return;
    settings();
    // Stretches end where the windows start or stop holding layers (align_stretches.hpp); a
    // pinned offset places every window alike, searched for or not: nothing to cut there.
    may_hold_layers_ = pinned_ ? std::vector<char>(data_.ts_ms.size(), 1) : may_hold_layers(data_, extent_, lag_ns_);
    // A pinned offset says what the stored times mean: each is its own window, never a repeat.
    if (pinned_) std::fill(data_.is_copy.begin(), data_.is_copy.end(), 0);
    const int64_t limit = complete_through();
    const int64_t gap_ms = restart_gap_ms(data_);
    size_t first = data_.first_new;
    while (first < data_.ts_ms.size() && data_.ts_ms[first] <= limit) {
      const size_t last = segment_end(data_, may_hold_layers_, first, limit, segment_ms_, gap_ms);
      if (last == first) break;
      align_segment(first, last);
      first = last;
    }
  }

  AlignmentReport report;
  // The stretches aligned, for pp_alignment: written by the caller in GPU order (a rowid table,
  // whose rows read back in the order they went in), whatever order the GPUs finish in.
  std::vector<SegmentRecord> written;

 private:
  void settings() {
    const Settings& s = run_.connection.settings();
    pinned_ = s.get("sample_offset_ms") != "auto";
    if (pinned_) parse_double(s.get("sample_offset_ms"), pinned_ms_);
    segment_ms_ = s.get_int("alignment_segment_seconds") * 1000;
    SeriesWindow w;
    sql_.run([&] { w = series_window(run_.db, uuid_, data_.metrics[data_.primary.front()].metric); });
    window_ns_ = w.window_ms * kNsPerMs;
    window_settled_ = w.settled;
    lag_ns_ = static_cast<double>(s.get_int("max_sample_lag_ms")) * kNsPerMs;
    last_event_start_ns_ = extent_.last_start_ns;
    last_event_end_ns_ = extent_.last_end_ns;
  }

  // The newest stored time up to which everything a segment needs is in: all samples up to it
  // (a later one was stored) and the events around it (the job's last event starts well after
  // it, or the job ended, or final).
  int64_t complete_through() const {
    const int64_t last_sample = data_.ts_ms.back();
    const double margin = static_cast<double>(run_.connection.settings().get_int("attribution_margin_seconds"));
    const bool ended = run_.final || run_.now - static_cast<double>(last_event_end_ns_) / 1e9 > margin;
    if (ended) return last_sample;
    const int64_t before_last = data_.ts_ms.size() > 1 ? data_.ts_ms[data_.ts_ms.size() - 2] : last_sample - 1;
    const double lag = std::max(lag_ns_, 2 * window_ns_);
    return std::min<int64_t>(before_last, static_cast<int64_t>((static_cast<double>(last_event_start_ns_) - lag) / kNsPerMs));
  }

  // Whether a stretch before this one was placed by a fit (or a setting), not only predicted.
  bool offset_placed_before() const {
    return pinned_ || std::any_of(segments_.begin(), segments_.end(), [](const SegmentRecord& s) {
             return s.status == "estimated" || s.status == "poorly determined" || s.status == "setting";
           });
  }

  double predicted_offset(double at_ns) const {
    if (segments_.empty()) return pinned_ ? pinned_ms_ * kNsPerMs : 0;
    return offset_at(segments_.back(), at_ns);
  }

  void align_segment(size_t first, size_t last) {
    SegmentRecord seg;
    seg.from_ms = first == 0 ? data_.ts_ms[0] - 1 : data_.ts_ms[first - 1];
    seg.through_ms = data_.ts_ms[last - 1];
    seg.first_ms = data_.ts_ms[first];
    seg.samples = static_cast<int64_t>(last - first);
    seg.drift_ppm = segments_.empty() ? 0 : segments_.back().drift_ppm;
    std::vector<size_t> kept;  // one stored time per window: the first copy
    for (size_t i = first; i < last; ++i)
      if (!data_.is_copy[i]) kept.push_back(i);
    // Stored times with the known drift taken out, so that one offset describes the segment.
    const double mid = mid_ns(seg);
    AlignmentSamples samples;
    auto detrend = [&] {
      samples.ts_ns.clear();
      for (size_t i : kept) {
        const double t = static_cast<double>(data_.ts_ms[i]) * kNsPerMs;
        samples.ts_ns.push_back(static_cast<int64_t>(std::llround(t - seg.drift_ppm * 1e-6 * (t - mid))));
      }
    };
    detrend();
    for (size_t m : data_.primary) {
      std::vector<double> v;
      for (size_t i : kept) v.push_back(data_.values[m][i]);
      samples.values.push_back(std::move(v));
    }
    for (size_t i : kept) samples.copy_after.push_back(i + 1 < last && data_.is_copy[i + 1]);
    const double spacing = median_gap_ns(samples.ts_ns);
    out_of_order_ = served_out_of_order(data_, first, last);
    // Until the data tell the window's length, a stretch takes its own samples' spacing (not the
    // series' median in pp_intervals, which the first refresh fixed from whatever it had).
    if (!window_settled_ && spacing > 0) window_ns_ = spacing;
    stretch_spacing_ns_ = spacing;
    const double lag = std::max(lag_ns_, 2 * std::max(window_ns_, spacing));
    // A pinned offset needs the events only for the driver's grid (GPU_UTIL's own window).
    // A stretch of the idle GPU's windows (may_hold_layers) has none: the events at its
    // edge would let a search place its windows by the one or two a far offset reaches them with.
    const bool needs_events = may_hold_layers_[first] && (!pinned_ || (!data_.driver.empty() && data_.primary != data_.driver));
    AlignmentTimeline timeline;
    if (needs_events) {
      const double from_ns =
          static_cast<double>(data_.ts_ms[first]) * kNsPerMs - lag - 2 * std::max(window_ns_, spacing);
      const double to_ns = static_cast<double>(data_.ts_ms[last - 1]) * kNsPerMs + lag;
      std::optional<AlignmentEventBlocks> fetched;
      sql_.run([&] { fetched = fetch_alignment_events(run_.db, uuid_, extent_, from_ns, to_ns); });
      timeline = alignment_timeline(*fetched, extent_, from_ns, to_ns);  // (decoded on this thread)
    }
    std::vector<int> shift;
    std::vector<char> copy;  // kept samples the alignment found to be copies (idle ones)
    if (pinned_) {
      seg.offset_ns = pinned_ms_ * kNsPerMs;
      seg.status = "setting";
    } else if (timeline.events.empty()) {
      seg.offset_ns = predicted_offset(mid);
      seg.status = "no layers";
    } else {
      const double detrended_by = seg.drift_ppm;
      estimate(seg, timeline, samples, mid, spacing, shift, copy);
      // Until earlier stretches establish the drift, a stretch measures its own (its stored
      // times against the grid of its windows): a strong one is taken out and the stretch
      // estimated again.
      if (seg.status != "not determined" && std::fabs(seg.drift_ppm - detrended_by) > kStretchDriftPpm &&
          !drift_established()) {
        detrend();
        estimate(seg, timeline, samples, mid, spacing, shift, copy);
      }
    }
    if (!(window_ns_ > 0)) window_ns_ = spacing > 0 ? spacing : 1e9;  // nothing better known yet
    note_jump(seg);
    write(seg, first, last, kept, samples, shift, copy, timeline);
    segments_.push_back(as_stored(seg));
  }

  // Where the stored times fall at several phases of the window's period, the estimate's windows
  // are those of the times put on its lattice (estimate_over_phases): samples.ts_ns become them.
  void estimate(SegmentRecord& seg, const AlignmentTimeline& timeline, AlignmentSamples& samples, double mid,
                double spacing, std::vector<int>& shift, std::vector<char>& copy) {
    // What an earlier estimate of the stretch found (before its drift was taken out) does not
    // hold for this one: a stretch this one cannot determine keeps no window moved or copied.
    shift.clear();
    copy.clear();
    seg.moved = 0;
    // After a gap in the stored times the exporter may have restarted, its windows on a new grid
    // anywhere within a window of the old one: no prediction holds, the search is a full one.
    bool follow = window_settled_ && !segments_.empty() && segments_.back().status == "estimated" && !after_gap(seg);
    OffsetEstimate best;
    std::vector<int64_t> lattice;  // the best fit's stored times on a lattice (empty: as stored)
    if (follow) {
      // Near the offset the drift predicts, or one window off it (the scrape phase wrapped).
      const double c = predicted_offset(mid), w = window_ns_, r = kFollowReachNs;
      best = estimate_over_phases(timeline, samples, w, {{c - r, c + r}, {c + w - r, c + w + r}, {c - w - r, c - w + r}},
                                  0.5e6, lattice);
      // A peak at the edge of the ranges is no peak of theirs: the offset lies beyond them (it
      // stepped where no gap says so), and the full search finds it.
      const double from_centre = std::min({std::fabs(best.offset_ns - c), std::fabs(best.offset_ns - c - w),
                                           std::fabs(best.offset_ns - c + w)});
      if (best.found && from_centre > r - kFollowEdgeNs) {
        follow = false;
        best = OffsetEstimate();
        lattice.clear();
      }
    }
    if (!follow) {
      std::vector<double> windows;
      if (window_settled_) {
        windows.push_back(window_ns_);
      } else {
        for (double w : kCandidateWindowsMs)
          if (w * kNsPerMs <= spacing * 1.05) windows.push_back(w * kNsPerMs);
        if (std::none_of(windows.begin(), windows.end(), [&](double w) { return std::fabs(w - spacing) < 1e6; }))
          windows.push_back(spacing);
      }
      double best_window = window_ns_;
      for (double w : windows) {
        const double lag = std::max(lag_ns_, 2 * w);
        // A millisecond moves a long window's mix by little: its peak is as wide as it is long.
        std::vector<int64_t> on_lattice;
        OffsetEstimate e = estimate_over_phases(timeline, samples, w, {{-w, lag}}, std::max(1e6, w / 1000), on_lattice);
        if (e.found && (!best.found || e.log_likelihood > best.log_likelihood)) {
          best = std::move(e);
          best_window = w;
          lattice = std::move(on_lattice);
        }
      }
      if (best.found && !window_settled_) {
        window_ns_ = best_window;
        window_settled_ = true;
        std::vector<std::string> metrics;
        for (const auto& m : data_.metrics)
          if (m.kind != "driver_window" || data_.primary == data_.driver) metrics.push_back(m.metric);
        sql_.run([&] { save_estimated_window(run_.db, uuid_, metrics, window_ns_ / kNsPerMs); });
        take_told_length(true, data_.primary == data_.driver);
      }
    }
    if (!best.found) {
      seg.offset_ns = predicted_offset(mid);
      const double window = std::max(window_ns_, spacing);
      // After a stretch a fit placed, the offset it predicts holds to within half a window (its
      // windows then go where those before them at their scrape phases were: idle_window_ends).
      // With none before, the offset is a guess of 0 anywhere in the range searched, [-window,
      // the lag], and the timing says so: half a window left a GPU's first stretch 1.5 s off at
      // 1 s windows served from dcgm-exporter's cache with a timing of 0.5 s.
      seg.timing_ns = offset_placed_before() ? window / 2 : std::max(lag_ns_, 2 * window);
      seg.status = "not determined";
      seg.reason = not_determined_reason(timeline, samples);
      return;
    }
    if (!lattice.empty()) samples.ts_ns = std::move(lattice);
    seg.offset_ns = best.offset_ns;
    seg.moved = best.moved;
    shift = best.shift;
    copy = best.copy;
    // An exporter whose latency scatters by about a period or more reads each scrape's window
    // from about three and serves some out of order. The windows stay in order here, and those
    // the values cannot place stay where the offset puts them, a period or two from their own
    // (10-40% of them at 100 ms of scatter), their mixes pulling the offset by ms as well: the
    // offset's own uncertainty says nothing of that.
    const bool in_order = static_cast<double>(out_of_order_) <= kOutOfOrderShare * static_cast<double>(seg.samples);
    seg.timing_ns = best.unique && in_order ? best.half90_ns : std::max(best.half90_ns, window_ns_ / 2);
    // Windows on no straight grid keep their scrapes' lateness: each may be off by as much as
    // they spread, whatever the offset's own uncertainty.
    if (!best.on_grid) seg.timing_ns = std::max(seg.timing_ns, best.off_grid_spread_ns);
    seg.status = best.unique && in_order && best.on_grid && best.half90_ns <= kDeterminedHalf90Ns ? "estimated"
                                                                                                  : "poorly determined";
    seg.reason = poorly_determined_reason(best, in_order, out_of_order_, seg.samples);
    if (seg.status == "estimated" && drift_established()) {
      std::vector<SegmentRecord> with = segments_;
      with.push_back(seg);
      seg.drift_ppm = drift_ppm(with, window_ns_);
    } else if (best.unique && !drift_established()) {
      // The stretch's own drift, until the stretches before it establish one.
      if (std::fabs(best.stretch_drift_ppm) > kStretchDriftPpm)
        seg.drift_ppm = std::clamp(seg.drift_ppm + best.stretch_drift_ppm, -kMaxDriftPpm, kMaxDriftPpm);
    }
  }

  // Windows never stored between a stretch's first and last own window (rows[first], rows[last])
  // beyond those its scrape interval passes over: of the window steps between them and the
  // scrape steps (each gap of stored times in spacings, a missed scrape two), the fewer, less
  // the steps its own windows take. At the period that is every window not stored; scraping
  // every 1.5 periods, gaps of one and two windows alternate and none is a skip, and each
  // scrape that stored a window again or that Prometheus missed leaves one.
  int64_t skipped_windows(const std::vector<WindowRecord>& rows, size_t first, size_t last, int64_t own) const {
    if (!(window_ns_ > 0) || !(stretch_spacing_ns_ > 0)) return 0;
    const int64_t window_steps =
        std::llround(static_cast<double>(rows[last].end_ns - rows[first].end_ns) / window_ns_);
    int64_t scrape_steps = 0;
    for (size_t i = first + 1; i <= last; ++i)
      scrape_steps += std::max<int64_t>(
          1, std::llround(static_cast<double>(rows[i].ts_ms - rows[i - 1].ts_ms) * kNsPerMs / stretch_spacing_ns_));
    return std::max<int64_t>(0, std::min(window_steps, scrape_steps) - (own - 1));
  }

  // Two estimated stretches before this one: with it, three points to fit the drift to.
  bool drift_established() const { return pp::drift_established(segments_); }

  // A change of offset that neither the drift nor a wrap by one window explains, against the
  // newest estimated stretch of the two before (a poorly determined one between, such as the
  // stretch the change lies in, predicts nothing).
  // After a gap (offset_drift.hpp after_gap) the change is a step: the exporter restarted, its
  // windows on a new grid, anywhere within a window (said as a restart; the drift is fitted anew).
  void note_jump(SegmentRecord& seg) {
    if (seg.status != "estimated") return;
    const SegmentRecord* from = nullptr;
    bool gap = after_gap(seg);
    for (size_t back = 1; back <= std::min<size_t>(2, segments_.size()) && !from; ++back) {
      if (segments_[segments_.size() - back].status == "estimated") from = &segments_[segments_.size() - back];
      else gap = gap || after_gap(segments_[segments_.size() - back]);
    }
    if (!from || !offset_unexplained(*from, seg, window_ns_)) return;
    const double predicted = offset_at(*from, mid_ns(seg));
    const double jump = std::fabs(seg.offset_ns - predicted);
    if (gap) {
      if (report.restarts++ == 0) {
        report.first_restart_ms = seg.first_ms;
        report.restart_gap_ms = seg.first_ms - seg.from_ms;
        report.restart_from_ns = predicted;
        report.restart_to_ns = seg.offset_ns;
      }
      return;
    }
    // A jump of a whole number of periods and a few ms is no wrap (the drift moves the offset
    // smoothly, a wrap by exactly a period) and seldom a restart (whose new latency lies
    // anywhere in a period): it is a stretch a model of one offset with windows moved one by
    // one fitted a period off, where the exporter's latency scatters by tens of ms. Its windows
    // may be as far from their place as the jump: poorly determined, its timing as wide, so
    // that the estimates' intervals take it in.
    const double periods = window_ns_ > 0 ? std::round(jump / window_ns_) : 0;
    if (periods >= 1 && std::fabs(jump - periods * window_ns_) <= kNearWrapShare * window_ns_) {
      seg.status = "poorly determined";
      seg.timing_ns = std::max(seg.timing_ns, jump);
      seg.reason = "its offset lies " + ms_text(std::fabs(seg.offset_ns - predicted)) + " ms from where the stretches "
                   "before predict, about " + std::to_string(static_cast<long long>(periods)) +
                   " window(s) and a few ms: its windows were fitted a period off";
    }
    if (report.jumps++ == 0) {
      report.first_jump_ms = seg.from_ms;
      report.jump_from_ns = predicted;  // (what the stretches before, with their drift, predict)
      report.jump_to_ns = seg.offset_ns;
    }
  }

  // The driver grid of the first driver-window metric (GPU_UTIL) on the DCGM window ends.
  bool driver_grid(const SegmentRecord& seg, const AlignmentTimeline& timeline, const std::vector<size_t>& kept,
                   const std::vector<int64_t>& ends, double& period, double& phase, double& timing) {
    if (data_.driver.empty() || data_.primary == data_.driver) return false;
    const size_t m = data_.driver.front();
    const SeriesWindow known = driver_window();
    double previous_phase = NAN;
    for (auto it = segments_.rbegin(); it != segments_.rend() && std::isnan(previous_phase); ++it)
      previous_phase = it->util_phase_ns;
    if (seg.status != "estimated" && seg.status != "setting") {
      if (!known.settled) return false;
      period = known.window_ms * kNsPerMs;
      phase = std::isnan(previous_phase) ? 0 : previous_phase;
      timing = period / 2;
      return true;
    }
    std::vector<double> values;
    for (size_t i : kept) values.push_back(data_.values[m][i]);
    std::vector<double> periods;
    if (known.settled) {
      periods.push_back(known.window_ms * kNsPerMs);
    } else {
      // Also DCGM's own window: some drivers and DCGM versions average GPU_UTIL over it.
      periods.push_back(window_ns_);
      for (double w : kCandidateDriverWindowsMs)
        if (std::abs(w * kNsPerMs - window_ns_) > 1) periods.push_back(w * kNsPerMs);
    }
    const GridEstimate g = estimate_driver_grid(timeline, ends, values, periods, 1e6);
    if (!g.found) return false;
    if (!known.settled) {
      sql_.run([&] { save_estimated_window(run_.db, uuid_, {data_.metrics[m].metric}, g.period_ns / kNsPerMs); });
      driver_window_ = SeriesWindow{g.period_ns / kNsPerMs, true};
      take_told_length(false, true);
    }
    period = g.period_ns;
    phase = g.phase_ns;
    timing = g.half90_ns;
    return true;
  }

  // Where the data has not told the window length (or the driver's period) yet, the stretch's
  // windows get its samples' spacing: one of the next kRevisableStretches stretches may tell
  // it (take_told_length), else they keep it. The fold holds them until then (refresh.sql
  // fold_windows), so that one refresh over everything gives what any sequence of refreshes
  // gives. (With a pinned offset the window's length is never told: it is not waited for.)
  void keep_unsettled_lengths(SegmentRecord& seg) {
    const double spacing_ms = (stretch_spacing_ns_ > 0 ? stretch_spacing_ns_ : window_ns_) / kNsPerMs;
    if (!window_settled_) seg.window_ms = spacing_ms;
    if (data_.driver.empty()) return;
    if (data_.primary == data_.driver) {
      seg.util_window_ms = seg.window_ms;
      return;
    }
    if (!driver_window().settled) seg.util_window_ms = spacing_ms;
  }

  // The driver-window metric's window in pp_intervals, read once a refresh (each stretch asks
  // twice); only driver_grid() changes it, and keeps it here.
  SeriesWindow driver_window() {
    if (!driver_window_)
      sql_.run([&] { driver_window_ = series_window(run_.db, uuid_, data_.metrics[data_.driver.front()].metric); });
    return *driver_window_;
  }

  // The data told the window length (window) or the driver's period (util) in the stretch being
  // aligned: the stretches among the last kRevisableStretches before it that were given their
  // samples' spacing take it too, but for those a fold took already (only a final refresh
  // folds a stretch the next ones may still change: data after it are not in one refresh).
  void take_told_length(bool window, bool util) {
    const size_t from = segments_.size() > kRevisableStretches ? segments_.size() - kRevisableStretches : 0;
    const size_t first_written = segments_.size() - written.size();  // the stretches of this refresh
    for (size_t i = from; i < segments_.size(); ++i) {
      if (segments_[i].through_ms <= folded_through_ms_) continue;
      const bool w = window && segments_[i].window_ms, u = util && segments_[i].util_window_ms;
      if (!w && !u) continue;
      for (SegmentRecord* s : {&segments_[i], i >= first_written ? &written[i - first_written] : nullptr}) {
        if (s && w) s->window_ms.reset();
        if (s && u) s->util_window_ms.reset();
      }
      sql_.run([&] { forget_window_lengths(run_.db, uuid_, segments_[i], w, u); });
    }
  }

  void write(SegmentRecord& seg, size_t first, size_t last, const std::vector<size_t>& kept,
             const AlignmentSamples& samples, const std::vector<int>& shift, const std::vector<char>& copy,
             const AlignmentTimeline& timeline) {
    const auto found_copy = [&](size_t k) { return !copy.empty() && copy[k]; };
    // The windows of the kept samples that are not copies, which the alignment may have found.
    std::vector<size_t> own;
    std::vector<int64_t> ends;
    for (size_t k = 0; k < kept.size(); ++k) {
      if (found_copy(k)) continue;
      own.push_back(kept[k]);
      ends.push_back(static_cast<int64_t>(std::llround(static_cast<double>(samples.ts_ns[k]) - seg.offset_ns -
                                                       (shift.empty() ? 0 : shift[k]) * window_ns_)));
    }
    // (On no grid, as the estimate found, the stretch is poorly determined and its timing says how far.)
    if (seg.status == "estimated" || seg.status == "poorly determined") snap_to_grid(ends, window_ns_);
    // A stretch no fit placed (the idle GPU's, or one the data cannot determine): its windows
    // as those before them at their phases were (idle_window_ends). The offset the stretches
    // before predict holds for stored times put on their lattice, not for these as stored.
    if ((seg.status == "no layers" || seg.status == "not determined") && !own.empty()) {
      std::vector<WindowRecord> before;
      sql_.run([&] { before = own_windows_before(run_.db, uuid_, seg.from_ms, kWindowsBeforeIdle); });
      std::vector<int64_t> stored;
      for (size_t i : own) stored.push_back(data_.ts_ms[i]);
      std::vector<int64_t> placed = idle_window_ends(before, stored, window_ns_, seg.drift_ppm);
      if (!placed.empty()) ends = std::move(placed);
    }
    double period = 0, phase = 0, timing = 0;
    const bool grid = driver_grid(seg, timeline, own, ends, period, phase, timing);
    if (grid) {
      seg.util_phase_ns = phase;
      seg.util_timing_ns = timing;
    }
    keep_unsettled_lengths(seg);
    std::vector<WindowRecord> rows;
    size_t k = 0, kept_index = 0;
    std::optional<int64_t> original_ms, previous_util_end;
    int64_t original_end = 0;
    // The stretch's own windows (not copies): the first and last, and how many.
    std::optional<size_t> first_own, last_own;
    int64_t own_windows = 0;
    if (first > 0) {  // the stored time before this segment: a copy at its start repeats it
      original_ms = data_.ts_ms[first - 1];
      std::optional<WindowRecord> before;
      sql_.run([&] { before = window_of(run_.db, uuid_, *original_ms); });
      original_end = before ? before->end_ns : 0;
      if (before) previous_util_end = before->util_end_ns;
    }
    for (size_t i = first; i < last; ++i) {
      WindowRecord r;
      r.ts_ms = data_.ts_ms[i];
      const bool copy_found = !data_.is_copy[i] && found_copy(kept_index++);
      if (data_.is_copy[i] || copy_found) {
        r.end_ns = original_end;
        r.copy_of_ms = original_ms;
        ++seg.repeats;
      } else {
        r.end_ns = ends[k++];
        original_ms = r.ts_ms;
        original_end = r.end_ns;
        if (!first_own) first_own = rows.size();
        last_own = rows.size();
        ++own_windows;
      }
      if (grid) {
        r.util_end_ns = driver_window_end(r.end_ns, period, phase);
        r.util_copy = previous_util_end && *r.util_end_ns <= *previous_util_end;
        if (!r.util_copy) previous_util_end = r.util_end_ns;
      }
      rows.push_back(r);
    }
    if (first_own) seg.skipped = skipped_windows(rows, *first_own, *last_own, own_windows);
    sql_.run([&] { write_windows(run_.db, uuid_, seg, rows); });
    written.push_back(seg);
    ++report.segments;
    report.repeats += seg.repeats;
    report.skipped += seg.skipped;
    report.moved += seg.moved;
    if (seg.status == "not determined") ++report.not_determined;
    if (seg.status == "poorly determined" && report.poorly++ == 0) report.first_poorly_ms = seg.from_ms;
  }

  RefreshRun& run_;
  std::string uuid_;
  SqlRelay& sql_;
  std::vector<SegmentRecord> segments_;
  GpuSampleData data_;
  std::vector<char> may_hold_layers_;  // per stored time of data_ (may_hold_layers)
  int64_t out_of_order_ = 0;  // of the stretch being aligned (served_out_of_order)
  GpuEventExtent extent_;
  bool pinned_ = false;
  double pinned_ms_ = 0;
  int64_t segment_ms_ = 10000;
  double window_ns_ = 0, lag_ns_ = 0, stretch_spacing_ns_ = 0;
  int64_t folded_through_ms_ = 0;  // the GPU's fold point (pp_fold_state)
  bool window_settled_ = false;
  std::optional<SeriesWindow> driver_window_;
  int64_t last_event_start_ns_ = 0, last_event_end_ns_ = 0;
};

}  // namespace

void align_samples(RefreshRun& run) {
  std::vector<std::string> gpus;
  {
    Statement list(run.db, named_sql("align", "gpus_to_align"));
    while (list.step()) gpus.push_back(list.column_text(0));
  }
  // GPUs are independent: each reads and writes only its own rows.
  std::vector<AlignmentReport> reports(gpus.size());
  std::vector<std::vector<SegmentRecord>> written(gpus.size());
  for_each_in_parallel(gpus.size(), [&](size_t g, SqlRelay& sql) {
    GpuAligner aligner(run, gpus[g], sql);
    aligner.align();
    reports[g] = aligner.report;
    written[g] = std::move(aligner.written);
  });
  for (size_t g = 0; g < gpus.size(); ++g) {
    for (const SegmentRecord& segment : written[g]) write_segment(run.db, gpus[g], segment);
    extend_alignment_sums(run.db, gpus[g]);
    for (const std::string& warning : reports[g].warnings(gpus[g])) run.warn(warning);
  }
}

}  // namespace pp
