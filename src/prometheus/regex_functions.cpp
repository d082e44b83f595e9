// Regular expressions in PromQL's dialect (RE2), so a filter written for Prometheus means the
// same in SQL:
//   regexp(pattern, text)    backs SQLite's `text REGEXP pattern` operator (SQLite ships none):
//                            1 when pattern matches anywhere in text.
//   prom_match(regex, text)  PromQL's `=~`: 1 only when regex matches the WHOLE text.
// Both return NULL when either argument is NULL. A compiled pattern is kept with
// sqlite3_set_auxdata, so a statement compiles each constant pattern once (as regexp.c does).
#include <re2/re2.h>

#include <memory>

#include "core/guard.hpp"
#include "core/sql_values.hpp"
#include "core/text.hpp"
#include "prometheus/prometheus_tables.hpp"

namespace pp {
namespace {

const RE2& compiled_pattern(sqlite3_context* ctx, sqlite3_value* pattern_value, const char* argument) {
  if (auto* cached = static_cast<RE2*>(sqlite3_get_auxdata(ctx, 0))) return *cached;
  const std::string pattern = required_text(pattern_value, argument);
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_unique<RE2>(pattern, options);
  if (!re->ok())
    // (RE2's error quotes the pattern from where it failed: a long one is cut, not echoed whole.)
    throw argument_error(argument, "is not a valid regular expression: " + valid_utf8(re->error(), 200));
  RE2* raw = re.release();
  sqlite3_set_auxdata(ctx, 0, raw, [](void* p) { delete static_cast<RE2*>(p); });
  // set_auxdata may have freed raw already (out of memory); fetch what SQLite kept.
  if (auto* kept = static_cast<RE2*>(sqlite3_get_auxdata(ctx, 0))) return *kept;
  throw std::bad_alloc();
}

template <bool kFullMatch>
void match(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const char* name = kFullMatch ? "prom_match" : "regexp";
  guard_function(ctx, name, [&] {
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
      sqlite3_result_null(ctx);
      return;
    }
    const RE2& re = compiled_pattern(ctx, argv[0], kFullMatch ? "regex" : "pattern");
    const char* text = reinterpret_cast<const char*>(sqlite3_value_text(argv[1]));
    if (!text) throw std::bad_alloc();
    const re2::StringPiece subject(text, static_cast<size_t>(sqlite3_value_bytes(argv[1])));
    const bool matched = kFullMatch ? RE2::FullMatch(subject, re) : RE2::PartialMatch(subject, re);
    sqlite3_result_int(ctx, matched ? 1 : 0);
  });
}

}  // namespace

void regexp_function(sqlite3_context* ctx, int argc, sqlite3_value** argv) { match<false>(ctx, argc, argv); }
void prom_match_function(sqlite3_context* ctx, int argc, sqlite3_value** argv) { match<true>(ctx, argc, argv); }

}  // namespace pp
