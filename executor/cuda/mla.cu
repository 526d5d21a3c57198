// executor/cuda/mla.cu — latent attention's row kernels (see mla.h): one thread per element of the padded
// qkv (forward), of dq and of dkvb, and per rope pair of a token's shared key gradient (backward).
#include "executor/cuda/mla.h"

#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kBlock = 256;

// Element j of the rope part x (pairs (x_2p, x_2p+1)) rotated by +angle (sign 1) or -angle (sign -1) at
// table row `pos`, as mla_attention.cpp's rotate_interleaved.
template <class T>
__device__ float rotated(const T* x, std::int64_t j, float scale, const float* cos_t, const float* sin_t,
                         std::int64_t pos, std::int64_t half, float sign) {
  const std::int64_t p = j / 2;
  const float x0 = to_f32(x[2 * p]) * scale, x1 = to_f32(x[2 * p + 1]) * scale;
  const float c = cos_t[pos * half + p], s = sin_t[pos * half + p];
  return j % 2 == 0 ? x0 * c - sign * x1 * s : x1 * c + sign * x0 * s;
}

template <class T>
__global__ void assemble_kernel(T* qkv, const T* q, const T* kvb, const T* k_pe, std::int64_t pe_ld,
                                const float* cos_t, const float* sin_t, MlaRows r) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x;
  const std::int64_t hd = r.heads * r.dp, d = r.nope + r.rope, half = r.rope / 2;
  if (idx >= r.n * 3 * hd) return;
  const std::int64_t i = idx / (3 * hd), part = idx % (3 * hd) / hd, h = idx % hd / r.dp, j = idx % r.dp;
  const std::int64_t pos = i % r.t;
  const T* kv_h = kvb + i * r.heads * (r.nope + r.v) + h * (r.nope + r.v);
  float val = 0.0f;
  if (part == 0 && j < d) {
    const T* qh = q + i * r.heads * d + h * d;
    // Rotated first, then scaled, as the CPU: the rotation reads the unscaled query.
    val = (j < r.nope ? to_f32(qh[j]) : rotated(qh + r.nope, j - r.nope, 1.0f, cos_t, sin_t, pos, half, 1.0f)) *
          r.q_scale;
  } else if (part == 1 && j < d) {
    val = j < r.nope ? to_f32(kv_h[j]) : rotated(k_pe + i * pe_ld, j - r.nope, 1.0f, cos_t, sin_t, pos, half, 1.0f);
  } else if (part == 2 && j < r.v) {
    val = to_f32(kv_h[r.nope + j]);
  }
  qkv[idx] = from_f32<T>(val);
}

template <class T>
__global__ void split_q_kernel(T* dq, const T* dqkv, const float* cos_t, const float* sin_t, MlaRows r) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x, d = r.nope + r.rope;
  if (idx >= r.n * r.heads * d) return;
  const std::int64_t i = idx / (r.heads * d), h = idx % (r.heads * d) / d, j = idx % d;
  const T* g = dqkv + i * 3 * r.heads * r.dp + h * r.dp;
  const float back = j < r.nope ? 0.0f : rotated(g + r.nope, j - r.nope, r.q_scale, cos_t, sin_t, i % r.t, r.rope / 2,
                                                 -1.0f);  // scaled, then rotated back, as the CPU
  dq[idx] = from_f32<T>(j < r.nope ? to_f32(g[j]) * r.q_scale : back);
}

template <class T>
__global__ void split_kv_kernel(T* dkvb, const T* dqkv, MlaRows r) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x, w = r.nope + r.v;
  if (idx >= r.n * r.heads * w) return;
  const std::int64_t i = idx / (r.heads * w), h = idx % (r.heads * w) / w, j = idx % w;
  const T* row = dqkv + i * 3 * r.heads * r.dp;
  dkvb[idx] = j < r.nope ? row[(r.heads + h) * r.dp + j] : row[(2 * r.heads + h) * r.dp + j - r.nope];
}

// Per (token, rope pair): the pair's gradient summed over the heads in order, then rotated back.
template <class T>
__global__ void split_pe_kernel(T* dk_pe, std::int64_t pe_ld, const T* dqkv, const float* cos_t, const float* sin_t,
                                MlaRows r) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * kBlock + threadIdx.x, half = r.rope / 2;
  if (idx >= r.n * half) return;
  const std::int64_t i = idx / half, p = idx % half;
  const T* row = dqkv + i * 3 * r.heads * r.dp;
  float s0 = 0.0f, s1 = 0.0f;
  for (std::int64_t h = 0; h < r.heads; ++h) {
    const T* k = row + (r.heads + h) * r.dp + r.nope;
    s0 += to_f32(k[2 * p]), s1 += to_f32(k[2 * p + 1]);
  }
  const float c = cos_t[(i % r.t) * half + p], s = sin_t[(i % r.t) * half + p];
  dk_pe[i * pe_ld + 2 * p] = from_f32<T>(s0 * c + s1 * s);
  dk_pe[i * pe_ld + 2 * p + 1] = from_f32<T>(s1 * c - s0 * s);
}

}  // namespace

template <class T>
void mla_assemble_qkv(T* qkv, const T* q, const T* kvb, const T* k_pe, std::int64_t pe_ld, const float* cos_table,
                      const float* sin_table, const MlaRows& r, cudaStream_t stream) {
  FSDP_CHECK(r.n > 0 && r.rope % 2 == 0 && r.nope + r.rope <= r.dp && r.v <= r.dp, "mla_assemble_qkv: bad rows");
  assemble_kernel<T><<<grid_for(r.n * 3 * r.heads * r.dp, kBlock), kBlock, 0, stream>>>(qkv, q, kvb, k_pe, pe_ld,
                                                                                         cos_table, sin_table, r);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void mla_split_dqkv(T* dq, T* dkvb, T* dk_pe, std::int64_t pe_ld, const T* dqkv, const float* cos_table,
                    const float* sin_table, const MlaRows& r, cudaStream_t stream) {
  FSDP_CHECK(r.n > 0 && r.rope % 2 == 0 && r.nope + r.rope <= r.dp && r.v <= r.dp, "mla_split_dqkv: bad rows");
  split_q_kernel<T><<<grid_for(r.n * r.heads * (r.nope + r.rope), kBlock), kBlock, 0, stream>>>(dq, dqkv, cos_table,
                                                                                                 sin_table, r);
  CUDA_CHECK(cudaGetLastError());
  split_kv_kernel<T><<<grid_for(r.n * r.heads * (r.nope + r.v), kBlock), kBlock, 0, stream>>>(dkvb, dqkv, r);
  CUDA_CHECK(cudaGetLastError());
  split_pe_kernel<T><<<grid_for(r.n * r.rope / 2, kBlock), kBlock, 0, stream>>>(dk_pe, pe_ld, dqkv, cos_table,
                                                                                sin_table, r);
  CUDA_CHECK(cudaGetLastError());
}

FSDPX_MLA_INSTANTIATE(bf16)
FSDPX_MLA_INSTANTIATE(f16)

}  // namespace fsdpx::cuda
