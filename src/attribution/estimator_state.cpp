// The estimator's state (estimator_state.hpp): kept by the retention step, read by pp_estimates
// (sql/estimator_state.sql). In a state, every unknown of a job is named "job<US>unknown", as in a
// joint system, so that a state kept while its job ran alone joins the job's joint system if a
// later job shares its GPU; the untracked time of the system and '(rest)' keep their names.
#include "attribution/estimator_state.hpp"

#include <optional>
#include <vector>

#include "core/embedded_sql.hpp"
#include "core/statement.hpp"
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

}  // namespace

void keep_estimator_state(sqlite3* db, const std::string& uuid, int64_t through_ms) {
  const JobSharing sharing = JobSharing::read(db);
  Statement read(db, named_sql("estimator_state", "read_one"));
  Statement write(db, named_sql("estimator_state", "write"));
  // One read of the GPU's timeline serves every shift and both groupings.
  const GpuTimeline timeline = read_gpu_timeline_for_shifts(db, uuid, std::nullopt, through_ms);
  for (int shift : kTimingShifts) {
    GroupingSystems by_layer, by_layer_type;
    by_layer_type.by_type = true;
    const GpuTimeline moved = shift == 0 ? GpuTimeline{} : shifted_timeline(timeline, shift);
    add_timeline_systems(shift == 0 ? timeline : moved, 0, shift, {}, sharing, {&by_layer, &by_layer_type});
    for (GroupingSystems* grouping : {&by_layer, &by_layer_type}) {
      SystemUnknowns& unknowns = grouping->unknowns;
      std::map<SystemKey, DeconvolveData>& systems = grouping->systems;
      const std::map<SystemKey, SystemNotes>& notes = grouping->notes;
      const bool by_type = grouping->by_type;
      for (const auto& [key, note] : notes) {
        const bool joint = sharing.joint(key.system);
        std::optional<std::string> encoded;
        int64_t windows = 0;
        const auto found = systems.find(key);
        if (found != systems.end() && note.failed.empty()) {
          read.bind(":uuid", uuid);
          read.bind(":system", key.system);
          read.bind(":metric", key.metric);
          read.bind(":grouping", grouping_name(by_type));
          read.bind(":shift", shift);
          LeastSquaresState state;
          if (read.step()) {
            if (!read.column_null(0)) state = LeastSquaresState::decode(read.column_blob(0));
            while (read.step()) {  // (to its end, which resets it)
            }
          }
          const auto& known = unknowns[key.system];
          state.merge(found->second.state([&](const std::string& name) {
                        const auto it = known.find(name);
                        return it == known.end() ? std::string() : it->second.layer_type;
                      }),
                      [&](const std::string& name) { return state_name(key.system, joint, name); });
          windows = state.rows();
          encoded = state.encode();
        }
        write.bind(":uuid", uuid);
        write.bind(":system", key.system);
        write.bind(":metric", key.metric);
        write.bind(":grouping", grouping_name(by_type));
        write.bind(":shift", shift);
        write.bind(":windows", windows);
        write.bind(":concurrent_windows", note.concurrent_windows);
        write.bind(":windows_unknown", int64_t{note.windows_unknown ? 1 : 0});
        write.bind(":shared_gauge", int64_t{note.shared_gauge ? 1 : 0});
        write.bind(":failed", note.failed.empty() ? std::optional<std::string>() : note.failed);
        if (encoded)
          write.bind_blob(":state", *encoded);
        else
          write.bind(":state", std::optional<std::string>());
        write.run();
      }
    }
  }
}

void add_estimator_state(sqlite3* db, bool by_type, int shift, const std::map<std::string, Bounds>& bounds,
                         const JobSharing& sharing, std::map<SystemKey, DeconvolveData>& systems,
                         SystemUnknowns& unknowns, std::map<SystemKey, SystemNotes>& notes) {
  Statement read(db, named_sql("estimator_state", "read_grouping"));
  read.bind(":grouping", grouping_name(by_type));
  read.bind(":shift", shift);
  while (read.step()) {
    const std::string& system = sharing.system(read.column_text(0));
    const bool joint = sharing.joint(system);
    const SystemKey key{system, read.column_text(1)};
    SystemNotes& note = notes[key];
    if (shift == 0) note.concurrent_windows += read.column_int64(2);
    note.windows_unknown = note.windows_unknown || read.column_int64(3) != 0;
    note.shared_gauge = note.shared_gauge || read.column_int64(4) != 0;
    if (!read.column_null(5) && note.failed.empty()) note.failed = read.column_text(5);
    if (read.column_null(6)) continue;
    const LeastSquaresState state = LeastSquaresState::decode(read.column_blob(6));
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
