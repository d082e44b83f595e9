// The records of one event file in either format: JSON Lines (every line stands alone) or the
// compact format (line 1 says so; an event line needs the job header, definitions and block line
// before it). The decoder keeps that context, and can save it (state()) where a reader stops and
// restore it where a later reader resumes, so pp_refresh reads on from a stored position without
// reading the file from the start.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "events/compact_line.hpp"
#include "events/event_line.hpp"

namespace pp {

class EventDecoder {
 public:
  // A new file, JSON Lines until its first line says otherwise; `file` names it in errors.
  void reset(const std::string& file);

  // Decodes the line numbered `line_number` (1-based; without its '\n'). `complete` is false for
  // a last line without '\n': in a compact file such a line is never decoded (a torn "12 f0 15"
  // would read as a whole event), it is Malformed ("incomplete line") and changes nothing.
  // Malformed lines leave the context as it was, except a malformed line that is not an event
  // (it may have been a block line): the events after it are Malformed until the next block line
  // (their times would be wrong). A definition may skip ids (of damaged definition lines): the
  // events of a skipped id are Malformed. Throws pp::Error
  // naming the file when line 1 is a format line of a format or version this reader does not know.
  LineKind decode(std::string_view line, int64_t line_number, bool complete, LayerEvent& event,
                  std::string& problem);

  bool compact() const { return compact_; }
  // The context after the lines decoded so far, as compact lines (format line, job header,
  // definitions, last block line); empty for JSON Lines.
  std::string state() const;
  // Continues a compact file after the lines that state() described. False, with `problem`, when
  // the state is not one state() makes (the caller then reads the file from the start).
  bool restore(std::string_view state, std::string& problem);

 private:
  LineKind decode_compact(std::string_view line, LayerEvent& event, std::string& problem);
  void take_job_header(std::string_view line);

  struct Device {
    std::string uuid;
    Nullable<int64_t> gpu;
    bool defined = false;  // (false: an id skipped by a later definition)
    uint64_t stamp = 0;    // LayerEvent::context_stamp of its events under the job header of job_stamp
    uint64_t job_stamp = 0;
  };
  struct Layer {
    std::string name, type;
    bool defined = false;
    uint64_t stamp = 0;  // LayerEvent::layer_stamp
  };

  std::string file_;
  bool compact_ = false;
  // From the job header: the fields of every event of the file, or why they cannot be had.
  LayerEvent job_;
  uint64_t job_stamp_ = 0;  // a new one with each job header
  bool has_job_ = false;
  std::string job_problem_;
  std::vector<Device> devices_;
  std::vector<Layer> layers_;
  bool has_block_ = false;
  bool block_damaged_ = false;
  int64_t base_ns_ = 0, epoch_ = 0, batch_ = 0;
  // The lines state() is made of.
  std::string header_line_, block_line_;
  std::vector<std::string> device_lines_, layer_lines_;  // the last definition of each id
  CompactRecord record_;
};

}  // namespace pp
