#include "attribution/event_import.hpp"

#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>
#include <vector>
#include <set>
#include <string>
#include <unordered_map>

#include "attribution/event_store.hpp"

#include "core/embedded_sql.hpp"
#include "core/statement.hpp"
#include "events/event_file_scan.hpp"
#include "events/job_header.hpp"
#include "events/mig_device.hpp"

namespace pp {
namespace {

SqlValue text_or_null(const Nullable<std::string>& v) { return v.null ? SqlValue() : SqlValue(v.value); }
SqlValue integer_or_null(const Nullable<int64_t>& v) { return v.null ? SqlValue() : SqlValue(v.value); }

// The events of a file as pp_events stores them (local_rank and world_size are not kept). A
// file's events share their block columns and name a few dozen layers: the key is made again
// only when a column changes (and the writer then compares keys), and each (layer, type) is
// looked up in LayerNames once.
class StoredEvents {
 public:
  explicit StoredEvents(LayerNames& layers) : layers_(layers) {}

  // Adds e, line `line` of `file`, to the writer's blocks; returns its id.
  int64_t add(BlockWriter& blocks, const LayerEvent& e, const std::string& file, int64_t line) {
    // The compact decoder's stamp says when the block columns are those of the last event.
    const bool same = has_key_ && (e.context_stamp != 0 ? e.context_stamp == last_.context_stamp &&
                                                              std::get<std::string>(key_[kKeySourceFile]) == file
                                                        : same_key(e, file));
    if (!same) {
      key_ = {e.job_id, text_or_null(e.host_name), text_or_null(e.ip), text_or_null(e.pod),
              text_or_null(e.namespace_), e.gpu_uuid, integer_or_null(e.gpu), e.rank, e.pid, e.cpu_num, file};
      last_ = e;
      has_key_ = true;
    }
    return blocks.add(key_, event(e, line), false, same);
  }

 private:
  int64_t layer_id(const LayerEvent& e) {
    if (e.layer_stamp != 0) {
      if (e.layer_stamp == last_layer_stamp_) return last_layer_id_;
      if (const auto found = stamp_ids_.find(e.layer_stamp); found != stamp_ids_.end()) {
        last_layer_stamp_ = e.layer_stamp;
        return last_layer_id_ = found->second;
      }
    }
    const uint64_t length = e.layer.size();  // (a name may hold a NUL: its length keeps the key unambiguous)
    name_.assign(reinterpret_cast<const char*>(&length), sizeof length);
    name_.append(e.layer);
    name_.append(e.layer_type);
    auto found = layer_ids_.find(name_);
    if (found == layer_ids_.end()) found = layer_ids_.emplace(name_, layers_.id_of(e.layer, e.layer_type)).first;
    if (e.layer_stamp != 0) {
      stamp_ids_.emplace(e.layer_stamp, found->second);
      last_layer_stamp_ = e.layer_stamp;
      last_layer_id_ = found->second;
    }
    return found->second;
  }

  BlockEvent event(const LayerEvent& e, int64_t line) {
    BlockEvent out;
    out.layer_id = layer_id(e);
    out.forward = e.forward;
    out.epoch = e.epoch;
    out.batch = e.batch;
    out.t_start_ns = e.t_start_ns;
    out.t_end_ns = e.t_end_ns;
    out.line = line;
    return out;
  }

  static bool same(const Nullable<std::string>& a, const Nullable<std::string>& b) {
    return a.null == b.null && a.value == b.value;
  }
  bool same_key(const LayerEvent& e, const std::string& file) const {
    const LayerEvent& l = last_;
    return e.job_id == l.job_id && same(e.host_name, l.host_name) && same(e.ip, l.ip) && same(e.pod, l.pod) &&
           same(e.namespace_, l.namespace_) && e.gpu_uuid == l.gpu_uuid && e.gpu.null == l.gpu.null &&
           e.gpu.value == l.gpu.value && e.rank == l.rank && e.pid == l.pid &&
           e.cpu_num == l.cpu_num &&
           std::get<std::string>(key_[kKeySourceFile]) == file;
  }

  LayerNames& layers_;
  BlockKey key_;
  LayerEvent last_;  // the event key_ was made from
  bool has_key_ = false;
  std::string name_;  // the layer's length, layer, type: the key of layer_ids_ (reused)
  std::unordered_map<std::string, int64_t> layer_ids_;
  std::unordered_map<uint64_t, int64_t> stamp_ids_;  // LayerEvent::layer_stamp -> id
  uint64_t last_layer_stamp_ = 0;
  int64_t last_layer_id_ = 0;
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

// How many events of a file one import must read before whole-ms times are taken for its grain
// (a few events on whole ms by chance are 1 in 10^6 each, on ns clocks).
constexpr int64_t kTimeGrainEvents = 100;

// An event whose times cannot be a layer's call: it ends before it starts (a wall-clock step
// between the two readings), or lies outside 1970..2116 where ns arithmetic could overflow.
const char* impossible_times(const LayerEvent& e) {
  if (e.t_start_ns < 0 || e.t_end_ns > kMaxEventNs) return "t_start_ns or t_end_ns outside 1970-2116";
  if (e.t_end_ns < e.t_start_ns) return "t_end_ns is before t_start_ns (a clock step?)";
  return nullptr;
}

// How far an event may end before the one written before it in its file: the hook client
// writes each call as it ends, so ends go forward but for calls of other threads finishing
// together. Further back is a clock step or a corrupt time; so is an event that starts long
// after the one before ended (or a job paused that long). Either stretches the job's span over
// the time between, and its GPU seconds with it.
constexpr int64_t kEndsBackNs = 60LL * 1000000000;
constexpr int64_t kStartsAheadNs = 3600LL * 1000000000;

// Per file, its events' times against the line before (the first line read against the last
// stored, so that a line that is the first of a refresh is checked too): the first jump is said,
// with a count of the others, not refused (either line may be the right one).
struct TimeJumps {
  int64_t previous_end_ns = 0, previous_line = 0;  // previous_line 0: none known
  int64_t jumps = 0, first_line = 0, first_previous_line = 0, first_ns = 0;
  bool first_back = false;

  void add(int64_t start_ns, int64_t end_ns, int64_t line) {
    if (previous_line > 0) {
      const bool back = end_ns < previous_end_ns - kEndsBackNs;
      if ((back || start_ns > previous_end_ns + kStartsAheadNs) && jumps++ == 0) {
        first_line = line;
        first_previous_line = previous_line;
        first_back = back;
        first_ns = back ? previous_end_ns - end_ns : start_ns - previous_end_ns;
      }
    }
    previous_end_ns = end_ns;
    previous_line = line;
  }
};

std::string duration_text(int64_t ns) {
  const double s = static_cast<double>(ns) / 1e9;
  char text[48];
  if (s >= 2 * 86400) std::snprintf(text, sizeof text, "%.1f days", s / 86400);
  else if (s >= 2 * 3600) std::snprintf(text, sizeof text, "%.1f hours", s / 3600);
  else std::snprintf(text, sizeof text, "%.1f minutes", s / 60);
  return text;
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

// The hook client's record of a MIG device. A row already there (a user's, or an earlier
// record) is kept; one that names another GPU or GPU instance is said, with both: the device's
// samples come from the row's instance, which may be another job's.
void insert_mig_device(sqlite3* db, Statement& insert, const MigDevice& d, const std::string& file,
                       const std::function<void(const std::string&)>& warn) {
  insert.bind(":mig_uuid", d.mig_uuid);
  insert.bind(":gpu_uuid", d.gpu_uuid);
  insert.bind(":gpu_instance_id", d.gpu_instance_id);
  insert.bind(":profile", d.profile);
  insert.run();
  if (sqlite3_changes(db) > 0) return;
  Statement kept(db, "SELECT gpu_uuid, gpu_instance_id FROM main.pp_mig_devices WHERE mig_uuid = :mig_uuid");
  kept.bind(":mig_uuid", d.mig_uuid);
  if (!kept.step()) return;
  const std::string gpu = kept.column_text(0), instance = kept.column_text(1);
  if (gpu == d.gpu_uuid && instance == std::to_string(d.gpu_instance_id)) return;
  warn("pp_mig_devices says MIG device " + d.mig_uuid + " is GPU instance " + instance + " of " + gpu + ", and " +
       file + " records instance " + std::to_string(d.gpu_instance_id) + " of " + d.gpu_uuid +
       " (NVML, as its process saw it): the row is kept, so its samples are that instance's; delete the row if "
       "it is wrong (DELETE FROM pp_mig_devices WHERE mig_uuid = '" + d.mig_uuid +
       "') and refresh the events into a new database");
}

// What a file read before holds at each line pp_events still has, to tell a file read again
// from the start (truncated, its stored context damaged) whose lines are still the ones read
// then from one rewritten with other content under its first line. Each stored event is kept
// as a hash of what tells events apart, 16 bytes a line, so that a file of millions of events
// costs tens of MB here for the moment it is read again.
class StoredLines {
 public:
  // Whether the event at `line` of `file` is not what was read from that line: another event,
  // or an event where none was stored (the line was a job header, say) among the stored ones.
  // Before the first stored line, where retention removed events of the file, a line is taken
  // as read: its event may be one of those.
  bool rewritten(sqlite3* db, const std::string& file, int64_t line, const LayerEvent& e) {
    if (file != file_) load(db, file);
    const auto found = std::lower_bound(lines_.begin(), lines_.end(), std::make_pair(line, uint64_t{0}));
    if (found != lines_.end() && found->first == line)
      return found->second != hash_of(e.job_id, e.gpu_uuid, e.layer, e.forward, e.t_start_ns, e.t_end_ns);
    return !(dropped_ && (lines_.empty() || line < lines_.front().first));
  }

 private:
  static uint64_t hash_of(std::string_view job_id, std::string_view gpu_uuid, std::string_view layer, bool forward,
                          int64_t t_start_ns, int64_t t_end_ns) {
    uint64_t h = 14695981039346656037ull;  // FNV-1a over the fields, each text with its length
    const auto add = [&](const void* data, size_t size) {
      for (size_t i = 0; i < size; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
    };
    for (std::string_view text : {job_id, gpu_uuid, layer}) {
      const uint64_t size = text.size();
      add(&size, sizeof size);
      add(text.data(), text.size());
    }
    const unsigned char direction = forward ? 1 : 0;
    add(&direction, 1);
    add(&t_start_ns, sizeof t_start_ns);
    add(&t_end_ns, sizeof t_end_ns);
    return h;
  }

  void load(sqlite3* db, const std::string& file) {
    file_ = file;
    lines_.clear();
    Statement read(db, named_sql("import", "stored_lines"));
    read.bind(":source_file", file);
    while (read.step())
      lines_.emplace_back(read.column_int64(0), hash_of(read.column_text(1), read.column_text(2), read.column_text(3),
                                                        read.column_int64(4) != 0, read.column_int64(5),
                                                        read.column_int64(6)));
    std::sort(lines_.begin(), lines_.end());
    dropped_ = query_double(db, named_sql("import", "dropped_from_file"), {{":source_file", file}}, 0) > 0;
  }

  std::string file_;
  std::vector<std::pair<int64_t, uint64_t>> lines_;  // (line, hash), by line
  bool dropped_ = false;
};

}  // namespace

long long import_event_files(sqlite3* db, const std::string& path, bool final,
                             const std::function<void(const std::string&)>& warn) {
  EventFileScan::Positions resume;
  {
    Statement read(db, named_sql("import", "resume_positions"));
    while (read.step())
      resume[read.column_text(0)] = {read.column_int64(1), read.column_int64(2), read.column_int64(3),
                                     read.column_int64(4), read.column_text(5), read.column_text(6)};
  }
  LayerNames layers(db, "main");
  BlockWriter blocks(db, "main", layers);
  StoredEvents stored(layers);
  Statement insert_job_header(db, named_sql("import", "insert_job"));
  Statement insert_mig(db, named_sql("import", "insert_mig_device"));
  long long events_added = 0;
  EventFileScan scan(warn, db);
  // A file read again from the start (truncated, or its stored context damaged) has its first
  // lines in already: those up to its last position are passed over, while they are the events
  // stored from them. A replaced file's rows go under another name, and all its new lines are
  // read; so are those of a file read again whose line is not the event stored from it (the
  // file was rewritten under the same first line), from that line on.
  std::set<std::string> replaced;
  std::string writing;
  const auto keep_replaced = [db, &blocks, &replaced](const std::string& file) {
    blocks.flush();  // the rows read so far are renamed with the rest
    replaced.insert(file);
    return keep_replaced_rows(db, file);
  };
  scan.start(path, &resume, keep_replaced);
  StoredLines stored_lines;
  std::map<std::string, int64_t> lines_in;  // per file read before: the last line stored or read
  const auto imported_before = [&](const std::string& file, int64_t line) {
    const auto position = resume.find(file);
    if (position == resume.end() || replaced.count(file)) return false;
    auto [it, first] = lines_in.emplace(file, position->second.lines);
    if (first)
      it->second = std::max<int64_t>(it->second, static_cast<int64_t>(query_double(
                                                     db, named_sql("import", "last_line_stored"), {{":source_file", file}}, 0)));
    return line <= it->second;
  };
  std::map<std::string, std::pair<int64_t, int64_t>> time_grain;  // per file: events, those in whole ms
  std::pair<int64_t, int64_t>* grain = nullptr;                    // the file being written's
  std::map<std::string, TimeJumps> time_jumps;
  TimeJumps* jumps = nullptr;  // the file being written's
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
        if (imported_before(scan.source_file(), scan.line_number())) {
          if (!stored_lines.rewritten(db, scan.source_file(), scan.line_number(), event)) break;
          const std::string kept = keep_replaced(scan.source_file());
          warn(scan.source_file() + " was rewritten since it was last read (line " +
               std::to_string(scan.line_number()) + " is not the event read from it then); the rows read from it "
               "before are kept as source_file '" + kept + "', and its lines from " +
               std::to_string(scan.line_number()) + " on are read");
        }
        // Blocks never span files: each file's events are written before the next is read.
        if (scan.source_file() != writing || !grain) {
          blocks.flush();
          writing = scan.source_file();
          grain = &time_grain[writing];
          const auto [it, first_read] = time_jumps.try_emplace(writing);
          jumps = &it->second;
          if (first_read) {
            Statement last(db, named_sql("import", "last_block_of_file"));
            last.bind(":source_file", writing);
            if (last.step() && !last.column_null(0)) jumps->add(last.column_int64(0), last.column_int64(0), last.column_int64(1));
          }
        }
        stored.add(blocks, event, scan.source_file(), scan.line_number());
        ++events_added;
        ++grain->first;
        grain->second += event.t_start_ns % 1000000 == 0 && event.t_end_ns % 1000000 == 0;
        jumps->add(event.t_start_ns, event.t_end_ns, scan.line_number());
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
        insert_mig_device(db, insert_mig, mig_device, scan.source_file(), warn);
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
  blocks.flush();
  // A writer that kept only whole ms (not the hook client, which writes ns): its calls of a
  // fraction of a ms last 0 or 1 ms, which no estimate can undo. Said, not refused.
  for (const auto& [file, counts] : time_grain)
    if (counts.first >= kTimeGrainEvents && counts.second == counts.first)
      warn(file + ": the times of its " + std::to_string(counts.first) +
           " events read now are all whole milliseconds, where layer calls last fractions of one: their "
           "durations and the estimates of short layers (layer_estimates) are off by up to a ms per call; "
           "write t_start_ns and t_end_ns in ns, as the hook client does");
  for (const auto& [file, j] : time_jumps)
    if (j.jumps > 0)
      warn(file + " line " + std::to_string(j.first_line) + ": its event " +
           (j.first_back ? "ends " + duration_text(j.first_ns) + " before the one on line "
                         : "starts " + duration_text(j.first_ns) + " after the one on line ") +
           std::to_string(j.first_previous_line) + (j.first_back ? "" : " ended") +
           (j.jumps > 1 ? " (and " + std::to_string(j.jumps - 1) + " more such jumps in the lines read now)" : std::string()) +
           ": a clock step or a corrupt time" + (j.first_back ? "" : " (or a job paused that long)") +
           ", which stretches its job's span, and its GPU seconds, over the time between; if one of the two times "
           "is off, correct or remove its line and refresh into a new database");
  Statement save(db, named_sql("import", "save_position"));
  Statement save_state(db, named_sql("import", "save_state"));
  for (const auto& [file, position] : scan.ended()) {
    save.bind(":source_file", file);
    save.bind(":bytes", position.bytes);
    save.bind(":lines", position.lines);
    save.bind(":head_bytes", position.head_bytes);
    save.bind(":head_hash", position.head_hash);
    save.bind(":real_path", position.real_path);
    save.run();
    if (position.state.empty()) continue;
    save_state.bind(":source_file", file);
    save_state.bind(":state", position.state);
    save_state.run();
  }
  return events_added;
}

}  // namespace pp
