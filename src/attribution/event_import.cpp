#include "attribution/event_import.hpp"

#include "core/embedded_sql.hpp"
#include "core/statement.hpp"
#include "events/event_file_scan.hpp"
#include "events/job_header.hpp"
#include "events/mig_device.hpp"

namespace pp {
namespace {

// Binds each event field to the parameter of its name; fields pp_events does not keep
// (local_rank, world_size) have none and are left out.
struct BindField {
  Statement& insert;
  int index;
  void operator()(const std::string& text) const { insert.bind(index, std::string_view(text)); }
  void operator()(const Nullable<std::string>& text) const {
    insert.bind(index, text.null ? std::optional<std::string>() : std::optional<std::string>(text.value));
  }
  void operator()(int64_t value) const { insert.bind(index, value); }
  void operator()(const Nullable<int64_t>& value) const {
    insert.bind(index, value.null ? std::optional<int64_t>() : std::optional<int64_t>(value.value));
  }
  void operator()(bool value) const { insert.bind(index, int64_t{value ? 1 : 0}); }
  void operator()(double value) const { insert.bind(index, value); }
};

class EventInserter {
 public:
  explicit EventInserter(sqlite3* db) : insert_(db, named_sql("import", "insert_event")) {
    for (int f = 0; f < kEventFieldCount; ++f)
      field_index_[f] = sqlite3_bind_parameter_index(insert_.handle(), (":" + std::string(kEventFieldKeys[f])).c_str());
  }

  // Returns the rows added (0 for a line imported before).
  long long add(const LayerEvent& e, const std::string& file, int64_t line) {
    for (int f = 0; f < kEventFieldCount; ++f)
      if (field_index_[f] > 0) visit_event_field(e, f, BindField{insert_, field_index_[f]});
    insert_.bind(":t_start", ns_to_seconds(e.t_start_ns));
    insert_.bind(":t_end", ns_to_seconds(e.t_end_ns));
    insert_.bind(":source_file", file);
    insert_.bind(":line", line);
    return insert_.run();
  }

 private:
  Statement insert_;
  int field_index_[kEventFieldCount] = {};
};

// The name under which the rows of a replaced file are kept: "F (replaced 1)", "F (replaced 2)"...
// the first that no file or row has.
std::string keep_replaced_rows(sqlite3* db, const std::string& file) {
  std::string kept;
  for (int n = 1;; ++n) {
    kept = file + " (replaced " + std::to_string(n) + ")";
    if (query_double(db, named_sql("import", "name_taken"), {{":kept", kept}}, 0) == 0) break;
  }
  run_script(db, named_sql("import", "keep_replaced_rows"), {{":source_file", file}, {":kept", kept}});
  return kept;
}

// An event whose times cannot be a layer's call: it ends before it starts (a wall-clock step
// between the two readings), or lies outside 1970..2116 where ns arithmetic could overflow.
const char* impossible_times(const LayerEvent& e) {
  if (e.t_start_ns < 0 || e.t_end_ns > kMaxEventNs) return "t_start_ns or t_end_ns outside 1970-2116";
  if (e.t_end_ns < e.t_start_ns) return "t_end_ns is before t_start_ns (a clock step?)";
  return nullptr;
}

void insert_job(Statement& insert, const JobHeader& h, const std::string& file, int64_t line) {
  insert.bind(":job_id", h.job_id);
  insert.bind(":host_name", h.host_name);
  insert.bind(":pid", h.pid);
  insert.bind(":params", h.params);
  insert.bind(":command", h.command);
  insert.bind(":torch_version", h.torch_version);
  insert.bind(":start_time", h.start_time_ns ? std::optional<double>(ns_to_seconds(*h.start_time_ns)) : std::nullopt);
  insert.bind(":source_file", file);
  insert.bind(":line", line);
  insert.run();
}

void insert_mig_device(Statement& insert, const MigDevice& d) {
  insert.bind(":mig_uuid", d.mig_uuid);
  insert.bind(":gpu_uuid", d.gpu_uuid);
  insert.bind(":gpu_instance_id", d.gpu_instance_id);
  insert.bind(":profile", d.profile);
  insert.run();
}

}  // namespace

long long import_event_files(sqlite3* db, const std::string& path, bool final,
                             const std::function<void(const std::string&)>& warn) {
  EventFileScan::Positions resume;
  {
    Statement read(db, named_sql("import", "resume_positions"));
    while (read.step())
      resume[read.column_text(0)] = {read.column_int64(1), read.column_int64(2), read.column_int64(3),
                                     read.column_int64(4), read.column_text(5)};
  }
  EventInserter insert_event(db);
  Statement insert_job_header(db, named_sql("import", "insert_job"));
  Statement insert_mig(db, named_sql("import", "insert_mig_device"));
  long long events_added = 0;
  EventFileScan scan(warn, db);
  scan.start(path, &resume, [db](const std::string& file) { return keep_replaced_rows(db, file); });
  LayerEvent event;
  JobHeader header;
  MigDevice mig_device;
  std::string_view text;
  std::string problem;
  bool complete = false;
  LineKind kind;
  while (scan.next_decoded(event, kind, text, problem, complete)) {
    switch (kind) {
      case LineKind::Event:
        if (const char* problem_times = impossible_times(event)) {
          scan.skip(problem_times, complete);
          break;
        }
        events_added += insert_event.add(event, scan.source_file(), scan.line_number());
        break;
      case LineKind::JobHeader:
        if (!parse_job_header(text, header, problem)) {
          scan.skip(problem, complete);
          break;
        }
        insert_job(insert_job_header, header, scan.source_file(), scan.line_number());
        break;
      case LineKind::MigDevice:
        if (!parse_mig_device(text, mig_device, problem)) {
          scan.skip(problem, complete);
          break;
        }
        insert_mig_device(insert_mig, mig_device);
        break;
      case LineKind::Malformed:
        // Without its '\n' the last line may still be being written: the next import reads it
        // again. Only once the writer is done is it torn.
        if (complete || final) scan.skip(problem, complete);
        break;
      case LineKind::Blank:
        break;
    }
  }
  Statement save(db, named_sql("import", "save_position"));
  Statement save_state(db, named_sql("import", "save_state"));
  for (const auto& [file, position] : scan.ended()) {
    save.bind(":source_file", file);
    save.bind(":bytes", position.bytes);
    save.bind(":lines", position.lines);
    save.bind(":head_bytes", position.head_bytes);
    save.bind(":head_hash", position.head_hash);
    save.run();
    if (position.state.empty()) continue;
    save_state.bind(":source_file", file);
    save_state.bind(":state", position.state);
    save_state.run();
  }
  return events_added;
}

}  // namespace pp
