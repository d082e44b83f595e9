#include "stats/similarity.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace pp {

namespace {

std::optional<double> number(const nlohmann::json& value) {
  if (value.is_number()) return value.get<double>();
  return std::nullopt;
}

}  // namespace

std::optional<Components> parse_components(std::string_view json) {
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::nullopt;
  if (parsed.is_number()) return Components{parsed.get<double>()};
  if (!parsed.is_array()) return std::nullopt;
  Components components;
  components.reserve(parsed.size());
  for (const nlohmann::json& element : parsed) {
    if (element.is_null()) {
      components.emplace_back(std::nullopt);
    } else if (auto x = number(element)) {
      components.emplace_back(*x);
    } else {
      return std::nullopt;
    }
  }
  return components;
}

bool within_tolerance(double a, double b, const Tolerance& tolerance) {
  if (a == b) return true;  // also +inf == +inf
  if (!std::isfinite(a) || !std::isfinite(b)) return false;  // an infinity is close to nothing else
  const double difference = std::fabs(a - b);
  const double allowed = std::max(tolerance.relative * std::max(std::fabs(a), std::fabs(b)), tolerance.absolute);
  return difference <= allowed;  // false when the difference overflows to infinity
}

bool similar(const Components& a, const Components& b, const Tolerance& tolerance) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].has_value() != b[i].has_value()) return false;
    if (a[i] && !within_tolerance(*a[i], *b[i], tolerance)) return false;
  }
  return true;
}

}  // namespace pp
