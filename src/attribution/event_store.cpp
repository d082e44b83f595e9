#include "attribution/event_store.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "core/statement.hpp"

namespace pp {
namespace {

// Events whose times cannot be a layer's call (an earlier version imported such, and users may
// insert them): the fold leaves them out.
int64_t impossible_events(const std::vector<BlockEvent>& events) {
  int64_t n = 0;
  for (const BlockEvent& e : events) n += e.t_start_ns < 0 || e.t_end_ns < e.t_start_ns || e.t_end_ns > kMaxEventNs;
  return n;
}

void bind_value(Statement& s, int index, const SqlValue& v) { s.bind(index, v); }

SqlValue column_value(const Statement& s, int column) {
  switch (s.column_type(column)) {
    case SQLITE_INTEGER: return s.column_int64(column);
    case SQLITE_FLOAT: return s.column_double(column);
    case SQLITE_TEXT: return s.column_text(column);
    case SQLITE_BLOB: return SqlBlob{std::string(s.column_blob(column))};
    default: return std::monostate{};
  }
}

}  // namespace

std::string quoted_schema(const std::string& schema) {
  std::string out = "\"";
  for (char c : schema) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string event_store_ddl(const std::string& schema) {
  const std::string s = quoted_schema(schema);
  return "CREATE TABLE IF NOT EXISTS " + s +
         ".pp_events_layers(id INTEGER PRIMARY KEY, layer TEXT NOT NULL, layer_type TEXT);"
         "CREATE UNIQUE INDEX IF NOT EXISTS " + s + ".pp_events_layers_by_name ON pp_events_layers(layer, layer_type);"
         "CREATE TABLE IF NOT EXISTS " + s + ".pp_events_blocks("
         "id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, host_name TEXT, ip TEXT, pod TEXT, namespace TEXT, "
         "gpu_uuid TEXT NOT NULL, gpu INTEGER, rank INTEGER, pid INTEGER, cpu_num REAL, source_file TEXT NOT NULL, "
         "first_line INTEGER NOT NULL, last_line INTEGER NOT NULL, "
         "events INTEGER NOT NULL, first_start_ns INTEGER NOT NULL, last_start_ns INTEGER NOT NULL, "
         "last_end_ns INTEGER NOT NULL, impossible INTEGER NOT NULL, folded_through_ns INTEGER, data BLOB NOT NULL);"
         "CREATE INDEX IF NOT EXISTS " + s + ".pp_events_blocks_by_gpu_time ON pp_events_blocks(gpu_uuid, first_start_ns);"
         "CREATE INDEX IF NOT EXISTS " + s + ".pp_events_blocks_unfolded ON pp_events_blocks(gpu_uuid, first_start_ns) "
         "WHERE folded_through_ns IS NULL OR folded_through_ns < last_start_ns;"
         "CREATE INDEX IF NOT EXISTS " + s + ".pp_events_blocks_impossible ON pp_events_blocks(gpu_uuid) WHERE impossible > 0;"
         "CREATE INDEX IF NOT EXISTS " + s + ".pp_events_blocks_by_file ON pp_events_blocks(source_file, last_line);";
}

// Reads the rows added since the last read: ids only grow (nothing deletes a layer; a rolled
// back insert is forgotten), so a model's thousands of new layers cost a lookup each, not a
// read of every layer each.
void LayerNames::load() {
  Statement read(db_, "SELECT id, layer, layer_type FROM " + quoted_schema(schema_) +
                          ".pp_events_layers WHERE id > :after ORDER BY id");
  read.bind(":after", largest_id_);
  while (read.step()) {
    std::pair<std::string, std::optional<std::string>> name{
        read.column_text(1), read.column_null(2) ? std::nullopt : std::optional<std::string>(read.column_text(2))};
    const int64_t id = read.column_int64(0);
    ids_[name] = id;
    names_[id] = std::move(name);
    largest_id_ = std::max(largest_id_, id);
  }
  loaded_ = true;
}

int64_t LayerNames::id_of(const std::string& layer, const std::optional<std::string>& layer_type) {
  if (!loaded_) load();
  const auto key = std::make_pair(layer, layer_type);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  load();  // another writer of this connection may have added it
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  Statement insert(db_, "INSERT INTO " + quoted_schema(schema_) + ".pp_events_layers(layer, layer_type) VALUES (?, ?) RETURNING id");
  insert.bind(1, layer);
  insert.bind(2, layer_type);
  if (!insert.step()) throw Error("could not add layer " + layer);
  const int64_t id = insert.column_int64(0);
  while (insert.step()) {
  }
  ids_[key] = id;
  names_[id] = key;
  largest_id_ = std::max(largest_id_, id);
  return id;
}

const std::pair<std::string, std::optional<std::string>>& LayerNames::name_of(int64_t id, int64_t block) {
  if (!loaded_) load();
  if (auto it = names_.find(id); it != names_.end()) return it->second;
  load();  // another writer may have added it
  return loaded_name_of(id, block);
}

const std::pair<std::string, std::optional<std::string>>& LayerNames::loaded_name_of(int64_t id, int64_t block) const {
  const auto it = names_.find(id);
  if (it == names_.end())
    throw Error("block " + std::to_string(block) + " of pp_events_blocks names layer id " + std::to_string(id) +
                ", which pp_events_layers does not have");
  return it->second;
}

BlockWriter::BlockWriter(sqlite3* db, std::string schema, LayerNames& layers)
    : db_(db), schema_(std::move(schema)), layers_(layers) {}

int64_t BlockWriter::add(StoredEvent e, bool folded) {
  e.event.layer_id = layers_.id_of(e.layer, e.layer_type);
  return add(e.key, e.event, folded);
}

int64_t BlockWriter::add(const BlockKey& key, const BlockEvent& event, bool folded, bool same_key) {
  OpenBlock* block = nullptr;
  // The newest open block of these shared columns (events of one process come one after another).
  for (auto it = open_.rbegin(); it != open_.rend(); ++it)
    if (it->folded == folded && (same_key ? it->id == last_block_ : it->key == key)) {
      block = &*it;
      break;
    }
  if (same_key && !block)  // (the last add's block was written: look for another of the key)
    for (auto it = open_.rbegin(); it != open_.rend(); ++it)
      if (it->folded == folded && it->key == key) {
        block = &*it;
        break;
      }
  const int64_t start = event.t_start_ns;
  if (block && (block->events.size() >= kMaxBlockEvents ||
                static_cast<uint64_t>(std::max(block->last_start, start)) - static_cast<uint64_t>(std::min(block->first_start, start)) >
                    static_cast<uint64_t>(kMaxBlockSpanNs))) {
    write(*block);
    keep_room(std::move(block->events));
    open_.erase(open_.begin() + (block - open_.data()));
    block = nullptr;
  }
  if (!block) {
    if (next_id_ == 0) {
      Statement last(db_, "SELECT coalesce(max(id), 0) FROM " + quoted_schema(schema_) + ".pp_events_blocks");
      next_id_ = last.step() ? last.column_int64(0) + 1 : 1;
      while (last.step()) {
      }
    }
    if (next_id_ < 1 || next_id_ >= kMaxBlockId)
      throw Error("pp_events_blocks has no block id left (ids go up to 2^47; the largest is " + std::to_string(next_id_ - 1) + ")");
    open_.push_back({next_id_++, key, folded, std::move(room_), start, start});
    room_ = {};
    block = &open_.back();
  }
  const int64_t index = static_cast<int64_t>(block->events.size());
  block->first_start = std::min(block->first_start, start);
  block->last_start = std::max(block->last_start, start);
  block->events.push_back(event);
  block->events.back().index = index;
  last_block_ = block->id;
  return block->id * kBlockIdScale + index;
}

void BlockWriter::write(const OpenBlock& block) {
  int64_t last_end = INT64_MIN, first_line = INT64_MAX, last_line = INT64_MIN;
  for (const BlockEvent& e : block.events) {
    last_end = std::max(last_end, e.t_end_ns);
    first_line = std::min(first_line, e.line);
    last_line = std::max(last_line, e.line);
  }
  if (!insert_) {
    std::string sql = "INSERT INTO " + quoted_schema(schema_) + ".pp_events_blocks(id";
    for (const char* c : kBlockKeyColumns) sql += std::string(", ") + c;
    sql += ", first_line, last_line, events, first_start_ns, last_start_ns, last_end_ns, impossible, folded_through_ns, "
           "data) VALUES (?";
    for (int i = 0; i < kBlockKeyColumnCount; ++i) sql += ", ?";
    sql += ", ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    insert_ = std::make_unique<Statement>(db_, sql);
  }
  Statement& insert = *insert_;
  int p = 1;
  insert.bind(p++, block.id);
  for (const SqlValue& v : block.key) bind_value(insert, p++, v);
  insert.bind(p++, first_line);
  insert.bind(p++, last_line);
  insert.bind(p++, static_cast<int64_t>(block.events.size()));
  insert.bind(p++, block.first_start);
  insert.bind(p++, block.last_start);
  insert.bind(p++, last_end);
  insert.bind(p++, impossible_events(block.events));
  // Not folded yet: a point before its first start, not NULL, so that the fold's mark_folded
  // changes an integer of the same size (real times take 8 bytes): SQLite then overwrites the
  // row in place, its event bytes' overflow pages untouched, instead of writing it all again.
  insert.bind(p++, block.folded                   ? std::optional<int64_t>(block.last_start)
                   : block.first_start > INT64_MIN ? std::optional<int64_t>(block.first_start - 1)
                                                   : std::nullopt);
  insert.bind(p++, SqlValue(SqlBlob{encode_block(block.events)}));
  insert.run();
}

void BlockWriter::keep_room(std::vector<BlockEvent>&& events) {
  if (events.capacity() <= room_.capacity()) return;
  room_ = std::move(events);
  room_.clear();
}

void BlockWriter::flush() {
  // Each block leaves the list once written, so that a failed write is not written twice.
  while (!open_.empty()) {
    write(open_.front());
    keep_room(std::move(open_.front().events));
    open_.erase(open_.begin());
  }
  insert_.reset();
  next_id_ = 0;  // another writer may add blocks before this one opens its next
  last_block_ = 0;
}

void BlockWriter::discard() {
  insert_.reset();
  open_.clear();
  next_id_ = 0;
  last_block_ = 0;
}

BlockRow block_row(const Statement& row, int first_column) {
  return {row.column_int64(first_column), row.column_int64(first_column + 1), row.column_int64(first_column + 2),
          row.column_int64(first_column + 3), row.column_blob(first_column + 4)};
}

void decode_block_row(const BlockRow& row, std::vector<BlockEvent>& out) {
  const auto damaged = [&](const std::string& problem) {
    return Error("block " + std::to_string(row.id) + " of pp_events_blocks is damaged (" + problem +
                 "): its events cannot be read");
  };
  if (row.id < 1 || row.id >= kMaxBlockId) throw damaged("its id is not in 1 .. 2^47 - 1");
  out.clear();
  std::string problem;
  if (!decode_block(row.data, out, problem)) throw damaged(problem);
  if (out.empty() || out.size() > kMaxBlockEvents || static_cast<int64_t>(out.size()) != row.events)
    throw damaged("it holds " + std::to_string(out.size()) + " events where its row says " + std::to_string(row.events));
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const BlockEvent& e : out) {
    first = std::min(first, e.t_start_ns);
    last = std::max(last, e.t_start_ns);
  }
  if (first != row.first_start_ns || last != row.last_start_ns)
    throw damaged("its events start from " + std::to_string(first) + " to " + std::to_string(last) +
                  " ns where its row says " + std::to_string(row.first_start_ns) + " to " + std::to_string(row.last_start_ns));
  if (static_cast<uint64_t>(last) - static_cast<uint64_t>(first) > static_cast<uint64_t>(kMaxBlockSpanNs))
    throw damaged("its events start more than a second apart");
}

bool read_block(sqlite3* db, const std::string& schema, int64_t id, StoredBlock& out) {
  std::string sql = "SELECT folded_through_ns, " + std::string(kBlockRowColumns);
  for (const char* c : kBlockKeyColumns) sql += std::string(", ") + c;
  Statement read(db, sql + " FROM " + quoted_schema(schema) + ".pp_events_blocks WHERE id = ?");
  read.bind(1, id);
  if (!read.step()) return false;
  out.id = id;
  out.folded_through_ns = read.column_null(0) ? std::nullopt : std::optional<int64_t>(read.column_int64(0));
  decode_block_row(block_row(read, 1), out.events);
  out.key.clear();
  for (int i = 0; i < kBlockKeyColumnCount; ++i) out.key.push_back(column_value(read, 6 + i));
  while (read.step()) {
  }
  return true;
}

void rewrite_block(sqlite3* db, const std::string& schema, const StoredBlock& block) {
  if (block.events.empty()) {
    run_script(db, "DELETE FROM " + quoted_schema(schema) + ".pp_events_blocks WHERE id = :id", {{":id", block.id}});
    return;
  }
  int64_t first = INT64_MAX, last = INT64_MIN, last_end = INT64_MIN, first_line = INT64_MAX, last_line = INT64_MIN;
  for (const BlockEvent& e : block.events) {
    first_line = std::min(first_line, e.line);
    last_line = std::max(last_line, e.line);
    first = std::min(first, e.t_start_ns);
    last = std::max(last, e.t_start_ns);
    last_end = std::max(last_end, e.t_end_ns);
  }
  Statement update(db, "UPDATE " + quoted_schema(schema) +
                           ".pp_events_blocks SET events = ?, first_start_ns = ?, last_start_ns = ?, last_end_ns = ?, "
                           "data = ?, first_line = ?, last_line = ?, impossible = ? WHERE id = ?");
  update.bind(1, static_cast<int64_t>(block.events.size()));
  update.bind(2, first);
  update.bind(3, last);
  update.bind(4, last_end);
  update.bind(5, SqlValue(SqlBlob{encode_block(block.events)}));
  update.bind(6, first_line);
  update.bind(7, last_line);
  update.bind(8, impossible_events(block.events));
  update.bind(9, block.id);
  update.run();
}

std::string start_range_sql(std::optional<int64_t> from, std::optional<int64_t> to, const std::string& prefix,
                            SqlParameters& parameters) {
  std::string sql;
  if (from) {
    sql += " AND last_start_ns >= :" + prefix + "from AND first_start_ns >= :" + prefix + "from_block";
    parameters.emplace_back(":" + prefix + "from", *from);
    parameters.emplace_back(":" + prefix + "from_block", *from > INT64_MIN + kMaxBlockSpanNs ? *from - kMaxBlockSpanNs : INT64_MIN);
  }
  if (to) {
    sql += " AND first_start_ns <= :" + prefix + "to";
    parameters.emplace_back(":" + prefix + "to", *to);
  }
  return sql;
}

namespace {

// The SQL of a scan and its parameters: each block row's job id, fold point, then the BlockRow
// columns.
std::pair<std::string, SqlParameters> scan_sql(const std::string& schema, const EventScan& scan) {
  SqlParameters parameters{{":gpu", scan.gpu_uuid}};
  std::string sql = "SELECT job_id, folded_through_ns, " + std::string(kBlockRowColumns) + " FROM " + quoted_schema(schema) +
                    ".pp_events_blocks WHERE gpu_uuid = :gpu" + start_range_sql(scan.start_from, scan.start_to, "", parameters);
  // (Blocks in index order, so that the same database gives its events in the same order.)
  if (scan.folded == EventScan::kUnfolded) sql += " AND (folded_through_ns IS NULL OR folded_through_ns < last_start_ns)";
  if (scan.folded == EventScan::kFolded) sql += " AND folded_through_ns >= first_start_ns";
  return {std::move(sql), std::move(parameters)};
}

// Decodes one block of a scan and calls visit for each of its events the scan wants.
template <typename NameOf>
void visit_block(const BlockRow& row, std::string_view job_id, std::optional<int64_t> folded_through,
                 const EventScan& scan, NameOf&& name_of, std::vector<BlockEvent>& events,
                 const std::function<void(const ScannedEvent&)>& visit) {
  decode_block_row(row, events);
  for (const BlockEvent& e : events) {
    if (scan.start_from && e.t_start_ns < *scan.start_from) continue;
    if (scan.start_to && e.t_start_ns > *scan.start_to) continue;
    const bool folded = folded_through && e.t_start_ns <= *folded_through;
    if ((scan.folded == EventScan::kUnfolded && folded) || (scan.folded == EventScan::kFolded && !folded)) continue;
    visit({e, row.id * kBlockIdScale + e.index, job_id, folded, name_of(e.layer_id, row.id)});
  }
}

}  // namespace

void scan_events(sqlite3* db, const std::string& schema, const EventScan& scan, LayerNames& layers,
                 const std::function<void(const ScannedEvent&)>& visit) {
  flush_event_tables(db);
  const auto [sql, parameters] = scan_sql(schema, scan);
  Statement read(db, sql);
  read.bind_all(parameters);
  std::vector<BlockEvent> events;
  const auto name_of = [&](int64_t id, int64_t block) -> const auto& { return layers.name_of(id, block); };
  while (read.step())
    visit_block(block_row(read, 2), read.column_view(0),
                read.column_null(1) ? std::nullopt : std::optional<int64_t>(read.column_int64(1)), scan, name_of, events,
                visit);
}

std::vector<FetchedBlock> fetch_event_blocks(sqlite3* db, const std::string& schema, const EventScan& scan) {
  flush_event_tables(db);
  const auto [sql, parameters] = scan_sql(schema, scan);
  Statement read(db, sql);
  read.bind_all(parameters);
  std::vector<FetchedBlock> blocks;
  while (read.step()) {
    const BlockRow row = block_row(read, 2);
    blocks.push_back({std::string(read.column_view(0)),
                      read.column_null(1) ? std::nullopt : std::optional<int64_t>(read.column_int64(1)), row.id,
                      row.events, row.first_start_ns, row.last_start_ns, std::string(row.data)});
  }
  return blocks;
}

void visit_event_blocks(const std::vector<FetchedBlock>& blocks, const EventScan& scan, const LayerNames& layers,
                        const std::function<void(const ScannedEvent&)>& visit) {
  std::vector<BlockEvent> events;
  const auto name_of = [&](int64_t id, int64_t block) -> const auto& { return layers.loaded_name_of(id, block); };
  for (const FetchedBlock& b : blocks)
    visit_block({b.id, b.events, b.first_start_ns, b.last_start_ns, b.data}, b.job_id, b.folded_through_ns, scan,
                name_of, events, visit);
}

size_t held_events(const std::vector<FetchedBlock>& blocks) {
  size_t held = 0;
  for (const FetchedBlock& b : blocks)
    held += static_cast<size_t>(std::clamp<int64_t>(b.events, 0, static_cast<int64_t>(kMaxBlockEvents)));
  return held;
}

std::vector<JobSpan> unfolded_span_bounds(sqlite3* db, const std::string& uuid) {
  flush_event_tables(db);
  std::vector<JobSpan> spans;
  const auto add = [&](std::string_view job_id, int64_t first, int64_t last, int64_t events, int64_t longest) {
    if (spans.empty() || spans.back().job_id != job_id) {
      auto it = std::find_if(spans.begin(), spans.end(), [&](const JobSpan& s) { return s.job_id == job_id; });
      if (it == spans.end()) {
        spans.push_back({std::string(job_id), first, last, 0, 0});
      } else {
        std::iter_swap(it, spans.end() - 1);  // blocks come job by job: the last one is looked at first
      }
    }
    JobSpan& span = spans.back();
    span.first_ns = std::min(span.first_ns, first);
    span.last_ns = std::max(span.last_ns, last);
    span.longest_ns = std::max(span.longest_ns, longest);
    span.events += events;
  };
  // A block none of whose events is folded and all of whose times can be calls gives its span
  // from its row (its events start at first_start_ns, the last ends at last_end_ns, none is
  // longer than that); only the others (a block the fold point cuts, one with impossible times)
  // are decoded, as a scan of the unfolded events would.
  Statement read(db, "SELECT id, job_id, events, first_start_ns, last_end_ns, impossible = 0 AND "
                     "(folded_through_ns IS NULL OR folded_through_ns < first_start_ns) AND first_start_ns >= 0 "
                     "FROM main.pp_events_blocks WHERE gpu_uuid = :gpu AND last_start_ns >= 0 "
                     "AND (folded_through_ns IS NULL OR folded_through_ns < last_start_ns)");
  read.bind(":gpu", uuid);
  StoredBlock block;
  while (read.step()) {
    const std::string_view job_id = read.column_view(1);
    if (read.column_int64(5) != 0) {
      const int64_t first = read.column_int64(3), last = read.column_int64(4);
      add(job_id, first, last, read.column_int64(2), last - first);
      continue;
    }
    if (!read_block(db, "main", read.column_int64(0), block)) continue;
    for (const BlockEvent& e : block.events) {
      const int64_t start = e.t_start_ns, end = e.t_end_ns;
      if (start < 0 || end < start || end > kMaxEventNs) continue;
      if (block.folded_through_ns && start <= *block.folded_through_ns) continue;
      add(job_id, start, end, 1, end - start);
    }
  }
  std::sort(spans.begin(), spans.end(), [](const JobSpan& a, const JobSpan& b) { return a.job_id < b.job_id; });
  return spans;
}

std::optional<int64_t> newest_event_start(sqlite3* db, const std::string& uuid) {
  flush_event_tables(db);
  // The GPU's blocks newest first (the time index read backwards); once an event that can be a
  // call is found, only blocks that start within a block's span of it may hold a newer one.
  Statement read(db, "SELECT " + std::string(kBlockRowColumns) +
                         " FROM main.pp_events_blocks WHERE gpu_uuid = :gpu ORDER BY first_start_ns DESC");
  read.bind(":gpu", uuid);
  std::optional<int64_t> newest;
  std::vector<BlockEvent> events;
  while (read.step()) {
    const BlockRow row = block_row(read, 0);
    if (newest && row.first_start_ns < *newest - kMaxBlockSpanNs) break;  // (*newest >= 0: no overflow)
    decode_block_row(row, events);
    for (const BlockEvent& e : events)
      if (e.t_start_ns >= 0 && e.t_end_ns >= e.t_start_ns && e.t_end_ns <= kMaxEventNs)
        newest = std::max(newest.value_or(INT64_MIN), e.t_start_ns);
  }
  return newest;
}

}  // namespace pp
