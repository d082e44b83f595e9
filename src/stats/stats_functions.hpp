// The stats area's SQL functions, registered by stats_objects.cpp.
#pragma once
#include <vector>

#include "core/registration.hpp"

namespace pp {

std::vector<SqlFunction> mean_functions();        // mean_functions.cpp: pp_mean, pp_mean_merge, readers
std::vector<SqlFunction> similarity_functions();  // similarity_functions.cpp: pp_similar, pp_novel
void pp_deconvolve_step(sqlite3_context* ctx, int argc, sqlite3_value** argv);  // deconvolve_function.cpp
void pp_deconvolve_final(sqlite3_context* ctx);

}  // namespace pp
