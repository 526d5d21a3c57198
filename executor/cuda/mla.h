// executor/cuda/mla.h — the row kernels of multi-head latent attention on the device (DeepSeek-V3 technical
// report, arXiv:2412.19437 §2.1.1; the host math they follow is executor/model/mla_attention.cpp). Forward
// assembles the flash kernel's multi-head qkv from the query chain's output, the kv_b output and the one
// shared rope key: RoPE on the rope parts by interleaved pairs (x_2i, x_2i+1), DeepSeek's form, read from
// the fp32 table [T, rope/2] (executor/model/rope_table.h: YaRN's frequencies and cos/sin scale included),
// and each head zero-padded from D = qk_nope + qk_rope to a head size the flash kernel takes (Dp). The
// queries are scaled by q_scale, which carries YaRN's softmax factor and sqrt(Dp/D), so that the kernel's
// 1/sqrt(Dp) becomes DeepSeek's 1/sqrt(D) (the zero columns add nothing to q·k). Backward splits the
// padded dqkv back into the chains' output gradients, rotating by the opposite angle; the shared key's
// gradient sums the heads in head order, as the CPU. fp32 arithmetic on T rows; one thread per output
// element (the shared key: per rope pair), so no atomics. Leaves out fusing the rotation into the GEMMs.
#pragma once

#include <cstdint>

#include "core/errors.h"
#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// The smallest flash-kernel head size (cuda/attention.h: 32, 64, 96 or 128) that holds D = qk_nope +
// qk_rope. DeepSeek-V3's 192 needs a kernel instantiation that only a GPU can check (docs/cuda.md).
inline std::int64_t mla_padded_head_dim(std::int64_t qk) {
  FSDP_CHECK(qk > 0 && qk <= 128, "mla_padded_head_dim: the flash kernel takes latent heads of at most 128 "
                                  "(qk_nope_head_dim + qk_rope_head_dim)");
  return (qk + 31) / 32 * 32;
}

// One call's rows: N = B·T tokens (position of token i: i mod t), H heads of nope + rope query/key and v
// value columns, padded to dp; the queries times q_scale.
struct MlaRows {
  std::int64_t n = 0, t = 0, heads = 0, nope = 0, rope = 0, v = 0, dp = 0;
  float q_scale = 1.0f;
};

// qkv [N, 3·H·Dp] (written) per token i and head h: query [rot(q [N, H·D] head h) · q_scale | 0], key
// [kvb's k_nope of h | rot(k_pe) | 0], value [kvb's v of h | 0]; kvb [N, H·(nope + v)] (head h: nope key
// columns, then v), k_pe [N, rope] at row stride pe_ld (kv_a's output columns after the latent).
template <class T>
void mla_assemble_qkv(T* qkv, const T* q, const T* kvb, const T* k_pe, std::int64_t pe_ld, const float* cos_table,
                      const float* sin_table, const MlaRows& r, cudaStream_t stream);

// The reverse, all written: dq [N, H·D] = rot⁻¹(q_scale · the query columns of dqkv); dkvb [N, H·(nope + v)]
// from the key's nope and the value's v columns; dk_pe [N, rope] at row stride pe_ld = rot⁻¹(Σ_h the key's
// rope columns of head h), summed h = 0, 1, ... in fp32.
template <class T>
void mla_split_dqkv(T* dq, T* dkvb, T* dk_pe, std::int64_t pe_ld, const T* dqkv, const float* cos_table,
                    const float* sin_table, const MlaRows& r, cudaStream_t stream);

}  // namespace fsdpx::cuda

// The launchers' explicit instantiations for a storage type T (mla.cu and the emulated twin).
#define FSDPX_MLA_INSTANTIATE(T)                                                                                \
  template void mla_assemble_qkv<T>(T*, const T*, const T*, const T*, std::int64_t, const float*, const float*, \
                                    const MlaRows&, cudaStream_t);                                              \
  template void mla_split_dqkv<T>(T*, T*, T*, std::int64_t, const T*, const float*, const float*, const MlaRows&, \
                                  cudaStream_t);
