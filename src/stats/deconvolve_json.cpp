// pp_deconvolve's result as JSON: "_system" (the fit) first, then one object per unknown
// (docs/reference/deconvolve.md lists every key).
#include <cmath>
#include <nlohmann/json.hpp>

#include "stats/deconvolve.hpp"

namespace pp {

namespace {

nlohmann::ordered_json number_or_null(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

}  // namespace

std::string deconvolve_json(const DeconvolveResult& r) {
  nlohmann::ordered_json out;
  nlohmann::ordered_json system;
  system["samples"] = r.samples;
  system["unknowns"] = r.unknowns.size();
  system["free"] = r.free;
  system["dof"] = r.dof;
  system["condition"] = number_or_null(r.condition);
  system["condition_scaled"] = number_or_null(r.condition_scaled);
  system["residual_rms"] = r.residual_rms;
  system["sigma"] = number_or_null(r.sigma);
  system["t90"] = r.sigma ? nlohmann::ordered_json(r.t90) : nlohmann::ordered_json(nullptr);
  system["scale"] = r.scale;
  system["converged"] = r.converged;
  system["iterations"] = r.iterations;
  out[DeconvolveData::kSystemKey] = std::move(system);
  for (const auto& u : r.unknowns) {
    nlohmann::ordered_json o;
    o["estimate"] = number_or_null(u.estimate);
    o["stderr"] = number_or_null(u.std_error);
    o["n"] = u.n;
    o["lower90"] = number_or_null(u.lower90);
    o["upper90"] = number_or_null(u.upper90);
    o["identified"] = u.identified;
    o["at_bound"] = u.at_bound < 0 ? nlohmann::ordered_json("lower")
                    : u.at_bound > 0 ? nlohmann::ordered_json("upper")
                                     : nlohmann::ordered_json(nullptr);
    out[u.name] = std::move(o);
  }
  return out.dump();
}

}  // namespace pp
