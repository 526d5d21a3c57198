// tests/executor/test_rope.cpp — RoPE inverse frequencies with and without Llama 3.1 scaling, against
// values computed independently (below) from meta-llama/llama-models
// models/llama3/reference_impl/model.py apply_scaling, and the tables built from them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/model_spec.h"
#include "executor/cpu/rope.h"

namespace fsdpx {
namespace {

// Llama-3.1-8B: head_dim 128, rope_theta 500000, rope_scaling llama3 (factor 8, low 1, high 4, 8192).
constexpr std::int64_t kHeadDim = 128;
constexpr double kTheta = 500000.0;
RopeScaling llama31() { return {RopeScalingKind::llama3, 8.0, 1.0, 4.0, 8192}; }

// Reference values printed by a separate Python transcription of apply_scaling (plain floats, math
// module); pair 32 worked by hand: f = 500000^-0.5 = 1.41421e-3, wavelength 2*pi/f = 4442.88 tokens lies
// between 8192/4 and 8192/1, smooth = (8192/4442.88 - 1)/3 = 0.281281, f' = f*(0.718719/8 + 0.281281).
struct Expected {
  std::int64_t i;
  double unscaled, scaled;
};
constexpr Expected kExpected[] = {
    {0, 1.0, 1.0},                                           // wavelength 6.3 tokens: kept
    {20, 0.016560440080994446, 0.016560440080994446},        // 379 tokens: kept
    {28, 0.0032114459947525913, 0.0032114459947525913},      // 1956 < 2048: kept
    {29, 0.0026160992529250353, 0.002166570763503359},       // 2402: blended
    {32, 0.001414213562373095, 0.0005248461609929547},       // 4443: blended
    {34, 0.0009384738703573801, 0.00017850781276799638},     // 6695: blended
    {35, 0.0007644969883171747, 9.556212353964683e-05},      // 8219 > 8192: divided by 8
    {63, 2.455140791131609e-06, 3.068925988914511e-07},      // divided by 8
};

TEST_CASE("Llama 3.1 RoPE scaling matches independently computed inverse frequencies") {
  double maxdiff = 0;
  for (const auto& e : kExpected) {
    INFO("pair " << e.i);
    const double plain = cpu::rope_inv_freq(e.i, kHeadDim, kTheta, {});
    const double scaled = cpu::rope_inv_freq(e.i, kHeadDim, kTheta, llama31());
    maxdiff = std::max({maxdiff, std::abs(plain - e.unscaled) / e.unscaled,
                        std::abs(scaled - e.scaled) / e.scaled});
    CHECK(plain == doctest::Approx(e.unscaled).epsilon(1e-12));
    CHECK(scaled == doctest::Approx(e.scaled).epsilon(1e-12));
  }
  MESSAGE("maxdiff (relative) " << maxdiff);
  // With factor 1 every band (kept, blended, divided) gives the unscaled frequency.
  RopeScaling s = llama31();
  s.factor = 1.0;
  for (std::int64_t i = 0; i < kHeadDim / 2; ++i)
    CHECK(cpu::rope_inv_freq(i, kHeadDim, kTheta, s) ==
          doctest::Approx(cpu::rope_inv_freq(i, kHeadDim, kTheta, {})));
}

TEST_CASE("the RoPE table rotates by position times the scaled frequency") {
  const std::int64_t seq = 9000;
  const auto plain = cpu::make_rope_table<double>(seq, kHeadDim, kTheta);
  const auto scaled = cpu::make_rope_table<double>(seq, kHeadDim, kTheta, llama31());
  for (const auto& e : kExpected)
    for (std::int64_t t : {1, 100, 8999}) {
      INFO("pair " << e.i << " position " << t);
      const auto k = static_cast<std::size_t>(t * kHeadDim / 2 + e.i);
      CHECK(plain.cos[k] == doctest::Approx(std::cos(double(t) * e.unscaled)).epsilon(1e-9));
      CHECK(scaled.cos[k] == doctest::Approx(std::cos(double(t) * e.scaled)).epsilon(1e-9));
      CHECK(scaled.sin[k] == doctest::Approx(std::sin(double(t) * e.scaled)).epsilon(1e-9));
    }
}

}  // namespace
}  // namespace fsdpx
