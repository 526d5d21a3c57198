// executor/cpu/fp16.cpp — fp16 rounding and the unscale pass (see fp16.h).
#include "executor/cpu/fp16.h"

#include <cmath>

namespace fsdpx::cpu {

void round_to_fp16(float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = float(static_cast<_Float16>(x[i]));
}

bool unscale_and_check(float* x, std::int64_t n, float inv_scale) {
  bool found_inf = false;
  for (std::int64_t i = 0; i < n; ++i) {
    found_inf = found_inf || !std::isfinite(x[i]);
    if (inv_scale != 1.0f) x[i] *= inv_scale;
  }
  return found_inf;
}

}  // namespace fsdpx::cpu
