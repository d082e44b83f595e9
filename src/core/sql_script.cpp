#include "core/sql_script.hpp"

#include <functional>
#include <regex>

#include "core/errors.hpp"

namespace pp {
namespace {

struct Statement {
  sqlite3_stmt* stmt = nullptr;
  ~Statement() { sqlite3_finalize(stmt); }
};

void bind(sqlite3_stmt* stmt, const std::vector<SqlParameter>& params) {
  const int wanted = sqlite3_bind_parameter_count(stmt);
  for (int i = 1; i <= wanted && i <= static_cast<int>(params.size()); ++i) {
    const SqlParameter& p = params[static_cast<size_t>(i - 1)];
    if (p.kind == SqlParameter::kReal) sqlite3_bind_double(stmt, i, p.real);
    else if (p.kind == SqlParameter::kText)
      sqlite3_bind_text(stmt, i, p.text.c_str(), static_cast<int>(p.text.size()), SQLITE_TRANSIENT);
    else sqlite3_bind_null(stmt, i);
  }
}

}  // namespace

long long run_sql_script(sqlite3* db, const std::string& script, const std::vector<SqlParameter>& params,
                         const char* function) {
  long long changes = 0;
  const char* tail = script.c_str();
  while (tail && *tail) {
    Statement s;
    const char* next = nullptr;
    if (sqlite3_prepare_v2(db, tail, -1, &s.stmt, &next) != SQLITE_OK)
      throw Error(std::string(function) + ": " + sqlite3_errmsg(db));
    tail = next;
    if (!s.stmt) continue;  // whitespace or a comment
    bind(s.stmt, params);
    int rc;
    while ((rc = sqlite3_step(s.stmt)) == SQLITE_ROW) {
    }
    if (rc != SQLITE_DONE) throw Error(std::string(function) + ": " + sqlite3_errmsg(db));
    changes += sqlite3_changes(db);
  }
  return changes;
}

double query_double(sqlite3* db, const std::string& sql, const std::vector<SqlParameter>& params,
                    const char* function, double fallback) {
  Statement s;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s.stmt, nullptr) != SQLITE_OK)
    throw Error(std::string(function) + ": " + sqlite3_errmsg(db));
  bind(s.stmt, params);
  const int rc = sqlite3_step(s.stmt);
  if (rc == SQLITE_ROW)
    return sqlite3_column_type(s.stmt, 0) == SQLITE_NULL ? fallback : sqlite3_column_double(s.stmt, 0);
  if (rc != SQLITE_DONE) throw Error(std::string(function) + ": " + sqlite3_errmsg(db));
  return fallback;
}

namespace {

// Names after "CREATE <kind> IF NOT EXISTS" in the extension's own SQL, in order.
std::vector<std::string> created_objects(const std::string& sql, const char* kind) {
  const std::regex pattern(std::string("CREATE (?:TEMP )?") + kind + " IF NOT EXISTS (\\w+)");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(sql.begin(), sql.end(), pattern); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1].str());
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string attribution_sql() {
  return std::string(embedded_sql("schema")) + embedded_sql("views") + embedded_sql("estimates");
}

}  // namespace

std::string attribution_objects() {
  const std::string sql = attribution_sql();
  return "tables: " + joined(created_objects(sql, "TABLE")) + "; views: " + joined(created_objects(sql, "VIEW"));
}

// Views hold no data, so a database made by another version of the extension gets this
// version's views: they are recreated whenever the text that defines them changes.
void install_attribution_schema(sqlite3* db, const char* function) {
  run_sql_script(db, embedded_sql("schema"), {}, function);
  const std::string views = std::string(embedded_sql("views")) + embedded_sql("estimates");
  const std::string fingerprint = std::to_string(std::hash<std::string>{}(views));
  const bool current = query_double(db, "SELECT count(*) FROM main.pp_meta WHERE key = 'views' AND value = ?1",
                                    {SqlParameter::of(fingerprint)}, function, 0) > 0;
  if (!current) {
    std::string drops;
    for (const std::string& view : created_objects(views, "VIEW")) drops += "DROP VIEW IF EXISTS main." + view + ";";
    run_sql_script(db, drops, {}, function);
  }
  run_sql_script(db, views, {}, function);
  if (!current)
    run_sql_script(db, "INSERT OR REPLACE INTO main.pp_meta(key, value) VALUES ('views', ?1)",
                   {SqlParameter::of(fingerprint)}, function);
}

}  // namespace pp
