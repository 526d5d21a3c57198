// tests/cuda/emulated/kernels_layers.cpp — host launchers of executor/cuda's norm, rope, activation and
// embedding kernels for the emulated runtime: each enqueues its work on the stream and there computes it
// with the CPU reference kernel (executor/cpu) in fp32 between a load and a store in the element type
// (elem.h), with the launcher's += semantics. The embedding backward sums through the host-built buckets
// as the device kernel does. Leaves out the device kernels' summation orders (the CPU kernels' are used).
#include <cstdint>
#include <vector>

#include "executor/cpu/activation.h"
#include "executor/cpu/norm.h"
#include "executor/cpu/rope.h"
#include "executor/cuda/activation.h"
#include "executor/cuda/embedding.h"
#include "executor/cuda/norm.h"
#include "executor/cuda/rope.h"
#include "tests/cuda/emulated/elem.h"
#include "tests/cuda/emulated/emu_stream.h"

namespace fsdpx::cuda {

using emu::enqueue;
using emu::load;
using emu::or_null;
using emu::store;

template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias, std::int64_t n,
                       std::int64_t c, float eps, cudaStream_t stream) {
  enqueue(stream, [=] {
    std::vector<float> o(std::size_t(n * c));
    const auto x = load(inp, n * c), w = load(weight, c), b = load(bias, c);
    cpu::layernorm_forward<float>(o.data(), mean, rstd, x.data(), w.data(), or_null(b), n, c, eps);
    store(out, o);
  });
}

template <class T>
void layernorm_backward(T* dinp, float* dweight, float* dbias, float*, const T* dout, const T* inp, const T* weight,
                        const float* mean, const float* rstd, std::int64_t n, std::int64_t c, cudaStream_t stream) {
  enqueue(stream, [=] {
    auto dx = load(dinp, n * c);
    const auto dy = load(dout, n * c), x = load(inp, n * c), w = load(weight, c);
    cpu::layernorm_backward<float>(dx.data(), dweight, dbias, dy.data(), x.data(), w.data(), mean, rstd, n, c);
    store(dinp, dx);
  });
}

template <class T>
void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, std::int64_t n, std::int64_t c, float eps,
                     cudaStream_t stream) {
  enqueue(stream, [=] {
    std::vector<float> o(std::size_t(n * c));
    const auto x = load(inp, n * c), w = load(weight, c);
    cpu::rmsnorm_forward<float>(o.data(), rstd, x.data(), w.data(), n, c, eps);
    store(out, o);
  });
}

template <class T>
void rmsnorm_backward(T* dinp, float* dweight, float*, const T* dout, const T* inp, const T* weight,
                      const float* rstd, std::int64_t n, std::int64_t c, cudaStream_t stream) {
  enqueue(stream, [=] {
    auto dx = load(dinp, n * c);
    const auto dy = load(dout, n * c), x = load(inp, n * c), w = load(weight, c);
    cpu::rmsnorm_backward<float>(dx.data(), dweight, dy.data(), x.data(), w.data(), rstd, n, c);
    store(dinp, dx);
  });
}

namespace {
// The device's fp32 tables [T, HD/2] as the CPU kernel's table.
cpu::RopeTable<float> table_of(const float* cos_table, const float* sin_table, std::int64_t t, std::int64_t hd) {
  cpu::RopeTable<float> tab;
  tab.seq = t, tab.half = hd / 2;
  tab.cos.assign(cos_table, cos_table + t * tab.half);
  tab.sin.assign(sin_table, sin_table + t * tab.half);
  return tab;
}

// The CPU kernel's rotation (backward: by the opposite angle) of qkv in place, on the stream.
template <class T>
void rope(bool backward, T* qkv, const float* cos_table, const float* sin_table, std::int64_t b, std::int64_t t,
          std::int64_t nh, std::int64_t nkv, std::int64_t hd, cudaStream_t stream) {
  enqueue(stream, [=] {
    auto x = load(qkv, b * t * (nh + 2 * nkv) * hd);
    const cpu::RopeTable<float> tab = table_of(cos_table, sin_table, t, hd);
    if (backward) cpu::rope_backward<float>(x.data(), tab, b, t, nh, nkv, hd);
    else cpu::rope_forward<float>(x.data(), tab, b, t, nh, nkv, hd);
    store(qkv, x);
  });
}
}  // namespace

template <class T>
void rope_forward(T* qkv, const float* cos_table, const float* sin_table, std::int64_t b, std::int64_t t,
                  std::int64_t nh, std::int64_t nkv, std::int64_t hd, cudaStream_t stream) {
  rope(false, qkv, cos_table, sin_table, b, t, nh, nkv, hd, stream);
}

template <class T>
void rope_backward(T* dqkv, const float* cos_table, const float* sin_table, std::int64_t b, std::int64_t t,
                   std::int64_t nh, std::int64_t nkv, std::int64_t hd, cudaStream_t stream) {
  rope(true, dqkv, cos_table, sin_table, b, t, nh, nkv, hd, stream);
}

template <class T>
void mlp_act_forward(FfnKind kind, T* out, const T* inp, std::int64_t n, std::int64_t f, cudaStream_t stream) {
  enqueue(stream, [=] {
    std::vector<float> o(std::size_t(n * f));
    const auto x = load(inp, n * cpu::mlp_up_width(kind, f));
    cpu::mlp_act_forward<float>(kind, o.data(), x.data(), n, f);
    store(out, o);
  });
}

template <class T>
void mlp_act_backward(FfnKind kind, T* dinp, const T* dout, const T* inp, std::int64_t n, std::int64_t f,
                      cudaStream_t stream) {
  enqueue(stream, [=] {
    const std::int64_t width = n * cpu::mlp_up_width(kind, f);
    auto dx = load(dinp, width);
    const auto dy = load(dout, n * f), x = load(inp, width);
    cpu::mlp_act_backward<float>(kind, dx.data(), dy.data(), x.data(), n, f);
    store(dinp, dx);
  });
}

template <class T>
void residual_forward(T* out, const T* a, const T* b, std::int64_t count, cudaStream_t stream) {
  enqueue(stream, [=] {
    std::vector<float> o(static_cast<std::size_t>(count));
    const auto x = load(a, count), y = load(b, count);
    cpu::residual_forward<float>(o.data(), x.data(), y.data(), count);
    store(out, o);
  });
}

// out = wte[token] + wpe[t] in fp32, as cpu::embedding_forward (whose vocabulary check the host did).
template <class T>
void embedding_forward(T* out, const std::int32_t* tokens, const T* wte, const no_deduce_t<T>* wpe, std::int64_t b,
                       std::int64_t t, std::int64_t c, cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t i = 0; i < b * t; ++i)
      for (std::int64_t k = 0; k < c; ++k) {
        const float pos = wpe ? emu::to_f32(wpe[(i % t) * c + k]) : 0.0f;
        out[i * c + k] = emu::from_f32<T>(emu::to_f32(wte[std::int64_t(tokens[i]) * c + k]) + pos);
      }
  });
}

template <class T>
void embedding_backward(float* dwte, float* dwpe, const T* dout, const std::int32_t* bucket_rows,
                        const std::int32_t* bucket_offsets, const std::int32_t* bucket_positions,
                        std::int64_t unique_rows, std::int64_t b, std::int64_t t, std::int64_t c,
                        cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t u = 0; u < unique_rows; ++u)
      for (std::int32_t j = bucket_offsets[u]; j < bucket_offsets[u + 1]; ++j)
        for (std::int64_t k = 0; k < c; ++k)
          dwte[std::int64_t(bucket_rows[u]) * c + k] += emu::to_f32(dout[std::int64_t(bucket_positions[j]) * c + k]);
    if (!dwpe) return;
    for (std::int64_t i = 0; i < b * t; ++i)
      for (std::int64_t k = 0; k < c; ++k) dwpe[(i % t) * c + k] += emu::to_f32(dout[i * c + k]);
  });
}

#define FSDPX_INSTANTIATE(T)                                                                                       \
  template void layernorm_forward<T>(T*, float*, float*, const T*, const T*, const T*, std::int64_t, std::int64_t, \
                                     float, cudaStream_t);                                                         \
  template void layernorm_backward<T>(T*, float*, float*, float*, const T*, const T*, const T*, const float*,      \
                                      const float*, std::int64_t, std::int64_t, cudaStream_t);                     \
  template void rmsnorm_forward<T>(T*, float*, const T*, const T*, std::int64_t, std::int64_t, float, cudaStream_t); \
  template void rmsnorm_backward<T>(T*, float*, float*, const T*, const T*, const T*, const float*, std::int64_t,  \
                                    std::int64_t, cudaStream_t);                                                   \
  template void rope_forward<T>(T*, const float*, const float*, std::int64_t, std::int64_t, std::int64_t,          \
                                std::int64_t, std::int64_t, cudaStream_t);                                         \
  template void rope_backward<T>(T*, const float*, const float*, std::int64_t, std::int64_t, std::int64_t,         \
                                 std::int64_t, std::int64_t, cudaStream_t);                                        \
  template void mlp_act_forward<T>(FfnKind, T*, const T*, std::int64_t, std::int64_t, cudaStream_t);              \
  template void mlp_act_backward<T>(FfnKind, T*, const T*, const T*, std::int64_t, std::int64_t, cudaStream_t);   \
  template void residual_forward<T>(T*, const T*, const T*, std::int64_t, cudaStream_t);                          \
  template void embedding_forward<T>(T*, const std::int32_t*, const T*, const T*, std::int64_t, std::int64_t,      \
                                     std::int64_t, cudaStream_t);                                                  \
  template void embedding_backward<T>(float*, float*, const T*, const std::int32_t*, const std::int32_t*,          \
                                      const std::int32_t*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, \
                                      cudaStream_t);
FSDPX_EMU_INSTANTIATE_16_AND_32(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
