#include "attribution/stretch_sums.hpp"

#include <algorithm>
#include <cmath>

#include "attribution/stretch_read.hpp"
#include "core/errors.hpp"
#include "core/statement.hpp"
#include "core/stored_numbers.hpp"
#include "events/event_fields.hpp"

namespace pp {

void Uint256::add_at(size_t limb, uint64_t value) {
  for (; value && limb < 4; ++limb) {
    const uint64_t before = limbs_[limb];
    limbs_[limb] += value;
    value = limbs_[limb] < before ? 1 : 0;
  }
  if (value) throw Error("a timing sum passed 2^256");  // (2^28 stretches of the largest terms reach 2^256)
}

void Uint256::add(Uint128 value) {
  add_at(0, static_cast<uint64_t>(value));
  add_at(1, static_cast<uint64_t>(value >> 64));
}

void Uint256::add_product(Uint128 a, Uint128 b) {
  const uint64_t a_limbs[2] = {static_cast<uint64_t>(a), static_cast<uint64_t>(a >> 64)};
  const uint64_t b_limbs[2] = {static_cast<uint64_t>(b), static_cast<uint64_t>(b >> 64)};
  for (size_t i = 0; i < 2; ++i)
    for (size_t j = 0; j < 2; ++j) {
      const Uint128 product = static_cast<Uint128>(a_limbs[i]) * b_limbs[j];
      add_at(i + j, static_cast<uint64_t>(product));
      add_at(i + j + 1, static_cast<uint64_t>(product >> 64));
    }
}

double Uint256::to_double() const {
  double value = 0;
  for (size_t limb = 4; limb-- > 0;) value = value * 18446744073709551616.0 + static_cast<double>(limbs_[limb]);
  return value;
}

bool Uint256::operator==(const Uint256& o) const { return std::equal(limbs_, limbs_ + 4, o.limbs_); }

double to_double(Uint128 value) {
  Uint256 wide;
  wide.add(value);
  return wide.to_double();
}

namespace {

// a + b * c, nullopt past 2^128.
std::optional<Uint128> plus_product(Uint128 a, Uint128 b, Uint128 c) {
  Uint128 product, sum;
  if (__builtin_mul_overflow(b, c, &product) || __builtin_add_overflow(a, product, &sum)) return std::nullopt;
  return sum;
}

std::optional<GridSums> with_timing(const GridSums& grid, int64_t length_ms, int64_t timing_ns) {
  const Uint128 t2 = static_cast<Uint128>(timing_ns) * static_cast<Uint128>(timing_ns);  // below 2^100
  const auto a = static_cast<Uint128>(length_ms);
  const std::optional<Uint128> sum_t2 = plus_product(grid.t2, t2, 1);
  const std::optional<Uint128> sum_at2 = plus_product(grid.at2, t2, a);
  std::optional<Uint128> a2t2;
  if (sum_at2) a2t2 = plus_product(0, t2 * a, a);  // (t2 * a is below sum_at2, which fit)
  const std::optional<Uint128> sum_a2t2 = a2t2 ? plus_product(grid.a2t2, *a2t2, 1) : std::nullopt;
  if (!sum_t2 || !sum_at2 || !sum_a2t2) return std::nullopt;
  return GridSums{*sum_t2, *sum_at2, *sum_a2t2};
}

// A 128-bit sum as its BLOB: 16 bytes, most significant first.
std::string blob_of(Uint128 value) {
  std::string bytes(16, '\0');
  for (int i = 15; i >= 0; --i, value >>= 8) bytes[static_cast<size_t>(i)] = static_cast<char>(value & 0xff);
  return bytes;
}
std::optional<Uint128> sum_of_blob(std::string_view blob) {
  if (blob.size() != 16) return std::nullopt;
  Uint128 value = 0;
  for (char byte : blob) value = value << 8 | static_cast<unsigned char>(byte);
  return value;
}

constexpr const char* kSumsColumns =
    "from_ms, stretches, length_ms, t2, at2, a2t2, util_t2, util_at2, util_a2t2, longest_ns, kept_windows, "
    "first_end_ns, last_end_ns";

// A row of pp_alignment_sums, refused where it holds what the align step never writes (edited
// by hand): its counts number the GPU's stretches and its ends find a job's, so a count below
// one, a text read as 0 or an end past 2116 would index stretches that were not read.
StoredSums sums_of_row(const Statement& read, const std::string& uuid) {
  StoredRow row(read, "pp_alignment_sums");
  row.name_row("of GPU ", uuid);
  const auto refused = [&](int column, const char* wanted) {
    return Error(std::string(row.refused(column, row.shown(column), wanted).what()) +
                 ": edited by hand? Delete the GPU's rows of pp_alignment_sums; the estimator reads its stretches "
                 "one by one until its next align step sums them again");
  };
  const auto whole = [&](int column, int64_t least, int64_t most, const char* wanted) {
    const std::optional<int64_t> value = stored_int64(read, column);
    if (!value || *value < least || *value > most) throw refused(column, wanted);
    return *value;
  };
  StoredSums out;
  out.from_ms = whole(0, INT64_MIN, INT64_MAX, "a time in unix ms");
  row.name_row("of GPU ", uuid, "from_ms", out.from_ms);
  StretchSums& s = out.sums;
  s.stretches = whole(1, 1, INT64_MAX, "a count of stretches, 1 or more");
  s.length_ms = whole(2, 0, INT64_MAX, "a sum of lengths in ms, 0 or more");
  Uint128* sums[] = {&s.dcgm.t2, &s.dcgm.at2, &s.dcgm.a2t2, &s.driver.t2, &s.driver.at2, &s.driver.a2t2};
  for (int i = 0; i < 6; ++i) {
    const std::optional<Uint128> value =
        read.column_type(3 + i) == SQLITE_BLOB ? sum_of_blob(read.column_blob(3 + i)) : std::nullopt;
    if (!value) throw refused(3 + i, "a 128-bit sum: a 16-byte BLOB");
    *sums[i] = *value;
  }
  s.longest_ns = whole(9, 0, kMostSummedTimingNs, "a timing of 0 to 1e15 ns");
  s.kept_windows = whole(10, 0, s.stretches, "a count of 0 to its stretches");
  s.first_end_ns = whole(11, 0, kMaxEventNs, "a window end in ns in 1970-2116");
  s.last_end_ns = whole(12, s.first_end_ns, kMaxEventNs, "a window end in ns in 1970-2116, first_end_ns or later");
  // A sum past what its stretches can hold (each timing at most 1e15 ns, each length at most
  // their sum).
  constexpr const char* kBounds[] = {"a sum of its stretches' timings squared: at most stretches x 1e30 ns^2",
                                     "a sum of length x timing squared: at most length_ms x t2",
                                     "a sum of length squared x timing squared: at most length_ms x at2"};
  const int out_of_bounds = sum_out_of_bounds(s);
  if (out_of_bounds >= 0) throw refused(3 + out_of_bounds, kBounds[out_of_bounds % 3]);
  return out;
}

// The first row of the GPU's that `condition` (on :value) and `order` give.
std::optional<StoredSums> one_row(sqlite3* db, const std::string& uuid, const char* condition, const char* order,
                                  std::optional<int64_t> value = std::nullopt) {
  Statement read(db, std::string("SELECT ") + kSumsColumns + " FROM main.pp_alignment_sums WHERE uuid = :uuid " +
                         condition + " ORDER BY " + order + " LIMIT 1");
  read.bind(":uuid", uuid);
  if (value) read.bind(":value", *value);
  if (!read.step()) return std::nullopt;
  return sums_of_row(read, uuid);
}

}  // namespace

std::optional<StretchSums> with_stretch(const StretchSums& sums, int64_t length_ms, int64_t timing_ns,
                                        int64_t util_timing_ns, bool kept_windows) {
  StretchSums out = sums;
  const std::optional<GridSums> dcgm = with_timing(sums.dcgm, length_ms, timing_ns);
  const std::optional<GridSums> driver = with_timing(sums.driver, length_ms, util_timing_ns);
  if (!dcgm || !driver || __builtin_add_overflow(sums.length_ms, length_ms, &out.length_ms) ||
      sums.stretches == INT64_MAX)
    return std::nullopt;
  out.dcgm = *dcgm;
  out.driver = *driver;
  ++out.stretches;
  out.longest_ns = std::max({sums.longest_ns, timing_ns, util_timing_ns});
  out.kept_windows += kept_windows ? 1 : 0;
  return out;
}

StretchSums sums_between(const StretchSums& earlier, const StretchSums& later) {
  StretchSums out = later;
  out.stretches -= earlier.stretches;
  out.length_ms -= earlier.length_ms;
  for (auto [grid, before] : {std::pair{&out.dcgm, &earlier.dcgm}, std::pair{&out.driver, &earlier.driver}}) {
    grid->t2 -= before->t2;
    grid->at2 -= before->at2;
    grid->a2t2 -= before->a2t2;
  }
  out.kept_windows -= earlier.kept_windows;
  return out;
}

namespace {

// Whether sum <= factor x bound (a product past 2^128 bounds nothing a Uint128 holds).
bool at_most(Uint128 sum, Uint128 factor, Uint128 bound) {
  Uint128 product;
  return __builtin_mul_overflow(factor, bound, &product) || sum <= product;
}

}  // namespace

int sum_out_of_bounds(const StretchSums& sums) {
  constexpr auto kLargestSquare = static_cast<Uint128>(kMostSummedTimingNs) * kMostSummedTimingNs;
  const auto count = static_cast<Uint128>(std::max<int64_t>(sums.stretches, 0));
  const auto length = static_cast<Uint128>(std::max<int64_t>(sums.length_ms, 0));
  int index = 0;
  // Each stretch's length A_i is at most their sum: sum A t^2 <= length x sum t^2, and so on.
  for (const GridSums* grid : {&sums.dcgm, &sums.driver}) {
    if (!at_most(grid->t2, count, kLargestSquare)) return index;
    if (!at_most(grid->at2, length, grid->t2)) return index + 1;
    if (!at_most(grid->a2t2, length, grid->at2)) return index + 2;
    index += 3;
  }
  return -1;
}

bool sums_follow(const StretchSums& earlier, const StretchSums& later) {
  if (later.stretches < earlier.stretches || later.length_ms < earlier.length_ms ||
      later.kept_windows < earlier.kept_windows)
    return false;
  for (auto [grid, before] : {std::pair{&later.dcgm, &earlier.dcgm}, std::pair{&later.driver, &earlier.driver}})
    if (grid->t2 < before->t2 || grid->at2 < before->at2 || grid->a2t2 < before->a2t2) return false;
  return sum_out_of_bounds(sums_between(earlier, later)) < 0;
}

bool has_alignment_sums(sqlite3* db) {
  return query_double(db, "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name = 'pp_alignment_sums'",
                      {}, 0) > 0;
}

std::optional<StoredSums> last_stored_sums(sqlite3* db, const std::string& uuid) {
  return one_row(db, uuid, "", "from_ms DESC");
}

std::optional<StoredSums> stored_sums_before(sqlite3* db, const std::string& uuid, int64_t from_ms) {
  return one_row(db, uuid, "AND from_ms < :value", "from_ms DESC", from_ms);
}

std::optional<StoredSums> first_stored_sums_ending_after(sqlite3* db, const std::string& uuid, int64_t ns) {
  return one_row(db, uuid, "AND last_end_ns > :value", "last_end_ns, from_ms", ns);
}

std::optional<StoredSums> first_stored_sums_from(sqlite3* db, const std::string& uuid, int64_t ms) {
  return one_row(db, uuid, "AND from_ms >= :value", "from_ms", ms);
}

void extend_alignment_sums(sqlite3* db, const std::string& uuid) {
  const std::optional<StoredSums> last = last_stored_sums(db, uuid);
  StretchSums sums = last ? last->sums : StretchSums{};
  Statement read(db, std::string("SELECT ") + kStretchColumns +
                         " FROM main.pp_alignment WHERE uuid = :uuid AND status <> 'no layers' AND from_ms > :after "
                         "ORDER BY from_ms");
  read.bind(":uuid", uuid);
  read.bind(":after", last ? last->from_ms : INT64_MIN);
  Statement write(db, std::string("INSERT INTO main.pp_alignment_sums(uuid, ") + kSumsColumns +
                          ") VALUES (:uuid, :from_ms, :stretches, :length_ms, :t2, :at2, :a2t2, :util_t2, :util_at2, "
                          ":util_a2t2, :longest_ns, :kept_windows, :first_end_ns, :last_end_ns)");
  std::vector<std::pair<int64_t, StretchSums>> rows;
  while (read.step()) {
    // A row the estimator refuses is left to it (read one by one, it says why).
    std::optional<StretchTiming> stretch;
    try {
      stretch = stretch_of_row(read, uuid);
    } catch (const Error&) {
      break;
    }
    const std::optional<int64_t> timing = whole_ns(stretch->dcgm_ns), util_timing = whole_ns(stretch->driver_ns);
    const bool in_order = stretch->first_end_ns <= stretch->last_end_ns &&
                          (sums.stretches == 0 || (stretch->first_end_ns >= sums.first_end_ns &&
                                                   stretch->last_end_ns >= sums.last_end_ns));
    if (!timing || !util_timing || !in_order) break;
    const std::optional<StretchSums> next =
        with_stretch(sums, length_ms(*stretch), *timing, *util_timing, stretch->window_ns || stretch->util_window_ns);
    if (!next) break;
    sums = *next;
    sums.first_end_ns = stretch->first_end_ns;
    sums.last_end_ns = stretch->last_end_ns;
    rows.emplace_back(stretch->from_ms, sums);
  }
  for (const auto& [from_ms, s] : rows) {
    write.bind(":uuid", uuid);
    write.bind(":from_ms", from_ms);
    write.bind(":stretches", s.stretches);
    write.bind(":length_ms", s.length_ms);
    write.bind_blob(":t2", blob_of(s.dcgm.t2));
    write.bind_blob(":at2", blob_of(s.dcgm.at2));
    write.bind_blob(":a2t2", blob_of(s.dcgm.a2t2));
    write.bind_blob(":util_t2", blob_of(s.driver.t2));
    write.bind_blob(":util_at2", blob_of(s.driver.at2));
    write.bind_blob(":util_a2t2", blob_of(s.driver.a2t2));
    write.bind(":longest_ns", s.longest_ns);
    write.bind(":kept_windows", s.kept_windows);
    write.bind(":first_end_ns", s.first_end_ns);
    write.bind(":last_end_ns", s.last_end_ns);
    write.run();
  }
}

}  // namespace pp
