// executor/cpu/fp8.cpp — E4M3 / E5M2 rounding and tensorwise scaling on the CPU (see fp8.h).
#include "executor/cpu/fp8.h"

#include <algorithm>
#include <cmath>

namespace fsdpx::cpu {

namespace {

struct Fp8Layout {
  int mantissa_bits;
  int min_normal_exponent;  // 1 - bias
  float max;
};

Fp8Layout layout(Fp8Format f) {
  // E4M3: bias 7, the all-ones exponent holds values up to 1.75 x 2^8 = 448 (only S.1111.111 is NaN).
  // E5M2: bias 15, IEEE-like, max 1.75 x 2^15 = 57344 (arXiv:2209.05433 Table 1).
  return f == Fp8Format::e4m3 ? Fp8Layout{3, -6, 448.0f} : Fp8Layout{2, -14, 57344.0f};
}

}  // namespace

float fp8_max(Fp8Format f) { return layout(f).max; }

float round_to_fp8(float x, Fp8Format f) {
  if (std::isnan(x) || x == 0.0f) return x;
  const Fp8Layout l = layout(f);
  const double a = std::min(std::fabs(double(x)), double(l.max));
  int e = 0;
  std::frexp(a, &e);  // a = m x 2^e, m in [0.5, 1): the leading bit is 2^(e-1)
  const int exponent = std::max(e - 1, l.min_normal_exponent);  // subnormals share the smallest exponent's step
  const double quantum = std::ldexp(1.0, exponent - l.mantissa_bits);
  const double r = std::min(std::nearbyint(a / quantum) * quantum, double(l.max));  // ties to even
  return float(std::copysign(r, double(x)));
}

float fp8_tensorwise_scale(const float* x, std::int64_t n, Fp8Format f) {
  constexpr float kEps = 1e-12f;  // torchao/float8/float8_utils.py EPS
  float amax = 0;
  for (std::int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  return fp8_max(f) / std::max(amax, kEps);
}

float fp8_quantize_dequantize(float* x, std::int64_t n, Fp8Format f) {
  const float s = fp8_tensorwise_scale(x, n, f);
  for (std::int64_t i = 0; i < n; ++i) x[i] = round_to_fp8(x[i] * s, f) / s;
  return s;
}

}  // namespace fsdpx::cpu
