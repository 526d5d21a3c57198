// executor/model/init.cpp — counter-based initialisation. splitmix64 (Steele, Lea & Flood 2014,
// "Fast splittable pseudorandom number generators") mixes (seed, module, element, stream) into
// 64 random bits; two uniforms make one normal by Box-Muller (z = √(−2 ln u1)·cos(2π u2)). A range is
// drawn tensor by tensor and row by row, the (seed, module) part of the hash once (issue 29: llama3.2-1b's
// start-up), to the same values as init_value element by element (tests/executor/test_param_init.cpp).
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

// The first two of the three hashes of an element's bits: they depend on (seed, module) only, so a range
// of one module computes them once.
std::uint64_t module_key(std::uint64_t seed, int module) {
  return splitmix64(splitmix64(seed) ^ (static_cast<std::uint64_t>(module) + 1));
}

// Uniform in (0, 1) from 53 random bits, never 0 so the log is finite.
double uniform(std::uint64_t key, std::int64_t element, std::uint64_t stream) {
  const std::uint64_t h = splitmix64(key ^ (static_cast<std::uint64_t>(element) * 2 + stream));
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
}

double standard_normal(std::uint64_t key, std::int64_t element) {
  const double u1 = uniform(key, element, 0), u2 = uniform(key, element, 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// GPT-2 (Radford et al. 2019, §2.3) scales residual-layer weights by 1/√N, N = residual layers = 2L;
// std 0.02 as llm.c train_gpt2.py _init_weights.
constexpr double kInitStd = 0.02;

// The standard deviation of a normal tensor's draws (its value is this times a standard normal).
double normal_std(const ParamLayout& layout, InitKind kind) {
  return kind == InitKind::normal_residual ? kInitStd / std::sqrt(2.0 * double(layout.layers)) : kInitStd;
}

// out [hi − lo] = local elements [lo, hi) of tensor t of the module whose key is `key`: init_value's
// values, drawn a run at a time (the elements of one local row are consecutive in the full tensor too), so
// an element costs its draw and no search, division or check.
template <class Real>
void draw_tensor_range(const ParamLayout& layout, const TensorSlot& t, std::uint64_t key, std::int64_t lo,
                       std::int64_t hi, Real* out) {
  if (t.init == InitKind::ones || t.init == InitKind::zeros) {
    std::fill(out, out + (hi - lo), static_cast<Real>(t.init == InitKind::ones ? 1.0 : 0.0));
    return;
  }
  const double std_dev = normal_std(layout, t.init);
  const bool whole_rows = t.full_rows.empty() && t.cols == t.full_cols;  // the slice is contiguous
  for (std::int64_t e = lo; e < hi;) {
    const std::int64_t run = whole_rows ? hi - e : std::min(hi - e, t.cols - e % t.cols);
    const std::int64_t full = t.full_element(e);
    for (std::int64_t i = 0; i < run; ++i)
      out[e - lo + i] = static_cast<Real>(std_dev * standard_normal(key, full + i));
    e += run;
  }
}

// out [hi − lo] = elements [lo, hi) of module m, whose tensors tile it in order (param_layout.cpp's
// ModuleBuilder); elements past the last tensor are 0, as init_value's.
template <class Real>
void draw_module_range(const ParamLayout& layout, const ModuleLayout& m, std::uint64_t key, std::int64_t lo,
                       std::int64_t hi, Real* out) {
  std::int64_t pos = lo;  // [lo, pos) is written
  for (const TensorSlot& t : m.tensors) {
    const std::int64_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.numel());
    if (a >= b) continue;
    FSDP_CHECK(a == pos, "init: the tensors of " + m.name + " do not tile it");
    draw_tensor_range(layout, t, key, a - t.offset, b - t.offset, out + (a - lo));
    pos = b;
  }
  std::fill(out + (pos - lo), out + (hi - lo), Real(0));
}

}  // namespace

// Module index -1: a stream no plan module uses.
double lora_uniform(std::uint64_t seed, std::int64_t element) { return uniform(module_key(seed, -1), element, 0); }

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
      case InitKind::normal:
      case InitKind::normal_residual:
        return normal_std(layout, t.init) * standard_normal(module_key(seed, module), full);
    }
  }
  return 0.0;
}

template <class Real>
void init_module_range(const ParamLayout& layout, std::uint64_t seed, int module, std::int64_t begin,
                       std::int64_t end, Real* out) {
  FSDP_CHECK(module >= 0 && module < layout.num_modules(), "init_module_range: module out of range");
  const ModuleLayout& m = layout.modules[static_cast<std::size_t>(module)];
  FSDP_CHECK(begin >= 0 && begin <= end && end <= m.numel, "init_module_range: range outside the module");
  const std::uint64_t key = module_key(seed, module);
  cpu::parallel_for_blocks(end - begin, 4096, [&](std::int64_t lo, std::int64_t hi) {
    draw_module_range(layout, m, key, begin + lo, begin + hi, out + lo);
  });
}

template <class Real>
void init_unit_range(const ParamLayout& layout, const FlatUnitLayout& unit, std::uint64_t seed, std::int64_t begin,
                     std::int64_t end, Real* out) {
  FSDP_CHECK(begin >= 0 && begin <= end && end <= unit.padded_numel, "init_unit_range: range outside the unit");
  std::int64_t written = begin;  // [begin, written) is written; what no module covers (padding) is 0
  for (std::size_t k = 0; k < unit.modules.size(); ++k) {
    const std::int64_t mb = unit.module_offsets[k];
    const std::int64_t me = mb + layout.modules[static_cast<std::size_t>(unit.modules[k])].numel;
    const std::int64_t lo = std::max(begin, mb), hi = std::min(end, me);
    if (lo >= hi) continue;
    FSDP_CHECK(lo >= written, "init_unit_range: the unit's modules overlap or are out of order");
    std::fill(out + (written - begin), out + (lo - begin), Real(0));
    init_module_range(layout, seed, unit.modules[k], lo - mb, hi - mb, out + (lo - begin));
    written = hi;
  }
  std::fill(out + (written - begin), out + (end - begin), Real(0));
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
