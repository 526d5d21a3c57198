// tests/cuda/emulated/kernels_mla.cpp — host launchers of executor/cuda/mla.h's latent-attention row kernels
// for the emulated runtime, written from the CPU's loops (executor/model/mla_attention.cpp: per token, per
// head; RoPE on interleaved pairs, rotated then scaled in forward, scaled then rotated back in backward; the
// shared key's gradient summed over the heads in order), each on its stream in fp32 between a load and a
// store in the element type (elem.h), so the float model follows the CPU within rounding. Breaking the
// rotation here (a sign) fails the deepseek-tiny cases of test_emulated_moe.cpp and test_emulated_yarn.cpp.
// Leaves out the device kernels' thread layout.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "executor/cuda/mla.h"
#include "tests/cuda/emulated/elem.h"
#include "tests/cuda/emulated/emu_stream.h"

namespace fsdpx::cuda {

using emu::enqueue;
using emu::from_f32;
using emu::to_f32;

namespace {

// x [rope] rotated in place by +angle (sign 1) or -angle (sign -1) at table row `pos`.
void rotate_pairs(float* x, const float* cos_t, const float* sin_t, std::int64_t pos, std::int64_t half, float sign) {
  for (std::int64_t p = 0; p < half; ++p) {
    const float c = cos_t[pos * half + p], s = sin_t[pos * half + p];
    const float x0 = x[2 * p], x1 = x[2 * p + 1];
    x[2 * p] = x0 * c - sign * x1 * s;
    x[2 * p + 1] = x1 * c + sign * x0 * s;
  }
}

}  // namespace

template <class T>
void mla_assemble_qkv(T* qkv, const T* q, const T* kvb, const T* k_pe, std::int64_t pe_ld, const float* cos_table,
                      const float* sin_table, const MlaRows& r, cudaStream_t stream) {
  enqueue(stream, [=] {
    const std::int64_t H = r.heads, D = r.nope + r.rope, dp = r.dp, kvb_w = r.nope + r.v;
    std::vector<float> pe(static_cast<std::size_t>(r.rope)), head(static_cast<std::size_t>(dp));
    for (std::int64_t i = 0; i < r.n; ++i) {
      const std::int64_t pos = i % r.t;
      T* row = qkv + i * 3 * H * dp;
      for (std::int64_t j = 0; j < r.rope; ++j) pe[std::size_t(j)] = to_f32(k_pe[i * pe_ld + j]);
      rotate_pairs(pe.data(), cos_table, sin_table, pos, r.rope / 2, 1.0f);
      for (std::int64_t h = 0; h < H; ++h) {
        std::fill(head.begin(), head.end(), 0.0f);  // the query
        for (std::int64_t j = 0; j < D; ++j) head[std::size_t(j)] = to_f32(q[i * H * D + h * D + j]);
        rotate_pairs(head.data() + r.nope, cos_table, sin_table, pos, r.rope / 2, 1.0f);
        for (std::int64_t j = 0; j < D; ++j) head[std::size_t(j)] *= r.q_scale;
        for (std::int64_t j = 0; j < dp; ++j) row[h * dp + j] = from_f32<T>(head[std::size_t(j)]);
        const T* kv_h = kvb + i * H * kvb_w + h * kvb_w;  // [k_nope | v]
        std::fill(head.begin(), head.end(), 0.0f);  // the key
        for (std::int64_t j = 0; j < r.nope; ++j) head[std::size_t(j)] = to_f32(kv_h[j]);
        for (std::int64_t j = 0; j < r.rope; ++j) head[std::size_t(r.nope + j)] = pe[std::size_t(j)];
        for (std::int64_t j = 0; j < dp; ++j) row[(H + h) * dp + j] = from_f32<T>(head[std::size_t(j)]);
        for (std::int64_t j = 0; j < dp; ++j)  // the value
          row[(2 * H + h) * dp + j] = from_f32<T>(j < r.v ? to_f32(kv_h[r.nope + j]) : 0.0f);
      }
    }
  });
}

namespace {

// The shared rope key's gradient of one token: its heads' rope columns summed in head order, rotated back.
template <class T>
void shared_key_grad(T* dk_pe, const T* row, const MlaRows& r, const float* cos_table, const float* sin_table,
                     std::int64_t pos) {
  std::vector<float> pe(static_cast<std::size_t>(r.rope), 0.0f);
  for (std::int64_t h = 0; h < r.heads; ++h)
    for (std::int64_t j = 0; j < r.rope; ++j) pe[std::size_t(j)] += to_f32(row[(r.heads + h) * r.dp + r.nope + j]);
  rotate_pairs(pe.data(), cos_table, sin_table, pos, r.rope / 2, -1.0f);
  for (std::int64_t j = 0; j < r.rope; ++j) dk_pe[j] = from_f32<T>(pe[std::size_t(j)]);
}

}  // namespace

template <class T>
void mla_split_dqkv(T* dq, T* dkvb, T* dk_pe, std::int64_t pe_ld, const T* dqkv, const float* cos_table,
                    const float* sin_table, const MlaRows& r, cudaStream_t stream) {
  enqueue(stream, [=] {
    const std::int64_t H = r.heads, D = r.nope + r.rope, kvb_w = r.nope + r.v;
    std::vector<float> dq_h(static_cast<std::size_t>(D));
    for (std::int64_t i = 0; i < r.n; ++i) {
      const T* row = dqkv + i * 3 * H * r.dp;
      for (std::int64_t h = 0; h < H; ++h) {  // the query: scaled, then rotated back
        for (std::int64_t j = 0; j < D; ++j) dq_h[std::size_t(j)] = to_f32(row[h * r.dp + j]) * r.q_scale;
        rotate_pairs(dq_h.data() + r.nope, cos_table, sin_table, i % r.t, r.rope / 2, -1.0f);
        for (std::int64_t j = 0; j < D; ++j) dq[i * H * D + h * D + j] = from_f32<T>(dq_h[std::size_t(j)]);
        T* dkv_h = dkvb + i * H * kvb_w + h * kvb_w;  // [k_nope | v] from the key's and the value's columns
        for (std::int64_t j = 0; j < r.nope; ++j) dkv_h[j] = row[(H + h) * r.dp + j];
        for (std::int64_t j = 0; j < r.v; ++j) dkv_h[r.nope + j] = row[(2 * H + h) * r.dp + j];
      }
      shared_key_grad(dk_pe + i * pe_ld, row, r, cos_table, sin_table, i % r.t);
    }
  });
}

FSDPX_EMU_INSTANTIATE_16_AND_32(FSDPX_MLA_INSTANTIATE)

}  // namespace fsdpx::cuda
