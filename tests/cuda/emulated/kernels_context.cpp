// tests/cuda/emulated/kernels_context.cpp — host launchers of executor/cuda/context_attention.h for the
// emulated runtime, on the CPU reference (cpu::context_attention_*) in fp32 between loads and stores in
// the element type. The CPU kernel saves probabilities, not the row log-sum-exp: the forward leaves lse
// zero and the backward recomputes the probabilities from qkv and kv (the device kernel recomputes them
// from lse), so what the host code orders (qkv, kv, out, dout before the backward) is what both read.
#include <cstdint>
#include <vector>

#include "executor/cpu/attention.h"
#include "executor/cuda/context_attention.h"
#include "tests/cuda/emulated/elem.h"
#include "tests/cuda/emulated/emu_stream.h"

namespace fsdpx::cuda {

using emu::enqueue;
using emu::load;
using emu::store;

namespace {

cpu::ContextAttnShape cpu_shape(const ContextAttnDims& s) {
  return cpu::ContextAttnShape{s.b, s.t_q, s.t_kv, s.nh, s.nkv, s.hd, s.q_pos};
}

}  // namespace

template <class T>
void context_attention_forward(T* out, float* lse, const T* qkv, const T* kv, const ContextAttnDims& s,
                               cudaStream_t stream) {
  enqueue(stream, [=] {
    const cpu::ContextAttnShape c = cpu_shape(s);
    const auto q = load(qkv, s.b * s.t_q * c.qkv_row()), k = load(kv, s.b * s.t_kv * c.kv_row());
    std::vector<float> o(std::size_t(s.b * s.t_q * s.nh * s.hd)), saved(std::size_t(cpu::context_attention_saved_elems(c)));
    cpu::context_attention_forward<float>(o.data(), saved.data(), q.data(), k.data(), c);
    store(out, o);
    for (std::int64_t i = 0; i < s.b * s.nh * s.t_q; ++i) lse[i] = 0.0f;
  });
}

template <class T>
void context_attention_backward(T* dqkv, T* dkv, float*, const T* dout, const T*, const T* qkv, const T* kv,
                                const float*, const ContextAttnDims& s, cudaStream_t stream) {
  enqueue(stream, [=] {
    const cpu::ContextAttnShape c = cpu_shape(s);
    const std::int64_t nq = s.b * s.t_q * c.qkv_row(), nkv = s.b * s.t_kv * c.kv_row();
    const auto q = load(qkv, nq), k = load(kv, nkv), dy = load(dout, s.b * s.t_q * s.nh * s.hd);
    auto dq = load(dqkv, nq), dk = load(dkv, nkv);
    std::vector<float> o(std::size_t(s.b * s.t_q * s.nh * s.hd)), saved(std::size_t(cpu::context_attention_saved_elems(c)));
    cpu::context_attention_forward<float>(o.data(), saved.data(), q.data(), k.data(), c);
    cpu::context_attention_backward<float>(dq.data(), dk.data(), dy.data(), q.data(), k.data(), saved.data(), c);
    store(dqkv, dq), store(dkv, dk);
  });
}

template <class T>
void scatter_rows(T* dst, const T* src, const std::int64_t* map, std::int64_t rows, std::int64_t width,
                  cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < width; ++c) dst[map[r] * width + c] = src[r * width + c];
  });
}

template <class T>
void gather_rows(T* dst, const T* src, const std::int64_t* map, std::int64_t rows, std::int64_t width,
                 cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < width; ++c) dst[r * width + c] = src[map[r] * width + c];
  });
}

template <class T>
void copy_columns(T* dst, std::int64_t dst_ld, const T* src, std::int64_t src_ld, std::int64_t rows,
                  std::int64_t width, bool accumulate, cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < width; ++c) {
        const float x = emu::to_f32(src[r * src_ld + c]);
        T& y = dst[r * dst_ld + c];
        y = emu::from_f32<T>(accumulate ? emu::to_f32(y) + x : x);
      }
  });
}

FSDPX_EMU_INSTANTIATE_16_AND_32(FSDPX_CONTEXT_ATTENTION_INSTANTIATE)

}  // namespace fsdpx::cuda
