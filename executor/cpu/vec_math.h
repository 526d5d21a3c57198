// executor/cpu/vec_math.h — elementwise math that g++ vectorises inside the kernels' loops: a
// branch-free fp32 exp (Cody-Waite range reduction and the polynomial of Cephes' expf, max error about
// 1 ulp) instead of a libm call per element, and the sigmoid on it. fp64 (the gradient checks) keeps
// libm. Leaves out denormal results (exp(x) for x < −87.3 is 0) and tanh (GELU keeps libm's).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace fsdpx::cpu {

// exp(x) = 2^n · e^r with n = round(x·log2 e) and r = x − n·ln 2 (ln 2 split in a high part exact in
// fp32 and a low part, Cody & Waite 1980), |r| ≤ ln2/2; e^r by Cephes expf's polynomial
// (Moshier, Cephes Math Library, expf.c). Selects, not branches, so loops over it vectorise.
inline float vexp(float x) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kMin = -87.3365447505531f, kMax = 88.7228391116729f;  // ln of FLT_MIN, of FLT_MAX
  constexpr float kRound = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer (ties to even)
  float xs = x > kMin ? x : kMin;  // also NaN -> kMin (restored below): no NaN reaches the int conversion
  xs = xs < kMax ? xs : kMax;
  const float n = (xs * kLog2e + kRound) - kRound;        // in [−126, 128]
  float r = xs - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n as two factors 2^(n/2): n = 128 would not fit one exponent field.
  const std::int32_t half = static_cast<std::int32_t>(n) >> 1;
  const float s1 = std::bit_cast<float>((half + 127) << 23);
  const float s2 = std::bit_cast<float>((static_cast<std::int32_t>(n) - half + 127) << 23);
  float e = p * s1 * s2;
  e = x < kMin ? 0.0f : e;
  e = x > kMax ? std::numeric_limits<float>::infinity() : e;
  return x != x ? x : e;
}
inline double vexp(double x) { return std::exp(x); }

// σ(x) = 1 / (1 + e^−x).
template <class Real>
Real vsigmoid(Real x) {
  return Real(1) / (Real(1) + vexp(-x));
}

}  // namespace fsdpx::cpu
