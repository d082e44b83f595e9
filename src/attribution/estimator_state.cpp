// The estimator's state (estimator_state.hpp): kept by the retention step, read by pp_estimates
// (sql/estimator_state.sql). In a state, every unknown of a job is named "job<US>unknown", as in a
// joint system, so that a state kept while its job ran alone joins the job's joint system if a
// later job shares its GPU; the untracked time of the system and '(rest)' keep their names.
#include "attribution/estimator_state.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/embedded_sql.hpp"
#include "core/errors.hpp"
#include "core/sql_relay.hpp"
#include "core/statement.hpp"
#include "core/stored_numbers.hpp"
#include "core/text.hpp"
#include "stats/least_squares_state.hpp"

namespace pp {

namespace {

const char* grouping_name(bool by_type) { return by_type ? "layer_type" : "layer"; }

bool shared_name(const std::string& name) { return name == kSharedUntracked || name == DeconvolveData::kRest; }

// A system's unknown as a state names it, and back.
std::string state_name(const std::string& system, bool joint, const std::string& name) {
  return joint || shared_name(name) ? name : system + kJobSeparator + name;
}
std::string system_name(bool joint, const std::string& name) {
  const size_t separator = name.find(kJobSeparator);
  return joint || separator == std::string::npos ? name : name.substr(separator + 1);
}

// What a state's unknown stands for ("job<US>layer|forward", its label the layer type).
UnknownInfo unknown_info(bool joint, const LeastSquaresState::Unknown& u) {
  if (u.name == kSharedUntracked) return {"", "(untracked)", "(untracked)", 0};
  const size_t separator = u.name.find(kJobSeparator), bar = u.name.rfind('|');
  const size_t from = separator == std::string::npos ? 0 : separator + 1;
  UnknownInfo info;
  info.job_id = joint && separator != std::string::npos ? u.name.substr(0, separator) : "";
  info.name = u.name.substr(from, bar == std::string::npos || bar < from ? std::string::npos : bar - from);
  info.layer_type = u.label;
  info.forward = bar == std::string::npos || bar < from ? 0 : std::atoi(u.name.c_str() + bar + 1);
  return info;
}

// Whether a state's unknown is named as a refresh names one: "(rest)", or "[job<US>]layer|0"
// or "|1" (the shared untracked time among them), in UTF-8. A damaged or forged file's other
// names were estimated as layers no job ran (a '|7' direction, text SQLite cannot show).
void check_unknown_name(const LeastSquaresState::Unknown& u) {
  const std::string& name = u.name;
  const bool named = name == DeconvolveData::kRest ||
                     (name.size() > 2 && name[name.size() - 2] == '|' && (name.back() == '0' || name.back() == '1') &&
                      name.find(kJobSeparator) != name.size() - 3);
  if (!named || valid_utf8(name) != name || valid_utf8(u.label) != u.label)
    throw Error("estimator state: unknown '" + valid_utf8(name, 80) + "' is named as no refresh names one (LAYER|0 or "
                "LAYER|1, in UTF-8)");
}

// A stored state, or an error that says which row of pp_estimator_state holds a blob that is
// not one (a user can delete that row; the estimates then lack its windows).
LeastSquaresState decode_row(std::string_view blob, const std::string& uuid, const std::string& system,
                             const std::string& metric, const std::string& grouping, int shift) {
  try {
    LeastSquaresState state = LeastSquaresState::decode(blob);
    for (const LeastSquaresState::Unknown& u : state.unknowns()) check_unknown_name(u);
    return state;
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + ", in pp_estimator_state row (uuid '" + uuid + "', system '" + system +
                "', metric '" + metric + "', grouping '" + grouping + "', shift " + std::to_string(shift) + ")");
  }
}

// A row of pp_estimator_state as read_gpu's columns give it, or an error that names the row and
// the column whose value the refresh never writes (edited by hand, or a forged file merged in):
// a count of windows that is no whole number from 0 to 2^53, a flag other than 0 or 1, a reason
// that is not text. Read as they were, a text counted 0 windows, a negative count was reported,
// and two counts near 2^63 overflowed when added.
EstimatorStateRow row_of(const Statement& read, const std::string& uuid) {
  EstimatorStateRow row;
  row.uuid = uuid;
  row.system = read.column_text(0);
  row.metric = read.column_text(1);
  row.grouping = read.column_text(2);
  row.shift = static_cast<int>(read.column_int64(3));
  const std::string name = "(uuid '" + uuid + "', system '" + row.system + "', metric '" + row.metric +
                           "', grouping '" + row.grouping + "', shift " + std::to_string(row.shift) + ")";
  StoredRow stored(read, "pp_estimator_state");
  stored.name_row("in row ", name);
  const auto refused = [&](int column, const char* wanted) {
    return Error(std::string(stored.refused(column, stored.shown(column), wanted).what()) +
                 ": edited by hand? Delete the row; the estimates then lack its windows");
  };
  const auto count = [&](int column) {
    constexpr int64_t kMostWindows = int64_t{1} << 53;  // (as a state's row count)
    const std::optional<int64_t> value = stored_int64(read, column);
    if (!value || *value < 0 || *value > kMostWindows) throw refused(column, "a count of windows, 0 to 2^53");
    return *value;
  };
  const auto flag = [&](int column) {
    const std::optional<int64_t> value = stored_int64(read, column);
    if (!value || (*value != 0 && *value != 1)) throw refused(column, "0 or 1");
    return *value == 1;
  };
  row.windows = count(4);
  row.concurrent_windows = count(5);
  row.windows_unknown = flag(6);
  row.shared_gauge = flag(7);
  if (read.column_type(8) != SQLITE_NULL && read.column_type(8) != SQLITE_TEXT)
    throw refused(8, "why the system could not be kept: text, or NULL");
  if (!read.column_null(8)) row.failed = read.column_text(8);
  if (!read.column_null(9)) row.state = read.column_blob(9);  // (decode_row says what is wrong with it)
  row.off_grid_windows = count(10);
  // A row without sums counts no windows but where the system could not be kept (failed says
  // why): else the windows it counts would be left out of the estimates unsaid.
  if (!row.state && !row.failed && row.windows > 0)
    throw refused(9, ("the sums of the " + std::to_string(row.windows) + " windows it counts (a state), or NULL "
                      "only with no windows or a reason in failed").c_str());
  return row;
}

// A statement that reads the state: in a table an earlier version made, not upgraded yet (a
// read-only file), off_grid_windows reads as 0, which is what the upgrade writes there.
std::string read_statement(sqlite3* db, const char* name) {
  std::string sql(named_sql("estimator_state", name));
  if (query_double(db, named_sql("estimator_state", "has_off_grid_windows"), {}, 0) > 0) return sql;
  const std::string column = "off_grid_windows";
  const size_t at = sql.find(column);
  if (at != std::string::npos) sql.replace(at, column.size(), "0 AS " + column);
  return sql;
}

}  // namespace

bool has_estimator_state_table(sqlite3* db) {
  return query_double(db, named_sql("estimator_state", "has_table"), {}, 0) > 0;
}

std::vector<EstimatorStateRow> estimator_state_rows(sqlite3* db, const std::string& uuid,
                                                   std::optional<int64_t> through_ms, bool every_row,
                                                   int64_t horizon_ms, SqlRelay& sql) {
  // The stored rows, by (system, metric, grouping, shift): every one, or those the new windows
  // add to (read as they are met, so that a GPU's past jobs cost nothing).
  std::map<std::tuple<std::string, std::string, std::string, int>, EstimatorStateRow> rows;
  bool stored = false;
  std::optional<JobSharing> sharing;
  std::unique_ptr<TimelineFetch> fetched;
  GpuTimeline timeline;
  std::set<std::string> read_systems;  // systems whose stored rows were all read
  std::set<std::tuple<std::string, std::string, std::string, int>> met;  // the rows the windows add to
  auto take_row = [&](Statement& read) {
    EstimatorStateRow row = row_of(read, uuid);
    rows.emplace(std::make_tuple(row.system, row.metric, row.grouping, row.shift), std::move(row));
  };
  std::string read_one_sql;  // (the table's form looked up once, not per system met below)
  sql.run([&] {
    stored = has_estimator_state_table(db);
    if (stored) read_one_sql = read_statement(db, "read_one");
    if (stored && every_row) {
      Statement read(db, read_statement(db, "read_gpu"));
      read.bind(":uuid", uuid);
      while (read.step()) take_row(read);
    }
    sharing = JobSharing::read(db);
    // One read of the GPU's timeline serves every shift and both groupings (its events are
    // decoded on this thread, below).
    fetched = fetch_gpu_timeline_for_shifts(db, uuid, std::nullopt, through_ms, horizon_ms);
  });
  fetched->decode();
  sql.run([&] { fetched->read_timing(); });
  timeline = fetched->build();
  fetched.reset();
  // The stored rows of the systems of the jobs whose calls the timeline holds, in one query
  // each: read one by one below, each would wait for the connection's thread while it reads
  // other GPUs' timelines. Not when no window goes (a refresh with nothing new), and not for
  // the other jobs the timeline lists (every job the GPU ran, each with its untracked group).
  const bool windows = std::any_of(timeline.series.begin(), timeline.series.end(),
                                   [](const TimelineSeries& s) { return !s.samples.empty(); });
  if (stored && !every_row && windows) {
    std::vector<bool> has_calls(timeline.jobs.size(), false);
    for (const TimelineEvent& e : timeline.events) has_calls[e.job] = true;
    std::set<std::string> systems;
    for (uint32_t job = 0; job < timeline.jobs.size(); ++job)
      if (has_calls[job]) systems.insert(sharing->system(timeline.jobs[job].job_id));
    sql.run([&] {
      Statement read(db, read_statement(db, "read_system"));
      for (const std::string& system : systems)
        if (read_systems.insert(system).second) {
          read.bind(":uuid", uuid);
          read.bind(":system", system);
          while (read.step()) take_row(read);
        }
    });
  }
  const std::vector<TimelineSeries> unmoved = timeline.series;  // (the events are not copied per shift)
  for (int shift : kTimingShifts) {
    if (shift != 0) {
      timeline.series = unmoved;
      move_windows(timeline, shift);
    }
    GroupingSystems by_layer, by_layer_type;
    by_layer_type.by_type = true;
    by_layer.sums_only = by_layer_type.sums_only = true;  // (only their states are kept)
    add_timeline_systems(timeline, 0, shift, {}, *sharing, {&by_layer, &by_layer_type});
    for (GroupingSystems* grouping : {&by_layer, &by_layer_type}) {
      for (const auto& entry : grouping->notes) {
        const SystemKey& key = entry.first;  // (not a structured binding: the lambdas below use it)
        const SystemNotes& note = entry.second;
        const std::string name = grouping_name(grouping->by_type);
        if (stored && !every_row && !read_systems.count(key.system) &&
            !rows.count(std::make_tuple(key.system, key.metric, name, shift)))
          sql.run([&] {  // (statements live and die on the connection's thread)
            Statement read_one(db, read_one_sql);
            read_one.bind(":uuid", uuid);
            read_one.bind(":system", key.system);
            read_one.bind(":metric", key.metric);
            read_one.bind(":grouping", name);
            read_one.bind(":shift", shift);
            while (read_one.step()) take_row(read_one);
          });
        met.insert(std::make_tuple(key.system, key.metric, name, shift));
        auto [it, added] = rows.try_emplace(std::make_tuple(key.system, key.metric, name, shift),
                                            EstimatorStateRow{uuid, key.system, key.metric, name, shift, 0, 0, false, false, std::nullopt, std::nullopt, 0});
        EstimatorStateRow& row = it->second;
        row.concurrent_windows += note.concurrent_windows;
        row.off_grid_windows += note.off_grid_windows;
        row.shared_gauge = row.shared_gauge || note.shared_gauge;
        if (!note.failed.empty() && !row.failed) row.failed = note.failed;
        const auto found = grouping->states.find(key);
        if (found == grouping->states.end() || row.failed) continue;
        LeastSquaresState state = row.state ? decode_row(*row.state, uuid, row.system, row.metric, row.grouping, shift)
                                            : LeastSquaresState{};
        const bool joint = sharing->joint(key.system);
        state.merge(found->second, [&](const std::string& unknown) { return state_name(key.system, joint, unknown); });
        row.windows = state.rows();
        row.state = state.encode();
      }
    }
  }
  std::vector<EstimatorStateRow> out;
  for (auto& entry : rows)
    if (every_row || met.count(entry.first)) out.push_back(std::move(entry.second));  // (not those read unchanged)
  return out;
}

void keep_estimator_state(sqlite3* db, const std::string& uuid, int64_t through_ms, int64_t horizon_ms, SqlRelay& sql) {
  const std::vector<EstimatorStateRow> rows = estimator_state_rows(db, uuid, through_ms, false, horizon_ms, sql);
  sql.run([&] { write_estimator_state(db, rows); });
}

void write_estimator_state(sqlite3* db, const std::vector<EstimatorStateRow>& rows) {
  Statement write(db, named_sql("estimator_state", "write"));
  for (const EstimatorStateRow& row : rows) {
    write.bind(":uuid", row.uuid);
    write.bind(":system", row.system);
    write.bind(":metric", row.metric);
    write.bind(":grouping", row.grouping);
    write.bind(":shift", row.shift);
    write.bind(":windows", row.windows);
    write.bind(":concurrent_windows", row.concurrent_windows);
    write.bind(":windows_unknown", int64_t{row.windows_unknown ? 1 : 0});
    write.bind(":off_grid_windows", row.off_grid_windows);
    write.bind(":shared_gauge", int64_t{row.shared_gauge ? 1 : 0});
    write.bind(":failed", row.failed);
    if (row.state)
      write.bind_blob(":state", *row.state);
    else
      write.bind(":state", std::optional<std::string>());
    write.run();
  }
}

void add_estimator_state(sqlite3* db, bool by_type, int shift, const std::map<std::string, Bounds>& bounds,
                         const JobSharing& sharing, std::map<SystemKey, DeconvolveData>& systems,
                         SystemUnknowns& unknowns, std::map<SystemKey, SystemNotes>& notes) {
  if (!has_estimator_state_table(db)) return;
  Statement read(db, read_statement(db, "read_grouping"));
  const std::string grouping = grouping_name(by_type);
  read.bind(":grouping", grouping);
  read.bind(":shift", shift);
  while (read.step()) {
    const EstimatorStateRow row = row_of(read, read.column_text(11));
    const std::string& kept_as = row.system;  // (system() may return its argument)
    const std::string system = sharing.system(kept_as);
    const bool joint = sharing.joint(system);
    const SystemKey key{system, row.metric};
    SystemNotes& note = notes[key];
    // (Each count below 2^53: their sums cannot overflow.)
    if (shift == 0) note.concurrent_windows += row.concurrent_windows;
    if (shift == 0) note.off_grid_windows += row.off_grid_windows;
    note.windows_unknown = note.windows_unknown || row.windows_unknown;
    note.shared_gauge = note.shared_gauge || row.shared_gauge;
    if (row.failed && note.failed.empty()) note.failed = *row.failed;
    if (!row.state) continue;
    const LeastSquaresState state = decode_row(*row.state, row.uuid, kept_as, key.metric, grouping, shift);
    auto& known = unknowns[system];
    for (const auto& u : state.unknowns())
      if (u.name != DeconvolveData::kRest) known.emplace(system_name(joint, u.name), unknown_info(joint, u));
    auto [it, added] = systems.try_emplace(key);
    if (added) {
      const auto b = bounds.find(key.metric);
      if (b != bounds.end()) it->second.set_bounds(b->second.lower, b->second.upper);
    }
    LeastSquaresState renamed;
    renamed.merge(state, [&](const std::string& name) { return system_name(joint, name); });
    it->second.add_state(renamed);
  }
}

}  // namespace pp
