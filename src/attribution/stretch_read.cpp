#include "attribution/stretch_read.hpp"

#include <algorithm>
#include <utility>

#include "core/errors.hpp"
#include "core/number_text.hpp"
#include "core/stored_numbers.hpp"
#include "events/event_fields.hpp"

namespace pp {
namespace {

constexpr int64_t kStretchNsPerMs = 1000000;
constexpr double kMostTimingNs = 1e15;  // a timing or window length of pp_alignment, at most

}  // namespace

const char* const kStretchColumns =
    "from_ms, through_ms, offset_ns, timing_ns, coalesce(util_timing_ns, 0) AS util_timing_ns, window_ms, "
    "util_window_ms";

StretchTiming stretch_of_row(const Statement& read, const std::string& uuid) {
  StoredRow row(read, "pp_alignment");
  // A length in ns (column in ms: scaled).
  const auto checked_ns = [&](int column, double ns_per_unit) {
    constexpr const char* kWanted = "a length of 0 to 1e15 ns, some 11 days";
    const std::optional<double> value = stored_double(read, column);
    if (!value || !(*value >= 0 && *value * ns_per_unit <= kMostTimingNs))
      throw row.refused(column, value ? number_text(*value) : row.shown(column), kWanted);
    return *value * ns_per_unit;
  };
  const auto length_ns = [&](int column) {
    return read.column_null(column) ? std::nullopt
                                    : std::optional<double>(checked_ns(column, static_cast<double>(kStretchNsPerMs)));
  };
  // A window end in ns (the column's stored time less the offset), refused outside the times a
  // call can have (kMaxEventNs), where no alignment writes it.
  const auto end_ns = [&](int64_t ms, const char* name, int64_t from, int64_t offset) {
    int64_t ns;
    if (__builtin_mul_overflow(ms, kStretchNsPerMs, &ns) || __builtin_sub_overflow(ns, offset, &ns) || ns < 0 ||
        ns > kMaxEventNs)
      throw Error(std::string("pp_alignment's ") + name + " of GPU " + uuid + " at from_ms " +
                  std::to_string(from) + " is " + std::to_string(ms) + " (with offset_ns " +
                  std::to_string(offset) + ", a window end outside 1970-2116)");
    return ns;
  };
  row.name_row("of GPU ", uuid);
  const int64_t from = row.whole(0, "a time in unix ms");
  row.name_row("of GPU ", uuid, "from_ms", from);
  const int64_t through = row.whole(1, "a time in unix ms");
  const int64_t offset = row.whole(2, "a whole number of ns");
  return {from,
          end_ns(from, "from_ms", from, offset),
          end_ns(through, "through_ms", from, offset),
          checked_ns(3, 1),
          checked_ns(4, 1),
          length_ns(5),
          length_ns(6)};
}

KnownStretches read_stretches(sqlite3* db, const std::string& uuid) {
  Statement read(db, std::string("SELECT ") + kStretchColumns +
                         " FROM main.pp_alignment WHERE uuid = :uuid AND status <> 'no layers' ORDER BY from_ms");
  read.bind(":uuid", uuid);
  KnownStretches known;
  while (read.step()) known.stretches.push_back(stretch_of_row(read, uuid));
  return known;
}

StretchReader::StretchReader(sqlite3* db, std::string uuid) : db_(db), uuid_(std::move(uuid)) {
  if (!has_alignment_sums(db_)) {
    read_every_stretch();
    for (const StretchTiming& s : known_.stretches)
      largest_timing_ns_ = std::max({largest_timing_ns_, s.dcgm_ns, s.driver_ns});
    return;
  }
  last_ = last_stored_sums(db_, uuid_);
  unsummed_ = stretches_after(last_ ? std::optional(last_->from_ms) : std::nullopt);
  largest_timing_ns_ = last_ ? static_cast<double>(last_->sums.longest_ns) : 0;
  for (const StretchTiming& s : unsummed_) largest_timing_ns_ = std::max({largest_timing_ns_, s.dcgm_ns, s.driver_ns});
}

std::vector<StretchTiming> StretchReader::stretches_after(std::optional<int64_t> after_ms) const {
  Statement read(db_, std::string("SELECT ") + kStretchColumns +
                          " FROM main.pp_alignment WHERE uuid = :uuid AND status <> 'no layers' AND from_ms > :after "
                          "ORDER BY from_ms");
  read.bind(":uuid", uuid_);
  read.bind(":after", after_ms.value_or(INT64_MIN));
  std::vector<StretchTiming> stretches;
  while (read.step()) stretches.push_back(stretch_of_row(read, uuid_));
  return stretches;
}

// Whether the stretches follow those the sums hold as the align step writes them: timings
// whole, and both window ends in order (so that a job's stretches are found by their ends).
bool StretchReader::in_order(const std::vector<StretchTiming>& stretches, const StretchSums& before) const {
  const StretchTiming* previous = nullptr;
  for (const StretchTiming& s : stretches) {
    const int64_t first_before = previous ? previous->first_end_ns : before.first_end_ns;
    const int64_t last_before = previous ? previous->last_end_ns : before.last_end_ns;
    const bool first = !previous && before.stretches == 0;
    if (!whole_ns(s.dcgm_ns) || !whole_ns(s.driver_ns) || s.first_end_ns > s.last_end_ns ||
        (!first && (s.first_end_ns < first_before || s.last_end_ns < last_before)))
      return false;
    previous = &s;
  }
  return true;
}

void StretchReader::read_every_stretch() {
  known_ = read_stretches(db_, uuid_);
  every_stretch_ = true;
}

void StretchReader::read_newest(int64_t lowest_ns, std::optional<int64_t> earliest_ts_ms, int64_t horizon_ms) {
  lowest_ns_ = lowest_ns;
  if (every_stretch_) return;
  const StretchSums summed = last_ ? last_->sums : StretchSums{};
  if (!in_order(unsummed_, summed)) return read_every_stretch();
  // The first stretch to read: the first whose windows end after the lowest any window reaches
  // (every job that ends before it is out of reach) or that begins within the horizon of the
  // earliest window (every one before it counts for every window), whichever comes first.
  std::optional<StoredSums> first;
  const auto take_earlier = [&](std::optional<StoredSums> row) {
    if (row && (!first || row->sums.stretches < first->sums.stretches)) first = std::move(row);
  };
  if (earliest_ts_ms) {
    take_earlier(first_stored_sums_ending_after(db_, uuid_, lowest_ns));
    if (horizon_ms != kEveryStretch) {
      int64_t horizon_end;
      if (!__builtin_add_overflow(*earliest_ts_ms, horizon_ms, &horizon_end))
        take_earlier(first_stored_sums_from(db_, uuid_, horizon_end));
    }
  }
  // The sums before it, and every stretch from there on.
  std::optional<StoredSums> before = last_;
  if (first) before = stored_sums_before(db_, uuid_, first->from_ms);
  known_.before = before ? before->sums : StretchSums{};
  known_.first = static_cast<size_t>(known_.before.stretches);
  // (From the last with sums on, the stretches read already.)
  const bool after_last = before ? last_ && before->from_ms == last_->from_ms : !last_;
  known_.stretches =
      after_last ? std::move(unsummed_) : stretches_after(before ? std::optional(before->from_ms) : std::nullopt);
  if (!in_order(known_.stretches, known_.before)) read_every_stretch();
}

void StretchReader::read_job_starts(const GpuTimeline& gpu, const std::vector<bool>& from_data) {
  if (every_stretch_ || known_.first == 0) return;
  known_.job_starts.assign(gpu.jobs.size(), {});
  Statement read(db_, std::string("SELECT ") + kStretchColumns +
                          " FROM main.pp_alignment WHERE uuid = :uuid AND status <> 'no layers' AND from_ms >= :from "
                          "ORDER BY from_ms");
  for (size_t j = 0; j < gpu.jobs.size(); ++j) {
    KnownStretches::JobStart& start = known_.job_starts[j];
    const TimelineJob& job = gpu.jobs[j];
    // A job that ends before every window's reach is never asked for.
    if (job.last <= lowest_ns_) {
      start.kind = KnownStretches::JobStart::kNotRead;
      continue;
    }
    // Its stretches begin among those read where every stretch before them ends by its start.
    if (known_.before.last_end_ns <= job.first) continue;
    const std::optional<StoredSums> first = first_stored_sums_ending_after(db_, uuid_, job.first);
    if (!first) return read_every_stretch();  // (not where the sums are as the align step writes them)
    const std::optional<StoredSums> before = stored_sums_before(db_, uuid_, first->from_ms);
    // (A row deleted by hand between them: the stretches of the gap would count as inside.)
    if (first->sums.stretches - 1 != (before ? before->sums.stretches : 0)) return read_every_stretch();
    start.kind = KnownStretches::JobStart::kBefore;
    start.first = static_cast<size_t>(first->sums.stretches - 1);
    start.before_inside = before ? before->sums : StretchSums{};
    // Its edge: the stretches whose windows begin before its span, one by one; the first whose
    // windows begin in it is the first wholly inside (the windows' starts are in order where the
    // stretches keep no window of their own, and every one up to known_.first ends before the
    // span ends: it ends by lowest_ns).
    read.bind(":uuid", uuid_);
    read.bind(":from", first->from_ms);
    while (start.first + start.edge.size() < known_.first && read.step()) {
      StretchTiming s = stretch_of_row(read, uuid_);
      s.reach_ns = stretch_reach_ns(gpu, from_data, s);
      if (windows_start_ns(s) >= job.first) break;
      const std::optional<int64_t> timing = whole_ns(s.dcgm_ns), util_timing = whole_ns(s.driver_ns);
      std::optional<StretchSums> with;
      if (timing && util_timing)
        with = with_stretch(start.before_inside, length_ms(s), *timing, *util_timing, s.window_ns || s.util_window_ns);
      if (!with) {
        sqlite3_reset(read.handle());
        return read_every_stretch();
      }
      start.before_inside = *with;
      start.edge.push_back(std::move(s));
    }
    sqlite3_reset(read.handle());
    // Inside the span, the difference of two rows (rows edited by hand so that the later holds
    // less would wrap it: read one by one), and each stretch's windows reach as far (none keeps
    // a window of its own).
    if (start.first + start.edge.size() < known_.first &&
        (!sums_follow(start.before_inside, known_.before) ||
         sums_between(start.before_inside, known_.before).kept_windows != 0))
      return read_every_stretch();
  }
}

}  // namespace pp
