#include "events/event_decoder.hpp"

#include <atomic>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"

namespace pp {
namespace {

// The job fields of a compact file's events, from its header line: null or absent text is
// NULL (as outside Kubernetes), the integers and cpu_num must be there.
bool job_fields(std::string_view line, LayerEvent& job, std::string& problem) {
  const nlohmann::json doc = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (!doc.is_object()) return problem = "invalid JSON", false;
  const auto text = [&](const char* key, std::string& out, bool* null) {
    const auto it = doc.find(key);
    if ((it == doc.end() || it->is_null()) && null) return *null = true, true;
    if (it == doc.end() || !it->is_string()) return problem = std::string("no text field '") + key + "'", false;
    if (null) *null = false;
    out = it->get<std::string>();
    return true;
  };
  const auto integer = [&](const char* key, int64_t& out) {
    const auto it = doc.find(key);
    if (it == doc.end() || !it->is_number_integer() ||
        (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t{INT64_MAX}))
      return problem = std::string("no integer field '") + key + "'", false;
    out = it->get<int64_t>();
    return true;
  };
  const auto cpu_num = doc.find("cpu_num");
  if (cpu_num == doc.end() || !cpu_num->is_number()) return problem = "no number field 'cpu_num'", false;
  job.cpu_num = cpu_num->get<double>();
  if (!text("job_id", job.job_id, nullptr)) return false;
  if (job.job_id.empty()) return problem = "field 'job_id' is empty", false;
  return text("host_name", job.host_name.value, &job.host_name.null) &&
         text("ip", job.ip.value, &job.ip.null) && text("pod", job.pod.value, &job.pod.null) &&
         text("namespace", job.namespace_.value, &job.namespace_.null) && integer("rank", job.rank) &&
         integer("local_rank", job.local_rank) && integer("world_size", job.world_size) && integer("pid", job.pid);
}

// How many ids a definition may skip: those of definition lines that were damaged (their
// events are then malformed, "not defined"), never so many that one line could make the reader
// allocate without bound.
constexpr int64_t kMaxSkippedIds = 1024;

// Whether a definition of `id` may be taken: a known id (defined again), the next one, or one
// that skips at most kMaxSkippedIds (the skipped ids stay undefined). Grows the tables to hold it.
template <class Table>
bool take_id(Table& table, std::vector<std::string>& lines, int64_t id, const char* what, std::string& problem) {
  const auto next = static_cast<int64_t>(table.size());
  if (id >= kMaxCompactIds || id > next + kMaxSkippedIds) {
    problem = std::string(what) + " id " + std::to_string(id) + " skips more than " + std::to_string(kMaxSkippedIds) +
              " ids (the next new one is " + std::to_string(next) + ")";
    return false;
  }
  if (id >= next) {
    table.resize(static_cast<size_t>(id) + 1);
    lines.resize(static_cast<size_t>(id) + 1);
  }
  return true;
}

// A stamp no definition of this process has had (LayerEvent::context_stamp, layer_stamp).
uint64_t new_stamp() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

}  // namespace

void EventDecoder::reset(const std::string& file) {
  file_ = file;
  compact_ = has_job_ = has_block_ = block_damaged_ = false;
  job_problem_.clear();
  devices_.clear();
  layers_.clear();
  header_line_.clear();
  device_lines_.clear();
  layer_lines_.clear();
  block_line_.clear();
}

LineKind EventDecoder::decode(std::string_view line, int64_t line_number, bool complete, LayerEvent& event,
                              std::string& problem) {
  if (line_number == 1 && is_format_line(line)) {
    if (!complete) return problem = "incomplete format line", LineKind::Malformed;
    std::string what;
    if (!is_known_format(line, what))
      throw Error(file_ + ": event file format '" + what + "' is not one this reader knows (it reads JSON Lines and '" +
                  std::string(kCompactFormat) + " " + std::to_string(kCompactVersion) +
                  "'); was it written by a newer precisionprobe?");
    compact_ = true;
    return LineKind::Blank;
  }
  if (!compact_) {
    event.context_stamp = event.layer_stamp = 0;  // the parse may change any field
    return parse_event_line(line, event, problem);
  }
  if (!complete) return problem = "incomplete last line (no newline)", LineKind::Malformed;
  return decode_compact(line, event, problem);
}

LineKind EventDecoder::decode_compact(std::string_view line, LayerEvent& event, std::string& problem) {
  // JSON lines (the job header, also after blanks or a BOM) and blank lines read as in JSON Lines;
  // any other line starting with a blank is no record (it may have been a damaged block line).
  const char first = line.empty() ? ' ' : line[0];
  std::string_view rest = line;
  while (!rest.empty() && (rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r')) rest.remove_prefix(1);
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);
  while (!rest.empty() && (rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r')) rest.remove_prefix(1);
  if (rest.empty() || rest[0] == '{') {
    event.context_stamp = event.layer_stamp = 0;  // the parse may change any field
    const LineKind kind = parse_event_line(line, event, problem);
    if (kind == LineKind::JobHeader) take_job_header(line);
    return kind;
  }
  switch (parse_compact_line(line, record_, problem)) {
    case CompactKind::Event: {
      const CompactRecord& r = record_;
      if (!has_job_) return problem = job_problem_.empty() ? "an event before the job header" : job_problem_, LineKind::Malformed;
      if (!has_block_)
        return problem = block_damaged_ ? "an event after a malformed line that may have been its block line"
                                        : "an event before any block line",
               LineKind::Malformed;
      if (r.layer >= static_cast<int64_t>(layers_.size()) || !layers_[static_cast<size_t>(r.layer)].defined)
        return problem = "layer id " + std::to_string(r.layer) + " is not defined", LineKind::Malformed;
      if (r.device >= static_cast<int64_t>(devices_.size()) || !devices_[static_cast<size_t>(r.device)].defined)
        return problem = "device id " + std::to_string(r.device) + " is not defined", LineKind::Malformed;
      Device& device = devices_[static_cast<size_t>(r.device)];
      const Layer& layer = layers_[static_cast<size_t>(r.layer)];
      // A definition with an empty name keeps its id (later ids stay in order, a redefinition
      // replaces what it held), but its events would belong to no GPU or layer.
      if (device.uuid.empty())
        return problem = "device id " + std::to_string(r.device) + " has an empty GPU_UUID", LineKind::Malformed;
      if (layer.name.empty())
        return problem = "layer id " + std::to_string(r.layer) + " has an empty NAME", LineKind::Malformed;
      int64_t start = 0, end = 0;
      if (__builtin_add_overflow(base_ns_, r.start, &start) || __builtin_add_overflow(start, r.duration, &end))
        return problem = "field 't_start_ns' or 't_end_ns' is out of range", LineKind::Malformed;
      if (device.job_stamp != job_stamp_) {
        device.stamp = new_stamp();
        device.job_stamp = job_stamp_;
      }
      // The texts are copied only where they change: an event of the context (the layer) the
      // last one decoded into `event` had keeps them.
      if (event.context_stamp != device.stamp) {
        event.job_id = job_.job_id;
        event.host_name = job_.host_name;
        event.ip = job_.ip;
        event.pod = job_.pod;
        event.namespace_ = job_.namespace_;
        event.gpu_uuid = device.uuid;
        event.gpu = device.gpu;
        event.rank = job_.rank;
        event.local_rank = job_.local_rank;
        event.world_size = job_.world_size;
        event.pid = job_.pid;
        event.cpu_num = job_.cpu_num;
        event.context_stamp = device.stamp;
      }
      if (event.layer_stamp != layer.stamp) {
        event.layer = layer.name;
        event.layer_type = layer.type;
        event.layer_stamp = layer.stamp;
      }
      event.epoch = epoch_;
      event.batch = batch_;
      event.forward = r.forward;
      event.t_start_ns = start;
      event.t_end_ns = end;
      return LineKind::Event;
    }
    case CompactKind::Block:
      base_ns_ = record_.base_ns;
      epoch_ = record_.epoch;
      batch_ = record_.batch;
      has_block_ = true;
      block_damaged_ = false;
      block_line_.assign(line.data(), line.size());
      return LineKind::Blank;
    case CompactKind::Device:
      if (!take_id(devices_, device_lines_, record_.id, "device", problem)) return LineKind::Malformed;
      devices_[static_cast<size_t>(record_.id)] = Device{record_.second, record_.gpu, true, 0, 0};
      device_lines_[static_cast<size_t>(record_.id)].assign(line.data(), line.size());  // a redefinition replaces it
      return LineKind::Blank;
    case CompactKind::Layer:
      if (!take_id(layers_, layer_lines_, record_.id, "layer", problem)) return LineKind::Malformed;
      layers_[static_cast<size_t>(record_.id)] = Layer{record_.first, record_.second, true, new_stamp()};
      layer_lines_[static_cast<size_t>(record_.id)].assign(line.data(), line.size());
      return LineKind::Blank;
    case CompactKind::Malformed:
      // A line that is not an event may have been a block line (a damaged '@'): the events up to
      // the next block line cannot be placed in time, nor given their batch.
      if (first < '0' || first > '9') {
        has_block_ = false;
        block_damaged_ = true;
      }
      return LineKind::Malformed;
  }
  return LineKind::Malformed;
}

void EventDecoder::take_job_header(std::string_view line) {
  header_line_.assign(line.data(), line.size());
  std::string why;
  has_job_ = job_fields(line, job_, why);
  job_stamp_ = new_stamp();
  job_problem_ = has_job_ ? std::string() : "the job header cannot give the events their job fields (" + why + ")";
}

std::string EventDecoder::state() const {
  if (!compact_) return {};
  std::string out = std::string(kFormatLinePrefix) + std::string(kCompactFormat) + " " + std::to_string(kCompactVersion) + "\n";
  if (!header_line_.empty()) out += header_line_ + "\n";
  for (const std::string& line : device_lines_) out += line + "\n";  // (an undefined id's is empty)
  for (const std::string& line : layer_lines_) out += line + "\n";
  if (has_block_) out += block_line_ + "\n";
  return out;
}

bool EventDecoder::restore(std::string_view state, std::string& problem) {
  reset(file_);
  LayerEvent scratch;
  int64_t number = 0;
  while (!state.empty()) {
    const size_t newline = state.find('\n');
    if (newline == std::string_view::npos) return problem = "the saved state does not end a line", false;
    const std::string_view line = state.substr(0, newline);
    state.remove_prefix(newline + 1);
    ++number;
    if (number == 1 && !is_format_line(line)) return problem = "the saved state is not of a compact file", false;
    const LineKind kind = decode(line, number, true, scratch, problem);
    if (kind == LineKind::Malformed || kind == LineKind::Event) {
      if (kind == LineKind::Event) problem = "an event";
      problem = "the saved state has a line it should not (" + problem + ")";
      return false;
    }
  }
  if (!compact_) return problem = "the saved state is empty", false;
  return true;
}

}  // namespace pp
