// Student's t distribution, for the 90% intervals of the estimator.
#pragma once
#include <cstdint>

namespace pp {

// The p-quantile of Student's t with dof degrees of freedom (dof >= 1; p in (0.5, 1)).
double student_t_quantile(double p, int64_t dof);

}  // namespace pp
