// Where pp_events keeps its rows (events_table.cpp is the table users see): blocks of events of
// one process, each a row of the shadow table SCHEMA.pp_events_blocks whose columns hold what
// its events share (job, host, GPU, file) and a BLOB the rest (events/event_block.hpp), and the
// layer names once each in SCHEMA.pp_events_layers. A row per event cost a refresh 0.2-1.6 us an
// event and each statement over it; a block is written, folded and dropped as one row.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/sql_values.hpp"
#include "core/statement.hpp"
#include "core/sqlite_api.hpp"
#include "events/event_block.hpp"
#include "events/event_fields.hpp"

namespace pp {

// A block's events start within this of each other, so that the blocks holding events that
// start in [lo, hi] are found by an index range on their first start from lo - kMaxBlockSpanNs.
constexpr int64_t kMaxBlockSpanNs = 1000000000;
// A block holds at most this many events (a second of one GPU at production rates).
constexpr size_t kMaxBlockEvents = 4096;
// Block ids are below this, so that an event's id (block id * kBlockIdScale + index) fits.
constexpr int64_t kMaxBlockId = int64_t{1} << 47;

// The shared columns of a block, in the order of kBlockKeyColumns.
enum BlockKeyColumn : int {
  kKeyJobId, kKeyHostName, kKeyIp, kKeyPod, kKeyNamespace, kKeyGpuUuid, kKeyGpu, kKeyRank, kKeyPid, kKeyCpuNum,
  kKeySourceFile, kBlockKeyColumnCount
};
constexpr const char* kBlockKeyColumns[kBlockKeyColumnCount] = {
    "job_id", "host_name", "ip", "pod", "namespace", "gpu_uuid", "gpu", "rank", "pid", "cpu_num", "source_file"};
using BlockKey = std::vector<SqlValue>;

// The shadow tables of pp_events, as pp_install_views names them.
constexpr const char* kEventStoreTables[] = {"pp_events_blocks", "pp_events_layers"};

// A schema name as an SQL identifier ("main").
std::string quoted_schema(const std::string& schema);

// The shadow tables of the pp_events table in `schema` (CREATE ... IF NOT EXISTS).
std::string event_store_ddl(const std::string& schema);

// One event to store: the shared columns and the block's own.
struct StoredEvent {
  BlockKey key;
  std::string layer;
  std::optional<std::string> layer_type;
  BlockEvent event;  // index and layer_id are the writer's
};

// The layer names of a schema's pp_events_layers, by id, read once and added to as needed.
class LayerNames {
 public:
  LayerNames(sqlite3* db, std::string schema) : db_(db), schema_(std::move(schema)) {}
  int64_t id_of(const std::string& layer, const std::optional<std::string>& layer_type);
  // (name, type) of an id; throws, naming the block, for an id the table does not have.
  const std::pair<std::string, std::optional<std::string>>& name_of(int64_t id, int64_t block);
  // The same without reading the table (any thread): throws for an id it does not have.
  const std::pair<std::string, std::optional<std::string>>& loaded_name_of(int64_t id, int64_t block) const;
  // Reads the table now (the connection's thread), for loaded_name_of.
  void reload() { load(); }
  // Reads the table again when next needed: ids added by a transaction that was rolled back
  // must not be handed out again.
  void forget() {
    loaded_ = false;
    largest_id_ = 0;
    ids_.clear();
    names_.clear();
  }

 private:
  void load();
  sqlite3* db_;
  std::string schema_;
  bool loaded_ = false;
  int64_t largest_id_ = 0;  // of the rows read so far
  std::map<std::pair<std::string, std::optional<std::string>>, int64_t> ids_;
  std::unordered_map<int64_t, std::pair<std::string, std::optional<std::string>>> names_;
};

// Gathers events into blocks: consecutive events of the same shared columns (and folded state)
// go into one block until it holds kMaxBlockEvents or would span more than kMaxBlockSpanNs.
// Each block's id is taken when it opens, so an event's id (block id * kBlockIdScale + index)
// is known when it is added; flush() writes the open blocks.
class BlockWriter {
 public:
  BlockWriter(sqlite3* db, std::string schema, LayerNames& layers);
  // Returns the event's id.
  int64_t add(StoredEvent e, bool folded);
  // The same for an event whose layer's id is known (event.layer_id); the key is copied only
  // when the event opens a block. same_key: the caller knows the key is the last add's (the
  // keys are then not compared).
  int64_t add(const BlockKey& key, const BlockEvent& event, bool folded, bool same_key = false);
  void flush();
  // Forgets what is not flushed (a rolled back transaction) and the ids taken.
  void discard();
  bool empty() const { return open_.empty(); }

 private:
  struct OpenBlock {
    int64_t id;
    BlockKey key;
    bool folded;
    std::vector<BlockEvent> events;
    int64_t first_start, last_start;
  };
  void write(const OpenBlock& block);
  // Written blocks hand their event vector to the next block that opens: grown again from empty,
  // each block's vector would be reallocated and copied a dozen times (an import adds millions).
  void keep_room(std::vector<BlockEvent>&& events);
  sqlite3* db_;
  std::string schema_;
  LayerNames& layers_;
  int64_t next_id_ = 0;  // 0: read max(id) + 1 when a block opens
  std::vector<OpenBlock> open_;
  std::vector<BlockEvent> room_;  // empty, with the capacity of the last block written
  int64_t last_block_ = 0;  // the block the last add went into (0: none)
  // The INSERT of write(), prepared once for the blocks until the next flush() or discard()
  // (not kept beyond: a statement left prepared would keep sqlite3_close() from closing).
  std::unique_ptr<Statement> insert_;
};

// What a reader of the engine wants of one GPU's events (the pp_events table reads the same
// blocks for its users): the blocks that can hold them are found by one index range and
// decoded without SQLite's work per row.
struct EventScan {
  std::string gpu_uuid;
  std::optional<int64_t> start_from, start_to;  // t_start_ns in [start_from, start_to]
  enum Folded { kAny, kUnfolded, kFolded } folded = kAny;
};

// One event of a scan, with its block's columns.
struct ScannedEvent {
  const BlockEvent& event;
  int64_t id;
  std::string_view job_id;
  bool folded;
  const std::pair<std::string, std::optional<std::string>>& layer;  // (layer, layer_type)
};

// Calls visit for each event of `scan`, block by block (not in t_start_ns order), after the
// rows that pp_events' statements buffered are written (flush_event_tables).
void scan_events(sqlite3* db, const std::string& schema, const EventScan& scan, LayerNames& layers,
                 const std::function<void(const ScannedEvent&)>& visit);

// A scan in two parts, so that decoding can run off the connection's thread (sql_relay.hpp):
// fetch_event_blocks copies the rows of the blocks (SQL), visit_event_blocks decodes them and
// calls visit as scan_events does, with names from loaded_name_of (no SQL).
struct FetchedBlock {
  std::string job_id;
  std::optional<int64_t> folded_through_ns;
  int64_t id, events, first_start_ns, last_start_ns;
  std::string data;
};
std::vector<FetchedBlock> fetch_event_blocks(sqlite3* db, const std::string& schema, const EventScan& scan);
void visit_event_blocks(const std::vector<FetchedBlock>& blocks, const EventScan& scan, const LayerNames& layers,
                        const std::function<void(const ScannedEvent&)>& visit);
// Room for the events the blocks say they hold, each block counted as at most kMaxBlockEvents:
// what a caller reserves before decoding them, so that a damaged row's count is reported by the
// decode that reads it, not met first as an allocation failure.
size_t held_events(const std::vector<FetchedBlock>& blocks);

// Each job's span of the unfolded events of a GPU whose times can be a call (in [0,
// kMaxEventNs], ending when or after they start), what the align step adds to the spans
// pp_gpu_spans holds, read where it can be from the blocks' rows: first_ns and last_ns exactly;
// events and longest_ns counted from the blocks, longest_ns an upper bound (a block read from its
// row counts its span as its longest event).
struct JobSpan {
  std::string job_id;
  int64_t first_ns, last_ns, events, longest_ns;
};
std::vector<JobSpan> unfolded_span_bounds(sqlite3* db, const std::string& uuid);

// The newest start of a GPU's events whose times can be a call: the blocks that start within
// kMaxBlockSpanNs of the newest, then older ones while none is found.
std::optional<int64_t> newest_event_start(sqlite3* db, const std::string& uuid);

// The SQL conditions on pp_events_blocks for events starting in [from, to] (either may be
// absent), with their parameters: blocks hold events starting within kMaxBlockSpanNs.
std::string start_range_sql(std::optional<int64_t> from, std::optional<int64_t> to, const std::string& prefix,
                            SqlParameters& parameters);

// What a block's row says of its events, checked against them when they are decoded (a
// database file may hold anything): a block whose row and events disagree, or whose events
// start more than kMaxBlockSpanNs apart, is damaged, since the range reads would miss rows.
struct BlockRow {
  int64_t id, events, first_start_ns, last_start_ns;
  std::string_view data;
};
// The columns of pp_events_blocks a BlockRow is read from, in its order.
constexpr const char* kBlockRowColumns = "id, events, first_start_ns, last_start_ns, data";
BlockRow block_row(const Statement& row, int first_column);
// Decodes a block's events into `out` (cleared), or throws "block ID of pp_events_blocks is
// damaged (why)".
void decode_block_row(const BlockRow& row, std::vector<BlockEvent>& out);

// Writes the rows of pp_events that its statements buffered (events_table.cpp) before the
// engine reads the blocks of `db` directly.
void flush_event_tables(sqlite3* db);

// A block row as read, its events decoded.
struct StoredBlock {
  int64_t id;
  BlockKey key;
  std::optional<int64_t> folded_through_ns;
  std::vector<BlockEvent> events;
};

// Writes `block` back after events were removed from it (deleting it when none are left).
void rewrite_block(sqlite3* db, const std::string& schema, const StoredBlock& block);
// Reads block `id` (false: there is none). Throws naming the block for a damaged one.
bool read_block(sqlite3* db, const std::string& schema, int64_t id, StoredBlock& out);

}  // namespace pp
