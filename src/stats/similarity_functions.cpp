// Dedup by similarity as SQL (paper §III.B); the comparison itself is in src/stats/similarity.hpp.
//   pp_similar(a, b, rel_tol [, abs_tol])   1 when every component of a is within tolerance of
//                                           b's, else 0; NULL when a or b is NULL
//   pp_novel(v, rel_tol [, abs_tol]) OVER (PARTITION BY ... ORDER BY ...)
//                                           1 for a row that differs beyond tolerance from the
//                                           last kept (novel) row of its partition, else 0
// a, b and v are numbers or JSON arrays of numbers (a number is a one-element array).
//
// How pp_novel works as a window function. "The last kept row" depends on every earlier row in
// order, so the function needs to see the rows one by one, in order, each followed by its own
// result: the default frame (RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) over an ORDER BY
// that is unique within the partition, or ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW.
// There SQLite calls xStep(row k) then xValue (the result of row k), and the state keeps the
// last kept vector and the current row's result. Every other frame breaks that rhythm in a way
// the callbacks can see, and each is an error rather than a wrong answer:
//   xInverse at all                   a frame that drops rows from its start (sliding);
//   two xStep before a result         peers (tied ORDER BY values, or no ORDER BY), a frame
//                                     that reaches past the current row, EXCLUDE, or use
//                                     without OVER;
//   a result with no xStep before it  a frame that ends before the current row, or FILTER;
//   the result asked of xFinal        EXCLUDE (each row's frame evaluated afresh, the first
//                                     one empty), or a call without OVER (also over no rows).
#include <cmath>
#include <memory>

#include "core/guard.hpp"
#include "core/sql_values.hpp"
#include "stats/similarity.hpp"
#include "stats/stats_functions.hpp"

namespace pp {
namespace {

constexpr const char* kSimilar = "pp_similar";
constexpr const char* kNovel = "pp_novel";

// A number, or TEXT holding a JSON number or array of numbers. The caller handles NULL.
Components components_argument(sqlite3_value* value, const char* argument) {
  switch (sqlite3_value_type(value)) {
    case SQLITE_INTEGER: return Components{static_cast<double>(sqlite3_value_int64(value))};
    case SQLITE_FLOAT: return Components{sqlite3_value_double(value)};
    case SQLITE_TEXT:
      if (auto components = parse_components(required_text(value, argument))) return *components;
      break;
    default: break;
  }
  throw argument_error(argument, "must be a number or a JSON array of numbers");
}

double tolerance_argument(sqlite3_value* value, const char* argument) {
  const double tolerance = required_double(value, argument);
  if (!(tolerance >= 0)) throw argument_error(argument, "must be >= 0");
  if (!std::isfinite(tolerance)) throw argument_error(argument, "must be finite");
  return tolerance;
}

Tolerance tolerance_arguments(int argc, sqlite3_value** argv, int first) {
  Tolerance tolerance;
  tolerance.relative = tolerance_argument(argv[first], "rel_tol");
  if (argc > first + 1) tolerance.absolute = tolerance_argument(argv[first + 1], "abs_tol");
  return tolerance;
}

// ---- pp_similar ----

void similar_function(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  guard_function(ctx, kSimilar, [&] {
    const Tolerance tolerance = tolerance_arguments(argc, argv, 2);
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
      sqlite3_result_null(ctx);
      return;
    }
    const Components a = components_argument(argv[0], "a");
    const Components b = components_argument(argv[1], "b");
    sqlite3_result_int(ctx, similar(a, b, tolerance) ? 1 : 0);
  });
}

// ---- pp_novel ----

constexpr const char* kTwoRowsOneResult =
    "needs the default frame, one row at a time: got a second row before the result of "
    "the first (ORDER BY values tied within the partition, no ORDER BY, a frame reaching past the "
    "current row, EXCLUDE, or a call without OVER); order by something unique, e.g. ORDER BY ts, rowid";
constexpr const char* kResultWithoutRow =
    "needs the default frame, one row at a time: asked for the result of a row it was "
    "not given (a frame ending before the current row, or a FILTER clause; pass NULL instead of "
    "filtering)";
constexpr const char* kNotAWindow =
    "needs the default frame, one row at a time: use it as a window function, "
    "pp_novel(v, rel_tol) OVER (PARTITION BY ... ORDER BY ...), without EXCLUDE";
constexpr const char* kSliding =
    "needs the default frame (RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW): this "
    "frame drops rows from its start";

struct NovelState {
  Components kept;         // the last kept (novel) row of the partition
  bool have_kept = false;  // false until the first non-NULL row
  bool pending = false;    // a row was stepped and its result not yet taken
  int result = 0;          // that row's result: 1, 0, or -1 for NULL (a NULL v)
};

// The aggregate context holds a pointer to the C++ state, which xFinal deletes. SQLite calls
// xFinal for every context that was allocated, also when a statement fails or is reset.
NovelState& novel_state(sqlite3_context* ctx) {
  auto** slot = static_cast<NovelState**>(sqlite3_aggregate_context(ctx, sizeof(NovelState*)));
  if (!slot) throw std::bad_alloc();
  if (!*slot) *slot = new NovelState();
  return **slot;
}

NovelState* existing_novel_state(sqlite3_context* ctx) {
  auto** slot = static_cast<NovelState**>(sqlite3_aggregate_context(ctx, 0));
  return slot ? *slot : nullptr;
}

void result_novel(sqlite3_context* ctx, NovelState& state) {
  state.pending = false;
  if (state.result < 0) {
    sqlite3_result_null(ctx);
  } else {
    sqlite3_result_int(ctx, state.result);
  }
}

void novel_step(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  guard_function(ctx, kNovel, [&] {
    NovelState& state = novel_state(ctx);
    if (state.pending) throw Error(kTwoRowsOneResult);
    const Tolerance tolerance = tolerance_arguments(argc, argv, 1);
    state.pending = true;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
      state.result = -1;  // a NULL row is not judged and does not become the kept row
      return;
    }
    Components row = components_argument(argv[0], "v");
    if (state.have_kept && similar(row, state.kept, tolerance)) {
      state.result = 0;
    } else {
      state.kept = std::move(row);
      state.have_kept = true;
      state.result = 1;
    }
  });
}

void novel_inverse(sqlite3_context* ctx, int, sqlite3_value**) {
  guard_function(ctx, kNovel, [&] { throw Error(kSliding); });
}

void novel_value(sqlite3_context* ctx) {
  guard_function(ctx, kNovel, [&] {
    NovelState* state = existing_novel_state(ctx);
    if (!state || !state->pending) throw Error(kResultWithoutRow);
    result_novel(ctx, *state);
  });
}

// End of a partition, where every row has had its result and this one is unused. A row still
// pending, or no row at all, means SQLite wants the result from xFinal: it evaluates each row's
// frame afresh (EXCLUDE; the first row's frame is empty) or runs pp_novel as a plain aggregate,
// and neither gives rows one at a time. (A window over no rows calls nothing.)
void novel_final(sqlite3_context* ctx) {
  NovelState* state = existing_novel_state(ctx);
  guard_function(ctx, kNovel, [&] {
    if (!state || state->pending) throw Error(kNotAWindow);
    sqlite3_result_null(ctx);
  });
  delete state;
  if (auto** slot = static_cast<NovelState**>(sqlite3_aggregate_context(ctx, 0))) *slot = nullptr;
}

}  // namespace

std::vector<SqlFunction> similarity_functions() {
  std::vector<SqlFunction> functions;
  for (int arguments : {3, 4}) functions.push_back(scalar(kSimilar, arguments, kPureFunction, similar_function));
  for (int arguments : {2, 3})
    functions.push_back(window(kNovel, arguments, kPureFunction, novel_step, novel_final, novel_value, novel_inverse));
  return functions;
}

}  // namespace pp
