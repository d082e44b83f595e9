// Per-layer values from blended samples: the estimator behind pp_deconvolve
// (docs/reference/deconvolve.md is the user documentation).
//
// A DCGM sample is the average over its window, so with the overlap fraction A_ik of window i
// spent in layer k (the idle/untracked time being one more "layer"),
//     y_i = sum_k A_ik x_k + noise_i,
// and the per-layer values x solve a bounded linear least-squares problem over many windows
// whose mix of layers differs a little. This header is the numerics only (no SQLite):
//   DeconvolveData    the rows as pp_deconvolve's xStep receives them, checked and compacted
//                     (an unusable value throws pp::Error naming the argument)
//   deconvolve()      bounded least squares (stats/bvls.hpp) + standard errors, 90% intervals
//                     (stats/student_t.hpp) and an `identified` verdict per unknown
//   deconvolve_json() the result as pp_deconvolve returns it (deconvolve_json.cpp)
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "stats/least_squares_state.hpp"

namespace pp {

// Limits and tolerances, also quoted by docs/reference/deconvolve.md.
struct DeconvolveLimits {
  static constexpr size_t kMaxUnknowns = 1000;       // distinct layer keys (+ '(rest)')
  static constexpr double kWeightSlack = 1e-9;       // a weight may exceed 1 by this much
  static constexpr double kSumSlack = 1e-6;          // weights of one sample may sum to 1 + this
  static constexpr double kRestThreshold = 1e-6;     // a remainder above this makes '(rest)'
  static constexpr int64_t kMinSamples = 3;          // n below this: not identified
  // `identified` needs a 98% half-width of at most 5% of the estimate, or 0.1% of the scale
  static constexpr double kMaxRelativeHalfWidth = 0.05;
  static constexpr double kMinHalfWidth = 0.001;
  static constexpr double kCollinearVif = 1e10;      // 1 / (distance to the other columns)^2
};

// The rows of one pp_deconvolve group. Rows may come in any order; rows repeating a
// (sample, layer) pair add their weights.
class DeconvolveData {
 public:
  static constexpr const char* kRest = "(rest)";       // the implicit unknown of missing weight
  static constexpr const char* kSystemKey = "_system";  // reserved: the JSON key of the summary

  // One row. weight must be in [0, 1]; value is nullopt for SQL NULL (the row's weight still
  // counts when another row of the sample gives the value; a sample without any value is
  // skipped). Throws pp::Error naming the argument.
  void add(const std::string& sample_key, std::string_view layer, double weight, std::optional<double> value);
  // The index of an unknown, added when new (what add() does with its layer); throws pp::Error
  // as add() does for a reserved name or one unknown too many.
  uint32_t unknown(std::string_view layer) { return layer_index(layer); }
  // The rows of one sample, (unknown's index, weight) each, with one look-up of the sample: the
  // same as add() with each unknown's name in turn.
  void add_sample(const std::string& sample_key, const std::vector<std::pair<uint32_t, double>>& rows,
                  std::optional<double> value);
  // Room for this many rows of weight > 0 (a hint: more are taken as they come).
  void reserve(size_t rows) { entries_.reserve(rows); }
  // The bounds of the 6-argument form, on every row: the same on all rows, lower <= upper;
  // -inf/+inf for no bound.
  void set_bounds(double lower, double upper);

  // Rows kept only as their sums (stats/least_squares_state.hpp), solved with these rows as one
  // system; its unknowns are unknowns of the result even where no row here names them.
  void add_state(const LeastSquaresState& state) { prior_.merge(state); }
  // The rows as one state (with the states added): what add_state() takes back.
  // label_of names each unknown's label (default: the added states' labels).
  LeastSquaresState state(const std::function<std::string(const std::string&)>& label_of = nullptr) const;

  double lower() const { return lower_; }
  double upper() const { return upper_; }
  size_t rows() const { return rows_; }

 private:
  friend class DeconvolveSolver;
  friend struct CompactRows;
  struct Sample {
    double value = 0;
    bool has_value = false;
    double weight_sum = 0;
  };
  struct Entry {
    uint32_t sample;
    uint32_t layer;
    double weight;
  };
  uint32_t layer_index(std::string_view layer);
  static void check_row(double weight, std::optional<double> value);
  // add()'s row, checked; sample_index is the sample's, once the first row of it looked it up.
  void add_row(std::optional<uint32_t>& sample_index, const std::string& sample_key, uint32_t layer_id, double weight,
               std::optional<double> value);

  std::unordered_map<std::string, uint32_t> sample_index_;
  std::vector<Sample> samples_;
  std::unordered_map<std::string, uint32_t> layer_index_;
  std::vector<std::string> layers_;
  std::vector<Entry> entries_;  // weight > 0 only
  size_t rows_ = 0;
  LeastSquaresState prior_;
  bool bounds_set_ = false;
  double lower_ = -std::numeric_limits<double>::infinity();
  double upper_ = std::numeric_limits<double>::infinity();
};

// One unknown of the result. Optional fields are null in JSON: estimate without data (n = 0),
// std_error when it cannot be estimated (no residual degrees of freedom, or the layer is not
// separable from others), an interval end that is an infinite bound.
struct DeconvolveUnknown {
  std::string name;
  int64_t n = 0;  // samples in which the unknown has weight > 0
  std::optional<double> estimate, std_error, lower90, upper90;
  int at_bound = 0;  // -1 at the lower bound, +1 at the upper bound, 0 inside
  bool identified = false;
};

struct DeconvolveResult {
  std::vector<DeconvolveUnknown> unknowns;  // sorted by name
  int64_t samples = 0;                      // samples with a value
  int64_t free = 0;                         // unknowns with data strictly inside the bounds
  int64_t dof = 0;                          // samples - free
  std::optional<double> condition;          // 2-norm condition of A (columns with data); null: singular
  std::optional<double> condition_scaled;   // the same with unit-norm columns
  double residual_rms = 0;                  // sqrt(RSS / samples)
  std::optional<double> sigma;              // sqrt(RSS / dof), null when dof <= 0
  double t90 = 0;                           // the t quantile used for the 90% intervals
  double t98 = 0;                           // and the one `identified` is judged with (98%)
  double scale = 0;                         // the scale that `identified` compares widths with
  std::optional<double> lower, upper;       // the bounds every estimate was held within (none: nullopt)
  bool converged = true;
  int iterations = 0;
};

// `poll`, where given, runs between the solve's steps (stats/bvls.hpp): it may throw to stop it.
DeconvolveResult deconvolve(const DeconvolveData& data, const std::function<void()>& poll = {});
std::string deconvolve_json(const DeconvolveResult& result);
// The same system solved with its inputs perturbed within their uncertainty (windows moved by
// their timing uncertainty), as one result: the central estimate, each 90% interval widened by
// how far the variants move the estimate, added to the noise's half-width in quadrature (taken
// as independent errors; a pull by active bounds adds as it is), and `identified` judged again
// at 98% on the widened interval.
DeconvolveResult deconvolve_hull(const DeconvolveResult& central, const std::vector<DeconvolveResult>& variants);

}  // namespace pp
