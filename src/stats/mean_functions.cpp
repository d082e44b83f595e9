// Incremental means as SQL (paper §III.B): states that can be stored in a column and merged
// later without the rows they came from. The arithmetic and the BLOB format are in
// src/stats/mean_state.hpp; docs/reference/mean.md is the user documentation.
//   pp_mean(x [, w])          aggregate and window function: the state of the non-NULL x
//                             (weighted by w; NULL or zero w skips the row)
//   pp_mean_merge(a, b)       scalar: the state of both; NULL on either side gives the other
//   pp_mean_merge(state)      aggregate and window function: the state of all states
//   pp_mean_value(state), pp_mean_count, pp_mean_stddev, pp_mean_min, pp_mean_max,
//   pp_mean_json              readers; NULL in, NULL out
// The empty state is NULL: the aggregates return NULL when no row was folded in, like avg().
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/guard.hpp"
#include "core/sql_values.hpp"
#include "stats/mean_state.hpp"
#include "stats/stats_functions.hpp"

namespace pp {
namespace {

// The state argument `argument`; nullopt for NULL, an error for anything that is
// not a well-formed state BLOB.
std::optional<MeanState> state_argument(sqlite3_value* value, const char* argument) {
  if (sqlite3_value_type(value) == SQLITE_NULL) return std::nullopt;
  std::optional<MeanState> state;
  if (sqlite3_value_type(value) == SQLITE_BLOB)
    state = decode_mean_state(sqlite3_value_blob(value), static_cast<size_t>(sqlite3_value_bytes(value)));
  if (!state) throw argument_error(argument, "is not a pp_mean state");
  return state;
}

void result_state(sqlite3_context* ctx, const MeanState& state) {
  if (state.empty()) {
    sqlite3_result_null(ctx);
    return;
  }
  const std::string blob = encode_mean_state(state);
  sqlite3_result_blob(ctx, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
}

void result_optional(sqlite3_context* ctx, const std::optional<double>& value) {
  if (value) {
    sqlite3_result_double(ctx, *value);
  } else {
    sqlite3_result_null(ctx);
  }
}

// The running state of an aggregate; zero-filled memory is the empty state.
MeanState& running_state(sqlite3_context* ctx) {
  auto* state = static_cast<MeanState*>(sqlite3_aggregate_context(ctx, sizeof(MeanState)));
  if (!state) throw std::bad_alloc();
  return *state;
}

// The running state for xValue/xFinal, which must not allocate one: nullptr when no row came.
const MeanState* existing_state(sqlite3_context* ctx) {
  return static_cast<const MeanState*>(sqlite3_aggregate_context(ctx, 0));
}

// ---- pp_mean(x [, w]) ----

constexpr const char* kMean = "pp_mean";

// Reads one row's observation; false when the row is skipped (NULL x, NULL or zero w).
// Both arguments are checked even when the other makes the row skipped.
bool observation(int argc, sqlite3_value** argv, double& x, double& w) {
  bool skip = false;
  w = 1.0;
  if (argc == 2) {
    if (sqlite3_value_type(argv[1]) == SQLITE_NULL) {
      skip = true;
    } else {
      w = required_double(argv[1], "w");
      if (!std::isfinite(w) || w < 0) throw argument_error("w", "must be a finite number >= 0");
      if (w == 0) skip = true;
    }
  }
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return false;
  x = required_double(argv[0], "x");
  if (!std::isfinite(x)) throw argument_error("x", "must be finite");
  return !skip;
}

void mean_step(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  guard_function(ctx, kMean, [&] {
    double x = 0, w = 0;
    if (observation(argc, argv, x, w)) running_state(ctx).add(x, w);
  });
}

void mean_inverse(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  guard_function(ctx, kMean, [&] {
    double x = 0, w = 0;
    if (observation(argc, argv, x, w)) running_state(ctx).remove(x, w);
  });
}

template <const char* const* kName>
void state_value(sqlite3_context* ctx) {  // xValue and xFinal: the state so far, never freed here
  guard_function(ctx, *kName, [&] {
    const MeanState* state = existing_state(ctx);
    result_state(ctx, state ? *state : MeanState{});
  });
}

// ---- pp_mean_merge ----

constexpr const char* kMerge = "pp_mean_merge";

void merge_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
  guard_function(ctx, kMerge, [&] {
    if (auto state = state_argument(argv[0], "state")) running_state(ctx).merge(*state);
  });
}

void merge_inverse(sqlite3_context* ctx, int, sqlite3_value** argv) {
  guard_function(ctx, kMerge, [&] {
    if (auto state = state_argument(argv[0], "state")) running_state(ctx).unmerge(*state);
  });
}

void merge_scalar(sqlite3_context* ctx, int, sqlite3_value** argv) {
  guard_function(ctx, kMerge, [&] {
    const auto a = state_argument(argv[0], "a");
    const auto b = state_argument(argv[1], "b");
    MeanState merged = a ? *a : MeanState{};
    if (b) merged.merge(*b);
    result_state(ctx, merged);
  });
}

// ---- readers ----

constexpr const char* kValue = "pp_mean_value";
constexpr const char* kCount = "pp_mean_count";
constexpr const char* kStddev = "pp_mean_stddev";
constexpr const char* kMin = "pp_mean_min";
constexpr const char* kMax = "pp_mean_max";
constexpr const char* kJson = "pp_mean_json";

template <const char* const* kName, class Read>
void read_state(sqlite3_context* ctx, sqlite3_value** argv, Read read) {
  guard_function(ctx, *kName, [&] {
    const auto state = state_argument(argv[0], "state");
    if (!state) {
      sqlite3_result_null(ctx);
      return;
    }
    read(*state);
  });
}

void mean_value(sqlite3_context* ctx, int, sqlite3_value** argv) {
  read_state<&kValue>(ctx, argv, [&](const MeanState& s) { result_optional(ctx, s.value()); });
}

void mean_count(sqlite3_context* ctx, int, sqlite3_value** argv) {
  read_state<&kCount>(ctx, argv, [&](const MeanState& s) { sqlite3_result_int64(ctx, s.count); });
}

void mean_stddev(sqlite3_context* ctx, int, sqlite3_value** argv) {
  read_state<&kStddev>(ctx, argv, [&](const MeanState& s) { result_optional(ctx, s.stddev()); });
}

void mean_min(sqlite3_context* ctx, int, sqlite3_value** argv) {
  read_state<&kMin>(ctx, argv, [&](const MeanState& s) { result_optional(ctx, s.minimum()); });
}

void mean_max(sqlite3_context* ctx, int, sqlite3_value** argv) {
  read_state<&kMax>(ctx, argv, [&](const MeanState& s) { result_optional(ctx, s.maximum()); });
}

nlohmann::ordered_json json_number(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

void mean_json(sqlite3_context* ctx, int, sqlite3_value** argv) {
  read_state<&kJson>(ctx, argv, [&](const MeanState& s) {
    nlohmann::ordered_json out;
    out["count"] = s.count;
    out["weight"] = s.empty() ? 0.0 : s.weight;
    out["mean"] = json_number(s.value());
    out["stddev"] = json_number(s.stddev());
    out["min"] = json_number(s.minimum());
    out["max"] = json_number(s.maximum());
    out["m2"] = s.m2_lost ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.empty() ? 0.0 : s.m2);
    result_text(ctx, out.dump());
  });
}

}  // namespace

std::vector<SqlFunction> mean_functions() {
  std::vector<SqlFunction> functions;
  for (int arguments : {1, 2})
    functions.push_back(window(kMean, arguments, kPureFunction, mean_step, state_value<&kMean>, state_value<&kMean>,
                               mean_inverse));
  functions.push_back(
      window(kMerge, 1, kPureFunction, merge_step, state_value<&kMerge>, state_value<&kMerge>, merge_inverse));
  functions.push_back(scalar(kMerge, 2, kPureFunction, merge_scalar));
  for (const auto& [name, reader] : {std::pair{kValue, &mean_value}, {kCount, mean_count}, {kStddev, mean_stddev},
                                     {kMin, mean_min}, {kMax, mean_max}, {kJson, mean_json}})
    functions.push_back(scalar(name, 1, kPureFunction, reader));
  return functions;
}

}  // namespace pp
