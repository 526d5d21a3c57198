// executor/cpu/fp8.cpp — E4M3 / E5M2 rounding and tensorwise scaling on the CPU (see fp8.h).
#include "executor/cpu/fp8.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace fsdpx::cpu {

namespace {

struct Fp8Layout {
  int mantissa_bits;
  int min_normal_exponent;  // 1 - bias
  float max;
};

Fp8Layout layout(Fp8Format f) {
  // E4M3: bias 7; E5M2: bias 15 (arXiv:2209.05433 Table 1); the maxima are model/fp8_format.h's.
  return f == Fp8Format::e4m3 ? Fp8Layout{3, -6, fp8_max(f)} : Fp8Layout{2, -14, fp8_max(f)};
}

}  // namespace

float round_to_fp8(float x, Fp8Format f) {
  if (std::isnan(x) || x == 0.0f) return x;
  const Fp8Layout l = layout(f);
  const float a = std::fabs(x);
  if (a >= l.max) return std::copysign(l.max, x);  // saturate
  float r = 0;
  if (a < std::ldexp(1.0f, l.min_normal_exponent)) {
    // Subnormals share the smallest exponent's step: a / quantum is exact (a power-of-two scaling).
    const float quantum = std::ldexp(1.0f, l.min_normal_exponent - l.mantissa_bits);
    r = std::nearbyint(a / quantum) * quantum;  // ties to even
  } else {
    // Round fp32's 23-bit mantissa to the format's bits, ties to even; a carry moves into the exponent.
    const int drop = 23 - l.mantissa_bits;
    auto bits = std::bit_cast<std::uint32_t>(a);
    bits += (std::uint32_t(1) << (drop - 1)) - 1 + ((bits >> drop) & 1);
    r = std::min(std::bit_cast<float>(bits & ~((std::uint32_t(1) << drop) - 1)), l.max);
  }
  return std::copysign(r, x);
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
