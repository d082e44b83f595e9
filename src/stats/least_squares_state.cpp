// LeastSquaresState (stats/least_squares_state.hpp): sums of cross-products, and their encoding.
#include "stats/least_squares_state.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "core/errors.hpp"

namespace pp {

namespace {

// The encoding, little-endian: "PPLS", version (u32), p (u32), rows (i64), max |y| (f64),
// y^T y (f64); per unknown: name and label (u32 length + UTF-8 each), rows (i64), A_i^T y (f64);
// then A^T A's upper triangle column by column (p (p + 1) / 2 f64).
constexpr char kMagic[4] = {'P', 'P', 'L', 'S'};
constexpr uint32_t kVersion = 1;

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_text(std::string& out, const std::string& text) {
  put(out, static_cast<uint32_t>(text.size()));
  out += text;
}

class Reader {
 public:
  explicit Reader(std::string_view blob) : blob_(blob) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, blob_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string text() {
    const auto size = get<uint32_t>();
    need(size);
    std::string out(blob_.substr(at_, size));
    at_ += size;
    return out;
  }
  bool done() const { return at_ == blob_.size(); }
  size_t left() const { return blob_.size() - at_; }
  void need(size_t bytes) const {
    if (blob_.size() - at_ < bytes) throw Error("estimator state: the blob ends early (truncated or not a state)");
  }

 private:
  std::string_view blob_;
  size_t at_ = 0;
};

// The most rows a state counts, in all and per unknown: far beyond any data (a window every ms
// for 285,000 years), and far enough below 2^63 that the solver's sums of counts cannot overflow.
constexpr int64_t kMaxRows = int64_t{1} << 53;

}  // namespace

size_t LeastSquaresState::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? unknowns_.size() : it->second;
}

size_t LeastSquaresState::unknown(const std::string& name, const std::string& label) {
  const auto [it, added] = index_.try_emplace(name, unknowns_.size());
  if (added) {
    unknowns_.push_back({name, label, 0});
    cross_.resize(cross_.size() + unknowns_.size(), 0.0);
    cross_value_.push_back(0.0);
  }
  return it->second;
}

void LeastSquaresState::add_row(const std::vector<std::pair<size_t, double>>& weights, double value) {
  bool ascending = true;
  for (size_t t = 1; t < weights.size() && ascending; ++t) ascending = weights[t - 1].first < weights[t].first;
  for (size_t t = 0; t < weights.size(); ++t) {
    const auto [j, b] = weights[t];
    if (b > 0) ++unknowns_[j].rows;
    cross_value_[j] += b * value;
    if (ascending) {
      // Column j's entries of this row lie at j (j + 1) / 2 + i for the row's i <= j: no
      // packed() per product (the retention adds hundreds of thousands of full rows).
      double* column = cross_.data() + j * (j + 1) / 2;
      for (size_t s = 0; s <= t; ++s) column[weights[s].first] += weights[s].second * b;
    } else {
      for (size_t s = 0; s <= t; ++s) cross_[packed(weights[s].first, j)] += weights[s].second * b;
    }
  }
  value_squares_ += value * value;
  max_abs_value_ = std::max(max_abs_value_, std::fabs(value));
  ++rows_;
}

LeastSquaresState LeastSquaresState::with_values(std::vector<double> cross_value, double value_squares,
                                                 double max_abs_value) const {
  if (cross_value.size() != unknowns_.size())
    throw std::invalid_argument("LeastSquaresState::with_values: one A^T y entry per unknown");
  LeastSquaresState out = *this;
  out.cross_value_ = std::move(cross_value);
  out.value_squares_ = value_squares;
  out.max_abs_value_ = max_abs_value;
  return out;
}

void LeastSquaresState::merge(const LeastSquaresState& other,
                              const std::function<std::string(const std::string&)>& rename) {
  // (Counts are never negative: add_row and decode see to it.)
  const auto overflows = [](int64_t a, int64_t b) { return b > kMaxRows - a; };
  if (overflows(rows_, other.rows_))
    throw Error("estimator states: merged, they would count more than 2^53 rows");
  std::vector<size_t> here(other.unknowns_.size());
  for (size_t i = 0; i < other.unknowns_.size(); ++i) {
    const auto& u = other.unknowns_[i];
    here[i] = unknown(rename ? rename(u.name) : u.name, u.label);
  }
  std::vector<int64_t> rows_after(unknowns_.size());
  for (size_t i = 0; i < unknowns_.size(); ++i) rows_after[i] = unknowns_[i].rows;
  for (size_t j = 0; j < other.unknowns_.size(); ++j) {
    if (overflows(rows_after[here[j]], other.unknowns_[j].rows))
      throw Error("estimator states: merged, unknown '" + unknowns_[here[j]].name + "' would count more than 2^53 rows");
    rows_after[here[j]] += other.unknowns_[j].rows;
  }
  for (size_t j = 0; j < other.unknowns_.size(); ++j) {
    unknowns_[here[j]].rows += other.unknowns_[j].rows;
    cross_value_[here[j]] += other.cross_value_[j];
    for (size_t i = 0; i <= j; ++i) {
      // Two of the other's unknowns that become one add both cross-products with each other.
      const double c = other.cross_[packed(i, j)];
      cross_[packed(here[i], here[j])] += (i != j && here[i] == here[j]) ? 2 * c : c;
    }
  }
  value_squares_ += other.value_squares_;
  max_abs_value_ = std::max(max_abs_value_, other.max_abs_value_);
  rows_ += other.rows_;
}

std::string LeastSquaresState::encode() const {
  std::string out(kMagic, sizeof kMagic);
  put(out, kVersion);
  put(out, static_cast<uint32_t>(unknowns_.size()));
  put(out, rows_);
  put(out, max_abs_value_);
  put(out, value_squares_);
  for (size_t i = 0; i < unknowns_.size(); ++i) {
    put_text(out, unknowns_[i].name);
    put_text(out, unknowns_[i].label);
    put(out, unknowns_[i].rows);
    put(out, cross_value_[i]);
  }
  for (double c : cross_) put(out, c);
  return out;
}

LeastSquaresState LeastSquaresState::decode(std::string_view blob) {
  Reader in(blob);
  in.need(sizeof kMagic);
  if (std::memcmp(blob.data(), kMagic, sizeof kMagic) != 0) throw Error("estimator state: not a state (no 'PPLS' mark)");
  in.get<uint32_t>();  // the magic, read as a number
  const auto version = in.get<uint32_t>();
  if (version != kVersion)
    throw Error("estimator state: version " + std::to_string(version) + ", this extension reads version " +
                std::to_string(kVersion));
  LeastSquaresState state;
  const auto p = in.get<uint32_t>();
  state.rows_ = in.get<int64_t>();
  state.max_abs_value_ = in.get<double>();
  state.value_squares_ = in.get<double>();
  // Each unknown takes at least its two text lengths, rows and A^T y entry, and the cross
  // products p (p + 1) / 2 numbers: a count the bytes cannot hold is refused before any room
  // is made for it.
  const double p_bytes = static_cast<double>(p) * 24 + static_cast<double>(p) * (static_cast<double>(p) + 1) / 2 * 8;
  if (p_bytes > static_cast<double>(in.left()))
    throw Error("estimator state: the blob ends early (truncated or not a state)");
  // Counts and sums a damaged or forged state could hold that no rows give: the solver sizes
  // its work by the counts.
  if (state.rows_ < 0 || state.rows_ > kMaxRows)
    throw Error("estimator state: a row count of " + std::to_string(state.rows_) + " (0 to 2^53)");
  if (!(std::isfinite(state.max_abs_value_) && state.max_abs_value_ >= 0) ||
      !(std::isfinite(state.value_squares_) && state.value_squares_ >= 0))
    throw Error("estimator state: the values' sums are not finite and non-negative");
  for (uint32_t i = 0; i < p; ++i) {
    std::string name = in.text(), label = in.text();
    if (state.find(name) != state.unknowns_.size()) throw Error("estimator state: unknown '" + name + "' twice");
    const size_t index = state.unknown(name, label);
    state.unknowns_[index].rows = in.get<int64_t>();
    state.cross_value_[index] = in.get<double>();
    if (state.unknowns_[index].rows < 0 || state.unknowns_[index].rows > kMaxRows)
      throw Error("estimator state: unknown '" + name + "' has a row count of " +
                  std::to_string(state.unknowns_[index].rows) + " (0 to 2^53)");
    if (!std::isfinite(state.cross_value_[index])) throw Error("estimator state: a sum that is not finite");
  }
  for (double& c : state.cross_) {
    c = in.get<double>();
    if (!std::isfinite(c)) throw Error("estimator state: a sum that is not finite");
  }
  if (!in.done()) throw Error("estimator state: bytes after the end of the state");
  // What sums of rows always satisfy (to rounding): no unknown in more rows than the state
  // has, each A_k^T A_k at least 0, (A_k^T y)^2 at most A_k^T A_k y^T y (Cauchy-Schwarz), and
  // y^T y at most the rows times the largest value squared (a forged sum that passed the checks
  // above moved an estimate from 0.89 to 0.01 unsaid).
  constexpr double kRounding = 1e-6;  // (far above the rounding of sums over a billion rows)
  if (state.value_squares_ > static_cast<double>(state.rows_) * state.max_abs_value_ * state.max_abs_value_ *
                                 (1 + kRounding))
    throw Error("estimator state: its values' squares sum to more than its rows of its largest value give");
  for (size_t k = 0; k < state.unknowns_.size(); ++k) {
    const std::string& name = state.unknowns_[k].name;
    if (state.unknowns_[k].rows > state.rows_)
      throw Error("estimator state: unknown '" + name + "' is in " + std::to_string(state.unknowns_[k].rows) +
                  " rows of a state of " + std::to_string(state.rows_));
    const double squares = state.cross(k, k), with_values = state.cross_value_[k];
    if (squares < 0 || with_values * with_values > squares * state.value_squares_ * (1 + kRounding))
      throw Error("estimator state: unknown '" + name + "' has sums no rows give (a negative sum of squares, or "
                  "one beyond what the values' squares allow)");
  }
  return state;
}

}  // namespace pp
