// pp_deconvolve: per-layer values from blended samples, as an SQL aggregate. The estimator is
// stats/deconvolve.hpp; docs/reference/deconvolve.md is the user documentation.
//
//   pp_deconvolve(sample_id, layer_key, weight, value [, lower, upper])   aggregate -> JSON
//
// One row per (sample window, layer): sample_id any SQL value naming the window, layer_key the
// unknown, weight the overlap fraction of the window, value the sample's value (the same on all
// rows of a sample), lower/upper optional bounds of every unknown (NULL: none).
// xStep only checks and collects the rows (the state is a heap object whose pointer lives in
// the aggregate context); xFinal solves, returns the JSON and frees the state, also when the
// statement fails or is interrupted (SQLite calls xFinal to release every aggregate context).
#include <cmath>
#include <memory>

#include "core/errors.hpp"
#include "core/guard.hpp"
#include "core/interrupt.hpp"
#include "core/number_text.hpp"
#include "core/sql_values.hpp"
#include "stats/deconvolve.hpp"
#include "stats/sample_key.hpp"
#include "stats/stats_functions.hpp"

namespace pp {
namespace {

constexpr const char* kName = "pp_deconvolve";

// The aggregate context holds a pointer to the heap state; nullptr slot when none was made.
DeconvolveData** state_slot(sqlite3_context* ctx, bool create) {
  auto** slot = static_cast<DeconvolveData**>(sqlite3_aggregate_context(ctx, create ? sizeof(DeconvolveData*) : 0));
  if (!slot && create) throw std::bad_alloc();
  return slot;
}

std::string sample_key(sqlite3_value* value) {
  switch (sqlite3_value_type(value)) {
    case SQLITE_INTEGER: return sample_key_integer(sqlite3_value_int64(value));
    case SQLITE_FLOAT: return sample_key_real(sqlite3_value_double(value));
    case SQLITE_TEXT: {
      const unsigned char* text = sqlite3_value_text(value);
      if (!text) throw std::bad_alloc();
      return sample_key_text(std::string_view(reinterpret_cast<const char*>(text),
                                              static_cast<size_t>(sqlite3_value_bytes(value))));
    }
    case SQLITE_BLOB: {
      const void* blob = sqlite3_value_blob(value);
      return sample_key_blob(blob, blob ? static_cast<size_t>(sqlite3_value_bytes(value)) : 0);
    }
    default: throw argument_error("sample_id", "is NULL");
  }
}

// The largest magnitude of a weight, value or bound: the fit squares and sums them, and past
// this their squares would leave the doubles' range (1.8e308).
constexpr double kLargestInput = 1e150;

// A number argument within +-kLargestInput.
double fit_number(sqlite3_value* value, const char* argument) {
  const double x = required_double(value, argument);
  if (std::isfinite(x) && std::fabs(x) > kLargestInput) {  // (not finite: refused by name later)
    throw Error(std::string("argument '") + argument + "' is " + number_text(x) +
                ": beyond 1e150 in magnitude the squares the fit sums overflow; scale the values (and bounds) first");
  }
  return x;
}

// A bound argument: NULL is no bound (-inf or +inf).
double bound(sqlite3_value* value, const char* argument, double none) {
  if (sqlite3_value_type(value) == SQLITE_NULL) return none;
  return fit_number(value, argument);
}

void step(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  guard_function(ctx, kName, [&] {
    // Everything is read and checked before the state is touched.
    const std::string key = sample_key(argv[0]);
    // (A BLOB's bytes read as text would name another layer than the one stored as text.)
    if (sqlite3_value_type(argv[1]) == SQLITE_BLOB) throw argument_error("layer_key", "is a BLOB; it needs text");
    const std::string layer = required_text(argv[1], "layer_key");
    const double weight =
        sqlite3_value_type(argv[2]) == SQLITE_NULL ? 0.0 : required_double(argv[2], "weight");
    std::optional<double> value;
    if (sqlite3_value_type(argv[3]) != SQLITE_NULL) value = fit_number(argv[3], "value");
    double lower = -INFINITY, upper = INFINITY;
    if (argc == 6) {
      lower = bound(argv[4], "lower", -INFINITY);
      upper = bound(argv[5], "upper", INFINITY);
    }
    DeconvolveData** slot = state_slot(ctx, true);
    if (!*slot) *slot = new DeconvolveData();
    (*slot)->set_bounds(lower, upper);
    (*slot)->add(key, layer, weight, value);
  });
}

void final(sqlite3_context* ctx) {
  guard_function(ctx, kName, [&] {
    DeconvolveData** slot = state_slot(ctx, false);
    std::unique_ptr<DeconvolveData> state(slot ? *slot : nullptr);  // freed on every path out of here
    if (slot) *slot = nullptr;
    if (!state) {
      sqlite3_result_null(ctx);  // no rows, like avg()
      return;
    }
    InterruptCheck interrupted(sqlite3_context_db_handle(ctx));
    result_text(ctx, deconvolve_json(deconvolve(*state, [&] { interrupted.check(); })));
  });
}

}  // namespace

void pp_deconvolve_step(sqlite3_context* ctx, int argc, sqlite3_value** argv) { step(ctx, argc, argv); }
void pp_deconvolve_final(sqlite3_context* ctx) { final(ctx); }

}  // namespace pp
