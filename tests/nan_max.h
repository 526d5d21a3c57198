// tests/nan_max.h — the running maximum of the test helpers' differences, NaN-safe: std::max(acc, NaN)
// returns acc and `NaN > worst` is false, so a NaN difference would read as a pass. nan_max keeps a NaN
// once it appears, and every tolerance check against it (`x <= tol`) then fails.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

namespace fsdpx::test {

inline double nan_max(double acc, double x) {
  if (std::isnan(acc) || std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  return std::max(acc, x);
}

}  // namespace fsdpx::test
