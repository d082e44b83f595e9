// pp_events: every layer event pp_refresh imported (and every row a user inserts), one row per
// event, stored in blocks (event_store.hpp). pp_refresh and pp_install_views create it:
//
//   CREATE VIRTUAL TABLE pp_events USING pp_event_store;
//
//   SELECT layer, forward, t_start_ns, t_end_ns FROM pp_events
//    WHERE gpu_uuid = 'GPU-0' AND t_start_ns >= 1714000000000000000 ORDER BY t_start_ns;
//   INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns,
//                         source_file, line)
//   VALUES ('job-1', 'GPU-0', 'emb.0', 'EmbeddingBag', 1, 1714000000000000000, 1714000000000100000, 'mine', 1);
//   DELETE FROM pp_events WHERE job_id = 'job-1';
//
// COLUMNS: id INTEGER (the block's id * 65536 + the event's place in it; assigned on insert),
// job_id, host_name, ip, pod, namespace, gpu_uuid TEXT, gpu, rank, pid, epoch, batch INTEGER,
// layer, layer_type TEXT, forward INTEGER, t_start_ns, t_end_ns INTEGER, t_start, t_end REAL
// (seconds, from the ns: not stored), cpu_num REAL, source_file TEXT, line INTEGER, folded
// INTEGER (1 once its duration is in layer_state: it starts by its block's folded_through_ns);
// HIDDEN block INTEGER: the pp_events_blocks row that holds it.
//
// Constraints on gpu_uuid, t_start_ns, folded = 0, source_file, job_id, id and block narrow the blocks
// read; SQLite checks every constraint itself on the rows returned. An update is a delete and
// an insert (the row gets a new id); what an inserted row may hold is checked by
// inserted_event (event_insert.cpp). Rows inserted by a statement are written in blocks when
// the transaction commits, at a savepoint, when the next statement reads the table, or before
// the engine reads the blocks itself (flush_event_tables).
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "attribution/attribution_tables.hpp"
#include "attribution/event_columns.hpp"
#include "attribution/event_store.hpp"
#include "core/guard.hpp"
#include "core/statement.hpp"

namespace pp {
namespace {

using namespace event_columns;

constexpr const char* kName = "pp_events";

// The constraints a plan hands to xFilter, as bits of idxNum in this order (argv in this order).
enum PlanBit : int {
  kByGpu = 1, kStartFrom = 2, kStartTo = 4, kByFolded = 8, kByFile = 16, kById = 32, kByJob = 64, kStartAt = 128, kByBlock = 256
};

struct EventsTable : sqlite3_vtab {
  sqlite3* db;
  std::string schema;
  LayerNames layers;
  BlockWriter writer;
  std::map<int64_t, std::vector<int64_t>> deletes;  // block id -> indexes, applied by flush()
  // While the table writes its shadow tables, SQLite opens savepoints of those statements on it
  // too: they are its own, not a point to flush at or roll back to.
  int writing = 0;
  struct Writing {
    explicit Writing(EventsTable* t) : table(t) { ++table->writing; }
    ~Writing() { --table->writing; }
    EventsTable* table;
  };

  EventsTable(sqlite3* d, std::string s) : sqlite3_vtab{}, db(d), schema(std::move(s)), layers(d, schema), writer(d, schema, layers) {}

  void flush() {
    if (writing) return;
    Writing scope(this);
    writer.flush();
    // Each block's deletes leave the list once applied, so that a failure applies none twice.
    while (!deletes.empty()) {
      const int64_t block_id = deletes.begin()->first;
      std::vector<int64_t>& indexes = deletes.begin()->second;  // (a lambda may not capture a structured binding in C++17)
      StoredBlock block;
      if (read_block(db, schema, block_id, block)) {
        std::sort(indexes.begin(), indexes.end());
        const auto gone = [&](const BlockEvent& e) { return std::binary_search(indexes.begin(), indexes.end(), e.index); };
        block.events.erase(std::remove_if(block.events.begin(), block.events.end(), gone), block.events.end());
        rewrite_block(db, schema, block);
      }
      deletes.erase(deletes.begin());
    }
  }
  void discard() {
    writer.discard();
    deletes.clear();
    layers.forget();
  }
};

EventsTable* table_of(sqlite3_vtab* vtab) { return static_cast<EventsTable*>(vtab); }

// The pp_events tables of each connection (main's and attached databases'), so that the engine's
// readers of the blocks can have what their statements buffered written first.
std::mutex tables_mutex;
std::multimap<sqlite3*, EventsTable*> tables_of_db;

void register_table(EventsTable* table) {
  const std::lock_guard<std::mutex> lock(tables_mutex);
  tables_of_db.emplace(table->db, table);
}
void unregister_table(EventsTable* table) {
  const std::lock_guard<std::mutex> lock(tables_mutex);
  const auto [first, last] = tables_of_db.equal_range(table->db);
  for (auto it = first; it != last; ++it)
    if (it->second == table) {
      tables_of_db.erase(it);
      return;
    }
}

struct EventsCursor : sqlite3_vtab_cursor {
  // Names are read once per cursor (a statement): a rolled back transaction may have taken ids
  // that a later one gives other names.
  std::unique_ptr<LayerNames> layers;
  std::unique_ptr<Statement> blocks;
  std::string blocks_sql;  // the statement is kept while the plan's SQL stays the same
  bool blocks_done = true;
  int64_t block_id = 0;
  std::optional<int64_t> folded_through;
  std::vector<SqlValue> key;
  std::vector<BlockEvent> events;
  size_t at = 0;
  bool eof = true;
  // Per-event narrowing (SQLite checks again).
  bool unfolded_only = false;
  std::optional<int64_t> start_from, start_to, id;

  EventsTable* table() const { return table_of(pVtab); }
  LayerNames& names() {
    if (!layers) layers = std::make_unique<LayerNames>(table()->db, table()->schema);
    return *layers;
  }

  bool wanted(const BlockEvent& e) const {
    if (unfolded_only && folded_through && e.t_start_ns <= *folded_through) return false;
    if (start_from && e.t_start_ns < *start_from) return false;
    if (start_to && e.t_start_ns > *start_to) return false;
    if (id && block_id * kBlockIdScale + e.index != *id) return false;
    return true;
  }

  // Moves to the next wanted event, reading blocks as needed.
  void advance() {
    for (;;) {
      // A lookup by id goes straight to its place (indexes increase within a block).
      if (id && at == 0 && *id >= 0 && *id / kBlockIdScale == block_id)
        at = static_cast<size_t>(std::lower_bound(events.begin(), events.end(), *id % kBlockIdScale,
                                                  [](const BlockEvent& e, int64_t index) { return e.index < index; }) -
                                 events.begin());
      while (at < events.size()) {
        if (wanted(events[at])) return;
        if (id && *id / kBlockIdScale == block_id && events[at].index > *id % kBlockIdScale) at = events.size();
        else ++at;
      }
      if (blocks_done || !blocks->step()) {
        blocks_done = true;
        eof = true;
        return;
      }
      folded_through = blocks->column_null(0) ? std::nullopt : std::optional<int64_t>(blocks->column_int64(0));
      const BlockRow row = block_row(*blocks, 1);
      block_id = -1;  // (until decoded whole: a lookup of the same block must not reuse a part)
      decode_block_row(row, events);
      block_id = row.id;
      key.clear();
      for (int i = 0; i < kBlockKeyColumnCount; ++i) {
        const int c = 6 + i;
        switch (blocks->column_type(c)) {
          case SQLITE_INTEGER: key.emplace_back(blocks->column_int64(c)); break;
          case SQLITE_FLOAT: key.emplace_back(blocks->column_double(c)); break;
          case SQLITE_NULL: key.emplace_back(std::monostate{}); break;
          default: key.emplace_back(blocks->column_text(c)); break;
        }
      }
      at = 0;
    }
  }
};

// An id or block constraint's value as an integer; others (3.5, 'x', NULL) narrow nothing.
std::optional<int64_t> exact_integer(sqlite3_value* v) {
  const int type = sqlite3_value_numeric_type(v);
  if (type == SQLITE_INTEGER) return sqlite3_value_int64(v);
  if (type != SQLITE_FLOAT) return std::nullopt;
  const double d = sqlite3_value_double(v);
  if (!(d == std::floor(d) && std::fabs(d) < 9.2e18)) return std::nullopt;
  return static_cast<int64_t>(d);
}

// A bound for t_start_ns from a constraint's value: integers as they are, a REAL rounded
// outward; other values narrow nothing.
std::optional<int64_t> start_bound(sqlite3_value* v, bool lower) {
  const int type = sqlite3_value_numeric_type(v);
  if (type == SQLITE_INTEGER) return sqlite3_value_int64(v);
  if (type != SQLITE_FLOAT) return std::nullopt;
  const double d = lower ? std::floor(sqlite3_value_double(v)) : std::ceil(sqlite3_value_double(v));
  if (!(d > -9.2e18 && d < 9.2e18)) return std::nullopt;
  return static_cast<int64_t>(d);
}

int events_create(sqlite3* db, void*, int argc, const char* const* argv, sqlite3_vtab** out, char** error, bool create) {
  try {
    if (argc > 3) throw Error("takes no arguments (CREATE VIRTUAL TABLE pp_events USING pp_event_store)");
    // Its shadow tables are pp_events_blocks and pp_events_layers: a second table of the module
    // would share them, and dropping it would drop pp_events' rows.
    if (sqlite3_stricmp(argv[2], kName) != 0)
      throw Error("the table of module pp_event_store is pp_events, not " + std::string(argv[2]));
    const std::string schema = argv[1];
    if (sqlite3_declare_vtab(db, kSchema) != SQLITE_OK) throw Error(sqlite3_errmsg(db));
    sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
    if (create) run_script(db, event_store_ddl(schema));
    auto* table = new EventsTable(db, schema);
    register_table(table);
    *out = table;
    return SQLITE_OK;
  } catch (const std::exception& e) {
    *error = sqlite3_mprintf("%s: %s", kName, e.what());
    return SQLITE_ERROR;
  }
}

int events_best_index(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  return guard_vtab(vtab, kName, [&] {
    struct Pick {
      int bit, column;
      unsigned char ops[2];
    };
    constexpr Pick kPicks[] = {
        {kByGpu, kGpuUuid, {SQLITE_INDEX_CONSTRAINT_EQ, SQLITE_INDEX_CONSTRAINT_IS}},
        {kStartFrom, kStartNs, {SQLITE_INDEX_CONSTRAINT_GE, SQLITE_INDEX_CONSTRAINT_GT}},
        {kStartTo, kStartNs, {SQLITE_INDEX_CONSTRAINT_LE, SQLITE_INDEX_CONSTRAINT_LT}},
        {kByFolded, kFolded, {SQLITE_INDEX_CONSTRAINT_EQ, SQLITE_INDEX_CONSTRAINT_IS}},
        {kByFile, kSourceFile, {SQLITE_INDEX_CONSTRAINT_EQ, SQLITE_INDEX_CONSTRAINT_IS}},
        {kById, kId, {SQLITE_INDEX_CONSTRAINT_EQ, SQLITE_INDEX_CONSTRAINT_IS}},
        {kByJob, kJobId, {SQLITE_INDEX_CONSTRAINT_EQ, SQLITE_INDEX_CONSTRAINT_IS}},
        {kStartAt, kStartNs, {SQLITE_INDEX_CONSTRAINT_EQ, SQLITE_INDEX_CONSTRAINT_EQ}},
        {kByBlock, kBlock, {SQLITE_INDEX_CONSTRAINT_EQ, SQLITE_INDEX_CONSTRAINT_IS}},
    };
    int bits = 0, argv_index = 0;
    for (const Pick& p : kPicks) {
      for (int i = 0; i < info->nConstraint; ++i) {
        const auto& c = info->aConstraint[i];
        const int column = c.iColumn < 0 ? kId : c.iColumn;
        if (!c.usable || column != p.column || (c.op != p.ops[0] && c.op != p.ops[1])) continue;
        // Text is narrowed by the shadow table's BINARY comparison: a constraint of another
        // collation (COLLATE NOCASE) is left to SQLite's own check of every row.
        const bool text = column == kGpuUuid || column == kSourceFile || column == kJobId;
        if (text && sqlite3_stricmp(sqlite3_vtab_collation(info, i), "BINARY") != 0) continue;
        bits |= p.bit;
        info->aConstraintUsage[i].argvIndex = ++argv_index;
        info->aConstraintUsage[i].omit = 0;
        break;
      }
    }
    double rows = 1e7;
    if (bits & (kById | kByBlock)) rows = bits & kById ? 1 : 1000;
    else if ((bits & kByGpu) && (bits & (kStartFrom | kStartTo | kStartAt))) rows = 1e3;
    else if (bits & kByFolded) rows = 1e4;
    else if (bits & (kByGpu | kByFile)) rows = 1e5;
    else if (bits & (kStartFrom | kStartTo | kStartAt)) rows = 1e5;
    else if (bits & kByJob) rows = 1e6;
    info->idxNum = bits;
    info->estimatedRows = static_cast<sqlite3_int64>(rows);
    info->estimatedCost = rows;
    return SQLITE_OK;
  });
}

int events_filter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* cursor = static_cast<EventsCursor*>(base);
  return guard_vtab(base->pVtab, kName, [&] {
    EventsTable* table = cursor->table();
    table->flush();
    std::string sql = "SELECT folded_through_ns, " + std::string(kBlockRowColumns);
    for (const char* c : kBlockKeyColumns) sql += std::string(", ") + c;
    sql += " FROM " + quoted_schema(table->schema) + ".pp_events_blocks WHERE true";
    SqlParameters parameters;
    cursor->unfolded_only = false;
    cursor->start_from.reset();
    cursor->start_to.reset();
    cursor->id.reset();
    int arg = 0;
    const auto next = [&]() -> sqlite3_value* { return arg < argc ? argv[arg++] : nullptr; };
    bool empty = false;
    if (idx_num & kByGpu) {
      sqlite3_value* v = next();
      sql += " AND gpu_uuid = :gpu";
      parameters.emplace_back(":gpu", held_value(v));
      if (sqlite3_value_type(v) == SQLITE_NULL) empty = true;
    }
    if (idx_num & kStartFrom) {
      if ((cursor->start_from = start_bound(next(), true)))
        sql += start_range_sql(cursor->start_from, std::nullopt, "", parameters);
    }
    if (idx_num & kStartTo) {
      if ((cursor->start_to = start_bound(next(), false)))
        sql += start_range_sql(std::nullopt, cursor->start_to, "", parameters);
    }
    if (idx_num & kByFolded) {
      sqlite3_value* v = next();
      if (sqlite3_value_numeric_type(v) == SQLITE_INTEGER && sqlite3_value_int64(v) == 0) {
        cursor->unfolded_only = true;
        sql += " AND (folded_through_ns IS NULL OR folded_through_ns < last_start_ns)";
      }
    }
    if (idx_num & kByFile) {
      sqlite3_value* v = next();
      sql += " AND source_file = :file";
      parameters.emplace_back(":file", held_value(v));
    }
    if (idx_num & kById) {
      if ((cursor->id = exact_integer(next()))) {
        sql += " AND id = :block";
        parameters.emplace_back(":block", *cursor->id >= 0 ? *cursor->id / kBlockIdScale : int64_t{-1});
      }
    }
    if (idx_num & kByJob) {
      sqlite3_value* v = next();
      sql += " AND job_id = :job";
      parameters.emplace_back(":job", held_value(v));
    }
    if (idx_num & kStartAt) {
      sqlite3_value* v = next();
      const auto from = start_bound(v, true), to = start_bound(v, false);
      if (from && to) {
        cursor->start_from = cursor->start_from ? std::max(*cursor->start_from, *from) : *from;
        cursor->start_to = cursor->start_to ? std::min(*cursor->start_to, *to) : *to;
        sql += start_range_sql(from, to, "at_", parameters);
      }
    }
    std::optional<int64_t> in_block;
    if (idx_num & kByBlock) {
      if ((in_block = exact_integer(next()))) {
        sql += " AND id = :in_block";
        parameters.emplace_back(":in_block", *in_block);
      }
    }
    cursor->at = 0;
    cursor->eof = false;
    if (empty) {
      cursor->eof = true;
      return SQLITE_OK;
    }
    // A lookup by id or block of the block decoded last (a join's lookups of one block's events
    // one after another) reads no row: its events are still here, and SQLite checks the rest.
    const std::optional<int64_t> only_block = cursor->id ? std::optional<int64_t>(*cursor->id / kBlockIdScale) : in_block;
    if (only_block && cursor->block_id > 0 && *only_block == cursor->block_id) {
      cursor->blocks_done = true;
      cursor->advance();
      return SQLITE_OK;
    }
    if (!cursor->blocks || cursor->blocks_sql != sql) {
      cursor->blocks = std::make_unique<Statement>(table->db, sql);
      cursor->blocks_sql = sql;
    } else {
      sqlite3_reset(cursor->blocks->handle());
    }
    cursor->blocks->bind_all(parameters);
    cursor->blocks_done = false;
    cursor->events.clear();
    cursor->block_id = -1;
    cursor->advance();
    return SQLITE_OK;
  });
}

int events_column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = static_cast<EventsCursor*>(base);
  return guard_vtab(base->pVtab, kName, [&] {
    const BlockEvent& e = cursor->events[cursor->at];
    if (kKeyOf[column] >= 0) {
      result_value(ctx, cursor->key[kKeyOf[column]]);
      return SQLITE_OK;
    }
    switch (column) {
      case kId: sqlite3_result_int64(ctx, cursor->block_id * kBlockIdScale + e.index); break;
      case kEpoch:
        if (e.epoch_null) sqlite3_result_null(ctx); else sqlite3_result_int64(ctx, e.epoch);
        break;
      case kBatch:
        if (e.batch_null) sqlite3_result_null(ctx); else sqlite3_result_int64(ctx, e.batch);
        break;
      case kLayer: result_text(ctx, cursor->names().name_of(e.layer_id, cursor->block_id).first); break;
      case kLayerType: {
        const auto& type = cursor->names().name_of(e.layer_id, cursor->block_id).second;
        if (type) result_text(ctx, *type); else sqlite3_result_null(ctx);
        break;
      }
      case kForward: sqlite3_result_int64(ctx, e.forward ? 1 : 0); break;
      case kStartNs: sqlite3_result_int64(ctx, e.t_start_ns); break;
      case kEndNs: sqlite3_result_int64(ctx, e.t_end_ns); break;
      case kStart: sqlite3_result_double(ctx, ns_to_seconds(e.t_start_ns)); break;
      case kEnd: sqlite3_result_double(ctx, ns_to_seconds(e.t_end_ns)); break;
      case kLine: sqlite3_result_int64(ctx, e.line); break;
      case kBlock: sqlite3_result_int64(ctx, cursor->block_id); break;
      case kFolded: sqlite3_result_int64(ctx, cursor->folded_through && e.t_start_ns <= *cursor->folded_through); break;
      default: sqlite3_result_null(ctx);
    }
    return SQLITE_OK;
  });
}

int events_update(sqlite3_vtab* vtab, int argc, sqlite3_value** argv, sqlite3_int64* rowid) {
  return guard_vtab(vtab, kName, [&] {
    EventsTable* table = table_of(vtab);
    EventsTable::Writing scope(table);
    if (sqlite3_value_type(argv[0]) != SQLITE_NULL) {  // a DELETE, or the old row of an UPDATE
      const int64_t id = sqlite3_value_int64(argv[0]);
      table->deletes[id / kBlockIdScale].push_back(id % kBlockIdScale);
    }
    if (argc > 1) {
      bool folded = false;
      StoredEvent e = inserted_event(argv + 2, folded);
      *rowid = table->writer.add(std::move(e), folded);
    }
    return SQLITE_OK;
  });
}

int events_flush(sqlite3_vtab* vtab) {
  return guard_vtab(vtab, kName, [&] {
    table_of(vtab)->flush();
    return SQLITE_OK;
  });
}

int events_destroy(sqlite3_vtab* vtab) {
  EventsTable* table = table_of(vtab);
  const int rc = guard_vtab(vtab, kName, [&] {
    run_script(table->db, "DROP TABLE IF EXISTS " + quoted_schema(table->schema) + ".pp_events_blocks;"
                          "DROP TABLE IF EXISTS " + quoted_schema(table->schema) + ".pp_events_layers;");
    return SQLITE_OK;
  });
  if (rc == SQLITE_OK) {
    unregister_table(table);
    delete table;
  }
  return rc;
}

int events_next(sqlite3_vtab_cursor* base) {
  auto* cursor = static_cast<EventsCursor*>(base);
  return guard_vtab(base->pVtab, kName, [&] {
    ++cursor->at;
    cursor->advance();
    return SQLITE_OK;
  });
}

int events_discard(sqlite3_vtab* vtab) {
  table_of(vtab)->discard();
  return SQLITE_OK;
}

}  // namespace

void flush_event_tables(sqlite3* db) {
  std::vector<EventsTable*> tables;
  {
    const std::lock_guard<std::mutex> lock(tables_mutex);
    const auto [first, last] = tables_of_db.equal_range(db);
    for (auto it = first; it != last; ++it) tables.push_back(it->second);
  }
  for (EventsTable* table : tables) table->flush();
}

const sqlite3_module kEventStoreModule = [] {
  sqlite3_module m{};
  m.iVersion = 3;
  m.xCreate = [](sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out, char** error) {
    return events_create(db, aux, argc, argv, out, error, true);
  };
  m.xConnect = [](sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out, char** error) {
    return events_create(db, aux, argc, argv, out, error, false);
  };
  m.xBestIndex = events_best_index;
  m.xDisconnect = [](sqlite3_vtab* vtab) {
    unregister_table(table_of(vtab));
    delete table_of(vtab);
    return SQLITE_OK;
  };
  m.xDestroy = events_destroy;
  m.xOpen = [](sqlite3_vtab*, sqlite3_vtab_cursor** out) {
    *out = new (std::nothrow) EventsCursor();
    return *out ? SQLITE_OK : SQLITE_NOMEM;
  };
  m.xClose = [](sqlite3_vtab_cursor* cursor) {
    delete static_cast<EventsCursor*>(cursor);
    return SQLITE_OK;
  };
  m.xFilter = events_filter;
  m.xNext = events_next;
  m.xEof = [](sqlite3_vtab_cursor* base) { return static_cast<EventsCursor*>(base)->eof ? 1 : 0; };
  m.xColumn = events_column;
  m.xRowid = [](sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
    auto* cursor = static_cast<EventsCursor*>(base);
    *rowid = cursor->block_id * kBlockIdScale + cursor->events[cursor->at].index;
    return SQLITE_OK;
  };
  m.xUpdate = events_update;
  // (SQLite calls xSync, xCommit and xRollback only on tables whose xBegin it called.)
  m.xBegin = [](sqlite3_vtab* vtab) {
    table_of(vtab)->layers.forget();  // names cached by an earlier transaction may be gone
    return SQLITE_OK;
  };
  m.xSync = events_flush;
  m.xCommit = [](sqlite3_vtab*) { return SQLITE_OK; };
  m.xRollback = events_discard;
  m.xSavepoint = [](sqlite3_vtab* vtab, int) { return events_flush(vtab); };
  m.xRelease = [](sqlite3_vtab* vtab, int) { return events_flush(vtab); };
  m.xRollbackTo = [](sqlite3_vtab* vtab, int) { return table_of(vtab)->writing ? SQLITE_OK : events_discard(vtab); };
  m.xRename = [](sqlite3_vtab* vtab, const char*) {
    set_vtab_error(vtab, std::string(kName) + ": cannot be renamed (its shadow tables are named after it)");
    return SQLITE_ERROR;
  };
  m.xShadowName = [](const char* suffix) {
    return (sqlite3_stricmp(suffix, "blocks") == 0 || sqlite3_stricmp(suffix, "layers") == 0) ? 1 : 0;
  };
  return m;
}();

}  // namespace pp
