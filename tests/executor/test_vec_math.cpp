// tests/executor/test_vec_math.cpp — the vectorisable fp32 exp against libm's in double: at most 2 ulp
// over its whole normal range, exact at 0, and the IEEE special cases (±inf, NaN, overflow, underflow).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "executor/cpu/vec_math.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

// |got − ref| in units of the last place of ref rounded to fp32.
double ulps(float got, double ref) {
  const float r = static_cast<float>(ref);
  return std::abs(double(got) - ref) / double(std::nextafter(r, std::numeric_limits<float>::infinity()) - r);
}

TEST_CASE("vexp is within 2 ulp of exp from ln(FLT_MIN) to ln(FLT_MAX)") {
  double worst = 0;
  float worst_x = 0;
  for (float x = -87.33f; x < 88.72f; x += 0.000731f * (1.0f + std::abs(x))) {
    const double u = ulps(cpu::vexp(x), std::exp(double(x)));
    if (u > worst) worst = u, worst_x = x;
  }
  for (float x = -1e-3f; x < 1e-3f; x += 1.3e-6f) worst = ::fsdpx::test::nan_max(worst, ulps(cpu::vexp(x), std::exp(double(x))));
  MESSAGE("vexp: max error " << worst << " ulp (at x = " << worst_x << ")");
  CHECK(worst <= 2.0);
}

TEST_CASE("vexp special values") {
  constexpr float inf = std::numeric_limits<float>::infinity();
  CHECK(cpu::vexp(0.0f) == 1.0f);
  CHECK(cpu::vexp(-0.0f) == 1.0f);
  CHECK(cpu::vexp(-inf) == 0.0f);
  CHECK(cpu::vexp(-100.0f) == 0.0f);  // below FLT_MIN: flushed to zero
  CHECK(cpu::vexp(inf) == inf);
  CHECK(cpu::vexp(88.8f) == inf);
  CHECK(std::isfinite(cpu::vexp(88.72f)));
  CHECK(std::isnan(cpu::vexp(std::numeric_limits<float>::quiet_NaN())));
  CHECK(cpu::vsigmoid(0.0f) == 0.5f);
  CHECK(cpu::vsigmoid(-200.0f) == 0.0f);
  CHECK(cpu::vsigmoid(200.0f) == 1.0f);
}

}  // namespace
}  // namespace fsdpx
