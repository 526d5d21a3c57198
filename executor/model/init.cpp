// executor/model/init.cpp — counter-based initialisation. splitmix64 (Steele, Lea & Flood 2014,
// "Fast splittable pseudorandom number generators") mixes (seed, module, element, stream) into
// 64 random bits; two uniforms make one normal by Box-Muller (z = √(−2 ln u1)·cos(2π u2)).
#include "executor/model/init.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/errors.h"
#include "executor/cpu/kernel_pool.h"

namespace fsdpx {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1) from 53 random bits, never 0 so the log is finite.
double uniform(std::uint64_t seed, int module, std::int64_t element, std::uint64_t stream) {
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ (static_cast<std::uint64_t>(module) + 1));
  h = splitmix64(h ^ (static_cast<std::uint64_t>(element) * 2 + stream));
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
}

double standard_normal(std::uint64_t seed, int module, std::int64_t element) {
  const double u1 = uniform(seed, module, element, 0), u2 = uniform(seed, module, element, 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// GPT-2 (Radford et al. 2019, §2.3) scales residual-layer weights by 1/√N, N = residual layers = 2L;
// std 0.02 as llm.c train_gpt2.py _init_weights.
constexpr double kInitStd = 0.02;

}  // namespace

// Module index -1: a stream no plan module uses.
double lora_uniform(std::uint64_t seed, std::int64_t element) { return uniform(seed, -1, element, 0); }

double init_value(const ParamLayout& layout, std::uint64_t seed, int module, std::int64_t element) {
  FSDP_CHECK(module >= 0 && module < layout.num_modules(), "init_value: module out of range");
  const ModuleLayout& m = layout.modules[static_cast<std::size_t>(module)];
  FSDP_CHECK(element >= 0 && element < m.numel, "init_value: element out of range");
  for (const TensorSlot& t : m.tensors) {
    if (element >= t.offset + t.numel()) continue;
    const std::int64_t full = t.full_element(element - t.offset);  // a tensor-parallel slice: its full index
    switch (t.init) {
      case InitKind::ones: return 1.0;
      case InitKind::zeros: return 0.0;
      case InitKind::normal: return kInitStd * standard_normal(seed, module, full);
      case InitKind::normal_residual:
        return kInitStd / std::sqrt(2.0 * double(layout.layers)) * standard_normal(seed, module, full);
    }
  }
  return 0.0;
}

template <class Real>
void init_module_range(const ParamLayout& layout, std::uint64_t seed, int module, std::int64_t begin,
                       std::int64_t end, Real* out) {
  FSDP_CHECK(begin >= 0 && begin <= end && end <= layout.modules[static_cast<std::size_t>(module)].numel,
             "init_module_range: range outside the module");
  cpu::parallel_for_blocks(end - begin, 4096, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t e = begin + lo; e < begin + hi; ++e)
      out[e - begin] = static_cast<Real>(init_value(layout, seed, module, e));
  });
}

template <class Real>
void init_unit_range(const ParamLayout& layout, const FlatUnitLayout& unit, std::uint64_t seed, std::int64_t begin,
                     std::int64_t end, Real* out) {
  FSDP_CHECK(begin >= 0 && begin <= end && end <= unit.padded_numel, "init_unit_range: range outside the unit");
  for (std::int64_t e = begin; e < end; ++e) out[e - begin] = Real(0);
  for (std::size_t k = 0; k < unit.modules.size(); ++k) {
    const std::int64_t mb = unit.module_offsets[k];
    const std::int64_t me = mb + layout.modules[static_cast<std::size_t>(unit.modules[k])].numel;
    const std::int64_t lo = std::max(begin, mb), hi = std::min(end, me);
    if (lo < hi) init_module_range(layout, seed, unit.modules[k], lo - mb, hi - mb, out + (lo - begin));
  }
}

template <class Real>
void init_all(const ParamLayout& layout, std::uint64_t seed, Real* out) {
  for (int m = 0; m < layout.num_modules(); ++m) {
    const ModuleLayout& ml = layout.modules[static_cast<std::size_t>(m)];
    init_module_range(layout, seed, m, 0, ml.numel, out + ml.offset);
  }
}

#define FSDPX_INSTANTIATE(Real)                                                                                 \
  template void init_module_range<Real>(const ParamLayout&, std::uint64_t, int, std::int64_t, std::int64_t, Real*); \
  template void init_unit_range<Real>(const ParamLayout&, const FlatUnitLayout&, std::uint64_t, std::int64_t,      \
                                      std::int64_t, Real*);                                                    \
  template void init_all<Real>(const ParamLayout&, std::uint64_t, Real*);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
