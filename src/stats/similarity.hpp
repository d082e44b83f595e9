// Similarity of metric rows (paper §III.B, "dedup by similarity"): a new result for a layer that
// is within tolerance of the last stored one need not be stored. No SQLite here;
// src/stats/similarity_functions.cpp turns it into pp_similar and pp_novel.
//
// A row is a vector of components: one number, or a JSON array of numbers (the six metrics of a
// layer row at once). A JSON null component stands for a missing metric; it is similar only to
// another null at the same position.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

namespace pp {

using Components = std::vector<std::optional<double>>;

struct Tolerance {
  double relative = 0;  // rel_tol, >= 0
  double absolute = 0;  // abs_tol, >= 0
};

// Parses JSON text that is a number or an array of numbers and nulls ("[0.93, 24870, null]").
// nullopt for anything else: malformed JSON, strings, booleans, objects, nested arrays.
std::optional<Components> parse_components(std::string_view json);

// |a - b| <= max(relative * max(|a|, |b|), absolute); equal values (also infinities) always are.
bool within_tolerance(double a, double b, const Tolerance& tolerance);

// True when a and b have the same length and every component is within tolerance (null only
// matches null). Vectors of different lengths are not similar.
bool similar(const Components& a, const Components& b, const Tolerance& tolerance);

}  // namespace pp
