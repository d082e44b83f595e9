// SQL query shapes against the file tables (layer_events, layer_jobs), run by the whole
// extension in an in-process SQLite over a small directory of event files made at start-up.
//
// Each input builds one query: the table's argument given as a constant, a named column (= or
// IS), from another table in either join order (comma, CROSS JOIN, LEFT JOIN), a CTE, a scalar
// subquery, a bound parameter or a TEMP view; a WHERE clause of comparisons, IN lists (of text,
// numbers, NULL, BLOBs, a subquery), BETWEEN, LIKE, COLLATE NOCASE, NOT, AND and OR; and the rows
// ordered, cut by LIMIT/OFFSET, made DISTINCT, grouped, or counted by a correlated subquery.
//
// Checked: the rows equal those of the same query over a plain TEMP table holding the
// constant-argument form's rows (so push-down, IN lists and plans never change a result), or
// both queries fail. Shapes that cannot supply the argument (none given, a CROSS JOIN that reads
// the argument's table later) must fail with an error that starts with the table's name, or
// return no rows without calling it.
//
// Input: bytes read one at a time as choices; past the end every choice is 0. With
// PP_SQL_SHAPE_PRINT set, each query is printed with its error or row count.
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.hpp"

extern "C" int sqlite3_precisionprobe_init(sqlite3*, char**, const sqlite3_api_routines*);

namespace {

struct Choices {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  unsigned next() { return at < size ? data[at++] : 0; }
  unsigned pick(unsigned n) { return next() % n; }
};

struct Table {
  const char* name;
  const char* copy;  // the TEMP table with the constant-argument form's rows
  const char* view;  // a TEMP view over the constant-argument form
  std::vector<const char*> columns;
};

const Table kTables[] = {
    {"layer_events", "events_copy", "events_view",
     {"job_id", "layer", "forward", "t_start", "t_end", "batch", "gpu", "line", "source_file"}},
    {"layer_jobs", "jobs_copy", "jobs_view", {"job_id", "host_name", "pid", "start_time", "line", "source_file"}},
};

constexpr int64_t kT0 = 1714000000;  // seconds

std::string g_dir;  // the event files
sqlite3* g_db = nullptr;

std::string event(const char* job, int i, const char* layer) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"job_id\": \"%s\", \"host_name\": \"h\", \"ip\": \"10.0.0.1\", \"pod\": null, \"namespace\": null, "
                "\"gpu_uuid\": \"GPU-1\", \"gpu\": %d, \"rank\": 0, \"local_rank\": 0, \"world_size\": 1, "
                "\"pid\": 7, \"epoch\": 0, \"batch\": %d, \"layer\": \"%s\", \"layer_type\": \"Linear\", "
                "\"forward\": %s, \"t_start_ns\": %lld, \"t_end_ns\": %lld, \"cpu_num\": 4}\n",
                job, i % 2, i / 3, layer, i % 2 ? "true" : "false", static_cast<long long>(kT0 * 1000000000LL + i * 1000000LL),
                static_cast<long long>(kT0 * 1000000000LL + i * 1000000LL + 500000));
  return buf;
}

std::string header(const char* job, int pid) {
  return std::string("{\"record\": \"job\", \"job_id\": \"") + job + "\", \"host_name\": \"h\", \"pid\": " +
         std::to_string(pid) + ", \"start_time_ns\": " + std::to_string(kT0 * 1000000000LL + pid) + "}\n";
}

void exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(g_db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::fprintf(stderr, "setup failed: %s\n  %s\n", error ? error : "?", sql.c_str());
    std::abort();
  }
}

std::string sql_literal(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

void set_up() {
  char pattern[] = "/tmp/pp_sql_shape_XXXXXX";
  if (!mkdtemp(pattern)) std::abort();
  g_dir = pattern;
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(g_dir, ec);
  });
  std::ofstream(g_dir + "/rank0.jsonl") << header("a", 1) << event("a", 0, "l0") << event("a", 1, "l1")
                                        << event("a", 2, "L0") << "not json\n" << event("b", 3, "l0")
                                        << event("a", 4, "l1");
  std::ofstream(g_dir + "/rank1.jsonl") << header("b", 2) << event("b", 5, "l1") << event("B", 6, "l0")
                                        << event("c", 7, "l2") << header("c", 3) << event("b", 8, "l0");
  sqlite3_auto_extension(reinterpret_cast<void (*)(void)>(sqlite3_precisionprobe_init));
  if (sqlite3_open(":memory:", &g_db) != SQLITE_OK) std::abort();
  const std::string path = sql_literal(g_dir);
  exec("CREATE TEMP TABLE dirs(p TEXT); INSERT INTO dirs VALUES (" + path + ");"
       "CREATE TEMP TABLE jobs(j TEXT); INSERT INTO jobs VALUES ('a'), ('c'), (NULL);"
       "CREATE TEMP TABLE events_copy AS SELECT * FROM layer_events(" + path + ");"
       "CREATE TEMP TABLE jobs_copy AS SELECT * FROM layer_jobs(" + path + ");"
       "CREATE TEMP VIEW events_view AS SELECT * FROM layer_events(" + path + ");"
       "CREATE TEMP VIEW jobs_view AS SELECT * FROM layer_jobs(" + path + ");");
}

// A literal of any type, near the data.
std::string literal(Choices& c, const char* column) {
  const std::string col = column;
  const bool time = col == "t_start" || col == "t_end" || col == "start_time";
  switch (c.pick(12)) {
    case 0: return "NULL";
    case 1: return std::to_string(static_cast<int>(c.pick(10)));
    case 2: return std::to_string(static_cast<int>(c.pick(10))) + ".5";
    case 3: return "x'" + std::string(c.pick(2) ? "61" : "") + "'";
    case 4: {
      static const char* kTexts[] = {"a", "b", "B", "c", "l0", "L0", "l1", "", "h", "1", "%", "a%"};
      return sql_literal(kTexts[c.pick(12)]);
    }
    case 5: return "'" + std::to_string(kT0) + ".00" + std::to_string(c.pick(10)) + "'";
    default:
      if (time) return std::to_string(kT0) + (c.pick(2) ? ".00" + std::to_string(c.pick(10)) : "");
      return std::to_string(static_cast<int>(c.pick(10)));
  }
}

std::string predicate(Choices& c, const Table& t, int depth) {
  const char* column = t.columns[c.pick(static_cast<unsigned>(t.columns.size()))];
  const std::string col = std::string("t.") + column + (c.pick(8) == 0 ? " COLLATE NOCASE" : "");
  switch (depth < 3 ? c.pick(12) : c.pick(7)) {
    case 0: {
      static const char* kOps[] = {"=", "<>", "<", "<=", ">", ">=", "IS", "IS NOT", "=="};
      return col + " " + kOps[c.pick(9)] + " " + literal(c, column);
    }
    case 1:
    case 2: {
      std::string list;
      const unsigned n = 1 + c.pick(6);
      for (unsigned i = 0; i < n; ++i) list += (i ? ", " : "") + literal(c, column);
      return col + (c.pick(4) == 0 ? " NOT IN (" : " IN (") + list + ")";
    }
    case 3: return col + " IN (SELECT j FROM jobs)";
    case 4: return col + (c.pick(3) == 0 ? " NOT BETWEEN " : " BETWEEN ") + literal(c, column) + " AND " + literal(c, column);
    case 5: return col + " LIKE " + literal(c, column);
    case 6: return col + " IS NULL";
    case 7:
    case 8: return "NOT (" + predicate(c, t, depth + 1) + ")";
    case 9: return "(" + predicate(c, t, depth + 1) + ") AND (" + predicate(c, t, depth + 1) + ")";
    default: return "(" + predicate(c, t, depth + 1) + ") OR (" + predicate(c, t, depth + 1) + ")";
  }
}

struct Result {
  bool ok = false;
  std::string error;
  std::vector<std::string> rows;
};

Result run(const std::string& sql, bool bind_path) {
  Result r;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(g_db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    r.error = sqlite3_errmsg(g_db);
    return r;
  }
  if (bind_path) sqlite3_bind_text(stmt, 1, g_dir.c_str(), -1, SQLITE_TRANSIENT);
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW && r.rows.size() < 1000) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      const int type = sqlite3_column_type(stmt, i);
      const char* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
      row += std::to_string(type) + ":" + (text ? text : "") + "|";
    }
    r.rows.push_back(row);
  }
  if (rc == SQLITE_ROW || rc == SQLITE_DONE)
    r.ok = true;
  else
    r.error = sqlite3_errmsg(g_db);
  sqlite3_finalize(stmt);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!g_db) set_up();
  Choices c{data, size};
  const Table& t = kTables[c.pick(2)];
  const std::string name = t.name;
  const std::string path = sql_literal(g_dir);

  // FROM (and any WITH and extra condition) for the table under test, and the same for the copy.
  std::string with, from, extra, copy_from = std::string(t.copy) + " AS t";
  bool bind = false, must_fail = false;
  const unsigned form = c.pick(14);
  switch (form) {
    case 0: from = name + "(" + path + ") AS t"; break;
    case 1: from = name + " AS t", extra = "t.path = " + path; break;
    case 2: from = name + " AS t", extra = "t.path IS " + path; break;
    case 3: from = "dirs AS d, " + name + "(d.p) AS t", copy_from = "dirs AS d, " + copy_from; break;
    case 4: from = name + "(d.p) AS t, dirs AS d", copy_from += ", dirs AS d"; break;
    case 5: from = "dirs AS d CROSS JOIN " + name + "(d.p) AS t", copy_from = "dirs AS d CROSS JOIN " + copy_from; break;
    case 6: from = "dirs AS d LEFT JOIN " + name + "(d.p) AS t", copy_from = "dirs AS d LEFT JOIN " + copy_from + " ON 1"; break;
    case 7:
      with = "WITH w(p) AS (SELECT p FROM dirs) ";
      from = "w, " + name + "(w.p) AS t", copy_from = "w, " + copy_from;
      break;
    case 8: from = name + "((SELECT p FROM dirs)) AS t"; break;
    case 9: from = name + "(?1) AS t", bind = true; break;
    case 10: from = std::string(t.view) + " AS t"; break;
    case 11: from = name + " AS t, dirs AS d", extra = "t.path = d.p", copy_from += ", dirs AS d"; break;
    case 12: from = name + " AS t", must_fail = true; break;                                    // no argument
    default: from = name + "(d.p) AS t CROSS JOIN dirs AS d", must_fail = true; break;  // read too late
  }
  std::string where = c.pick(4) == 0 ? "" : predicate(c, t, 0);
  std::string where_test = where, where_copy = where;
  if (!extra.empty()) where_test = where.empty() ? extra : "(" + where + ") AND " + extra;

  // The shape of the statement around the table.
  auto statement = [&](const std::string& source, const std::string& condition) {
    const std::string w = condition.empty() ? "" : " WHERE " + condition;
    switch (c.pick(6)) {
      case 0: return with + "SELECT t.source_file, t.line FROM " + source + w + " ORDER BY 1, 2";
      case 1: {
        const std::string limit = std::to_string(c.pick(6)), offset = std::to_string(c.pick(4));
        return with + "SELECT t.source_file, t.line FROM " + source + w + " ORDER BY 1, 2 LIMIT " + limit + " OFFSET " + offset;
      }
      case 2: return with + "SELECT DISTINCT t.job_id FROM " + source + w + " ORDER BY 1";
      case 3: return with + "SELECT t.job_id, count(*), max(t.line) FROM " + source + w + " GROUP BY 1 ORDER BY 1";
      case 4: return with + "SELECT count(*) FROM " + source + w;
      default:
        return with + "SELECT x.p, (SELECT count(*) FROM " + source + w + ") FROM dirs AS x";
    }
  };
  const size_t at = c.at;
  const std::string test_sql = statement(from, where_test);
  c.at = at;  // the same choices for the copy's statement
  const std::string copy_sql = statement(copy_from, where_copy);

  const Result test = run(test_sql, bind);
  static const bool print = std::getenv("PP_SQL_SHAPE_PRINT") != nullptr;  // replaying an input by hand
  if (print) std::fprintf(stderr, "%s\n  -> %s%zu rows\n", test_sql.c_str(), test.error.c_str(), test.rows.size());
  if (must_fail) {
    PP_FUZZ_CHECK(test.ok || test.error.rfind(name + ": ", 0) == 0, "error does not name %s: %s\n  SQL: %s",
                  name.c_str(), test.error.c_str(), test_sql.c_str());
    // Without an error only where the table was never read: no rows, or counts of 0.
    for (const std::string& row : test.rows)
      PP_FUZZ_CHECK(row.size() >= 4 && row.compare(row.size() - 4, 4, "1:0|") == 0,
                    "a shape without the argument returned %s\n  SQL: %s", row.c_str(), test_sql.c_str());
    return 0;
  }
  const Result copy = run(copy_sql, false);
  PP_FUZZ_CHECK(test.ok == copy.ok, "one query failed: %s%s\n  SQL: %s\n  copy: %s", test.error.c_str(),
                copy.error.c_str(), test_sql.c_str(), copy_sql.c_str());
  if (!test.ok) return 0;
  PP_FUZZ_CHECK(test.rows == copy.rows, "rows differ (%zu vs %zu)\n  SQL: %s\n  copy: %s\n  first: %s vs %s",
                test.rows.size(), copy.rows.size(), test_sql.c_str(), copy_sql.c_str(),
                test.rows.empty() ? "-" : test.rows[0].c_str(), copy.rows.empty() ? "-" : copy.rows[0].c_str());
  return 0;
}
