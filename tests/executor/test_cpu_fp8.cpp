// tests/executor/test_cpu_fp8.cpp — the CPU's fp8 rounding against an independent decoder of every E4M3
// and E5M2 code (each finite code rounds to itself; midpoints between neighbours round to the even one;
// values past the largest saturate), and tensorwise quantize-dequantize error bounds.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "executor/cpu/fp8.h"

namespace fsdpx::cpu {
namespace {

// Decodes a positive code's exponent and mantissa fields: subnormal when the exponent field is 0.
double decode(int exp_field, int mant_field, int mant_bits, int bias) {
  if (exp_field == 0) return std::ldexp(double(mant_field), 1 - bias - mant_bits);
  return std::ldexp(1.0 + double(mant_field) / double(1 << mant_bits), exp_field - bias);
}

// Every positive finite value of the format, ascending: E4M3 has 126 (0x01..0x7E; 0x7F is NaN), E5M2 123 (0x01..0x7B;
// exponent 31 holds infinities and NaNs).
std::vector<double> positive_values(Fp8Format f) {
  std::vector<double> v;
  const bool e4m3 = f == Fp8Format::e4m3;
  const int mant_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, exp_max = e4m3 ? 15 : 30;
  for (int e = 0; e <= exp_max; ++e)
    for (int m = 0; m < (1 << mant_bits); ++m) {
      if (e == 0 && m == 0) continue;
      if (e4m3 && e == 15 && m == 7) continue;  // NaN
      v.push_back(decode(e, m, mant_bits, bias));
    }
  return v;
}

TEST_CASE("fp8: every finite code rounds to itself, the largest is the format's max") {
  for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    const std::vector<double> v = positive_values(f);
    CHECK(v.size() == (f == Fp8Format::e4m3 ? 126u : 123u));
    CHECK(v.back() == double(fp8_max(f)));
    for (double x : v) {
      CHECK(round_to_fp8(float(x), f) == float(x));
      CHECK(round_to_fp8(float(-x), f) == float(-x));
    }
  }
  CHECK(fp8_max(Fp8Format::e4m3) == 448.0f);
  CHECK(fp8_max(Fp8Format::e5m2) == 57344.0f);
}

TEST_CASE("fp8: midpoints round to the even neighbour, others to the nearest; saturation; zero and NaN") {
  for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    std::vector<double> v = positive_values(f);
    v.insert(v.begin(), 0.0);
    for (std::size_t i = 0; i + 1 < v.size(); ++i) {
      const double mid = 0.5 * (v[i] + v[i + 1]);
      // The even neighbour: codes alternate even/odd in ascending order starting from 0 (even).
      CHECK(round_to_fp8(float(mid), f) == float(i % 2 == 0 ? v[i] : v[i + 1]));
      CHECK(round_to_fp8(float(v[i] + 0.25 * (v[i + 1] - v[i])), f) == float(v[i]));
      CHECK(round_to_fp8(float(v[i] + 0.75 * (v[i + 1] - v[i])), f) == float(v[i + 1]));
    }
    CHECK(round_to_fp8(1e6f, f) == fp8_max(f));
    CHECK(round_to_fp8(-1e6f, f) == -fp8_max(f));
  }
  CHECK(round_to_fp8(0.0f, Fp8Format::e4m3) == 0.0f);
  CHECK(std::isnan(round_to_fp8(std::nanf(""), Fp8Format::e5m2)));
  CHECK(round_to_fp8(1.0625f, Fp8Format::e4m3) == 1.0f);   // tie between 1 and 1.125: even mantissa 000
  CHECK(round_to_fp8(1.1875f, Fp8Format::e4m3) == 1.25f);  // tie between 1.125 and 1.25: even mantissa 010
}

TEST_CASE("fp8: tensorwise quantize-dequantize keeps the amax exact and relative error within half a step") {
  std::vector<float> x(1000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(0.37 * double(i)) * 3.0);
  const std::vector<float> orig = x;
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  for (Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    x = orig;
    const float s = fp8_quantize_dequantize(x.data(), std::int64_t(x.size()), f);
    CHECK(s == doctest::Approx(fp8_max(f) / amax));
    const double half_step = f == Fp8Format::e4m3 ? 1.0 / 16 : 1.0 / 8;  // 2^-(mantissa bits + 1)
    double maxrel = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::fabs(orig[i]) * s < std::ldexp(1.0, f == Fp8Format::e4m3 ? -6 : -14)) continue;  // subnormal
      maxrel = std::max(maxrel, std::fabs(double(x[i]) - orig[i]) / std::fabs(orig[i]));
    }
    MESSAGE("maxrel " << maxrel);
    CHECK(maxrel <= half_step * (1 + 1e-6));
    CHECK(maxrel > 0);
  }
}

}  // namespace
}  // namespace fsdpx::cpu
