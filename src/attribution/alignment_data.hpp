// What the align step (align_samples.cpp) reads from and writes to the attribution tables:
// a GPU's stored samples with their copies marked, its events as an alignment timeline, window
// lengths, and the segments and windows it aligns (sql/align.sql).
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attribution/alignment.hpp"
#include "attribution/event_store.hpp"
#include "core/sqlite_api.hpp"
#include "core/statement.hpp"

namespace pp {

// One stretch of a GPU's stored times and its alignment (a row of pp_alignment).
struct SegmentRecord {
  int64_t from_ms = 0, through_ms = 0;  // stored times in (from_ms, through_ms]
  // Its first stored time (0: not known, its windows gone): how long no sample was stored
  // before it (offset_drift.hpp after_gap). Not a column: read from pp_windows.
  int64_t first_ms = 0;
  double offset_ns = 0, timing_ns = 0, drift_ppm = 0;
  double util_phase_ns = NAN, util_timing_ns = NAN;
  int64_t samples = 0, repeats = 0, skipped = 0, moved = 0;
  std::string status;
  std::string reason;  // why it is not estimated, in words (empty where it is)
  // The lengths its windows keep where the data had not told them when it was aligned.
  std::optional<double> window_ms, util_window_ms;
};

// A stored time and the window it describes (a row of pp_windows).
struct WindowRecord {
  int64_t ts_ms = 0, end_ns = 0;
  std::optional<int64_t> util_end_ns, copy_of_ms;
  bool util_copy = false;
};

// The GPU's samples from the last aligned stored time on, one row per stored time.
struct GpuSampleData {
  struct Metric {
    std::string metric, kind;
  };
  std::vector<Metric> metrics;
  std::vector<int64_t> ts_ms;
  std::vector<std::vector<double>> values;  // [metric][sample]; NaN: no value
  std::vector<size_t> primary;              // metrics fitted for the offset: window kind, else driver
  std::vector<size_t> driver;               // driver_window metrics
  // A stored time is a copy of the one before it when every metric has the same value there (a
  // scrape that found no new DCGM window). Sample 0 may be the last one aligned before (then
  // first_new is 1): a copy of it takes its window from pp_windows.
  std::vector<char> is_copy;
  size_t first_new = 0;
};

// How many stored times of [first, last) read a window older than the one stored before them:
// every metric reads as the stored time two or three before, not as the one just before (an
// exporter whose latency scatters by a period serves windows out of order).
int64_t served_out_of_order(const GpuSampleData& data, size_t first, size_t last);

// Each job's span over all of its events on the GPU, a bound on the longest event (how far back
// an event overlapping a time may have started), and the newest event's start and end: read
// once per GPU from the folded events' spans and the unfolded blocks' rows, and an index seek.
struct GpuEventExtent {
  std::vector<std::pair<std::string, AlignmentTimeline::Job>> jobs;
  int64_t longest_ns = 0;
  int64_t last_start_ns = 0, last_end_ns = 0;
};
GpuEventExtent read_event_extent(sqlite3* db, const std::string& uuid);

// Only the stored times its jobs need are read: from a job's first event to samples_after_ns
// after its last (align.sql samples_after: at least kSamplesAfterLastEventSeconds).
GpuSampleData read_gpu_samples(sqlite3* db, const std::string& uuid, const GpuEventExtent& extent,
                               int64_t samples_after_ns, std::optional<int64_t> last_aligned_ms);

// The GPU's events overlapping [from_ns, to_ns) grouped by (job, layer type, direction), read
// in two parts (sql_relay.hpp): fetch_alignment_events copies the blocks that can hold them
// (the connection's thread), alignment_timeline decodes and groups them (any thread).
struct AlignmentEventBlocks {
  LayerNames layers;
  EventScan scan;
  std::vector<FetchedBlock> blocks;
};
AlignmentEventBlocks fetch_alignment_events(sqlite3* db, const std::string& uuid, const GpuEventExtent& extent,
                                            double from_ns, double to_ns);
AlignmentTimeline alignment_timeline(const AlignmentEventBlocks& fetched, const GpuEventExtent& extent,
                                     double from_ns, double to_ns);

std::vector<SegmentRecord> read_segments(sqlite3* db, const std::string& uuid);
// The window of a stored time aligned before (pp_windows), if any.
std::optional<WindowRecord> window_of(sqlite3* db, const std::string& uuid, int64_t ts_ms);
// The newest `count` windows aligned at or before through_ms, but stored copies, oldest first.
std::vector<WindowRecord> own_windows_before(sqlite3* db, const std::string& uuid, int64_t through_ms, int64_t count);

// The window of a series in pp_intervals, and whether it is settled (set, or estimated before)
// rather than a first guess from the spacing.
struct SeriesWindow {
  double window_ms = 0;
  bool settled = false;
};
SeriesWindow series_window(sqlite3* db, const std::string& uuid, const std::string& metric);
// Records an estimated window for the given metrics of the GPU (a set or user value stays).
void save_estimated_window(sqlite3* db, const std::string& uuid, const std::vector<std::string>& metrics,
                           double window_ms);

// A stretch's row of pp_alignment, and its stored times' rows of pp_windows.
void write_segment(sqlite3* db, const std::string& uuid, const SegmentRecord& segment);
// The window length (window) or driver period (util) of an earlier stretch, now told by the
// data: its rows take pp_intervals' (NULL).
void forget_window_lengths(sqlite3* db, const std::string& uuid, const SegmentRecord& segment, bool window, bool util);
void write_windows(sqlite3* db, const std::string& uuid, const SegmentRecord& segment,
                   const std::vector<WindowRecord>& windows);

}  // namespace pp
