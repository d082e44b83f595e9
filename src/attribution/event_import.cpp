// Importing event files into pp_events and pp_jobs, resuming at pp_event_files' positions.
#include "attribution/event_import.hpp"

#include "events/event_reader.hpp"
#include "core/statement.hpp"

namespace pp {
namespace {

constexpr const char* kInsertEvent =
    "INSERT OR IGNORE INTO main.pp_events(job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, "
    "epoch, batch, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, cpu_num, source_file, "
    "line) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)";
constexpr const char* kInsertJob =
    "INSERT OR IGNORE INTO main.pp_jobs(job_id, host_name, pid, params, command, torch_version, start_time, "
    "source_file, line) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

std::optional<std::string> unless_null(const std::string& text, bool null) {
  return null ? std::nullopt : std::optional<std::string>(text);
}

// The columns of layer_events, in pp_events' order.
void bind_event(Statement& insert, const LayerEvent& e, const std::string& file, int64_t line) {
  insert.bind(1, e.job_id);
  insert.bind(2, unless_null(e.host_name, e.host_name_null));
  insert.bind(3, unless_null(e.ip, e.ip_null));
  insert.bind(4, unless_null(e.pod, e.pod_null));
  insert.bind(5, unless_null(e.namespace_, e.namespace_null));
  insert.bind(6, e.gpu_uuid);
  insert.bind(7, e.gpu_null ? std::nullopt : std::optional<int64_t>(e.gpu));
  insert.bind(8, e.rank);
  insert.bind(9, e.pid);
  insert.bind(10, e.epoch);
  insert.bind(11, e.batch);
  insert.bind(12, e.layer);
  insert.bind(13, e.layer_type);
  insert.bind(14, static_cast<int64_t>(e.forward ? 1 : 0));
  insert.bind(15, e.t_start_ns);
  insert.bind(16, e.t_end_ns);
  insert.bind(17, ns_to_seconds(e.t_start_ns));
  insert.bind(18, ns_to_seconds(e.t_end_ns));
  insert.bind(19, e.cpu_num);
  insert.bind(20, file);
  insert.bind(21, line);
}

// The columns of layer_jobs, in pp_jobs' order.
void bind_job(Statement& insert, const JobHeader& h, const std::string& file, int64_t line) {
  insert.bind(1, h.job_id);
  insert.bind(2, h.host_name);
  insert.bind(3, h.pid);
  insert.bind(4, h.params);
  insert.bind(5, h.command);
  insert.bind(6, h.torch_version);
  insert.bind(7, h.start_time_ns ? std::optional<double>(ns_to_seconds(*h.start_time_ns)) : std::nullopt);
  insert.bind(8, file);
  insert.bind(9, line);
}

}  // namespace

long long import_event_files(sqlite3* db, const std::string& path, const char* function, bool final,
                             const std::function<void(const std::string&)>& warn) {
  // Positions of files whose rows are still there: rows deleted to start over are read again.
  EventFileScan::Positions resume;
  {
    Statement read(db,
                   "SELECT source_file, bytes, lines FROM main.pp_event_files AS f "
                   "WHERE EXISTS (SELECT 1 FROM main.pp_events AS e WHERE e.source_file = f.source_file) "
                   "OR EXISTS (SELECT 1 FROM main.pp_jobs AS j WHERE j.source_file = f.source_file)",
                   function);
    while (read.step())
      resume[reinterpret_cast<const char*>(sqlite3_column_text(read.stmt, 0))] = {
          sqlite3_column_int64(read.stmt, 1), sqlite3_column_int64(read.stmt, 2)};
  }
  Statement insert_event(db, kInsertEvent, function);
  Statement insert_job(db, kInsertJob, function);
  long long events_added = 0;
  EventFileScan scan(function, warn);
  scan.start(path, resume);
  LayerEvent event;
  JobHeader header;
  std::string_view text;
  std::string problem;
  bool complete = false;
  while (scan.next(text, complete)) {
    switch (parse_event_line(text, event, problem)) {
      case LineKind::Event:
        bind_event(insert_event, event, scan.source_file(), scan.line_number());
        insert_event.run();
        events_added += sqlite3_changes(db);
        break;
      case LineKind::JobHeader:
        if (!parse_job_header(text, header, problem)) {
          scan.skip(problem, complete);
          break;
        }
        bind_job(insert_job, header, scan.source_file(), scan.line_number());
        insert_job.run();
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
  Statement save(db,
                 "INSERT INTO main.pp_event_files(source_file, bytes, lines) VALUES (?1, ?2, ?3) "
                 "ON CONFLICT (source_file) DO UPDATE SET bytes = excluded.bytes, lines = excluded.lines",
                 function);
  for (const auto& [file, position] : scan.ended()) {
    save.bind(1, file);
    save.bind(2, position.bytes);
    save.bind(3, position.lines);
    save.run();
  }
  return events_added;
}

}  // namespace pp
