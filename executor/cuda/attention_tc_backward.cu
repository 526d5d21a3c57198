// executor/cuda/attention_tc_backward.cu — the tensor-core attention backward (attention_tc.h): FA2's
// Algorithm 2 (Dao 2023) with causal masking, in two kernels as attention.cu so that no element needs
// atomics. Both recompute S = Q·Kᵀ and P = exp(S·scale − lse) and dP = dO·Vᵀ per 64 x 64 tile, and
// dS = P ∘ (dP − delta) (Alg. 2 lines 11-14; delta = rowsum(dO ∘ O), line 4). The dQ kernel walks the key
// tiles of a 64-query block: dQ += dS·K. The dK/dV kernel walks, for a 64-key block of KV head g, every
// query tile at or after it of every query head of the group: dV += Pᵀ·dO, dK += dSᵀ·Q, computing the
// transposed tiles Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ directly. dQ and dK carry the 1/sqrt(HD) scale at the end.
// tc_attention_backward runs the register-resident version (attention_fa2.h); this WMMA one stays as
// tc_attention_backward_wmma for A/B benchmarks and as the fallback.
#include "executor/cuda/attention.h"
#include "executor/cuda/attention_fa2.h"
#include "executor/cuda/attention_tc.h"
#include "executor/cuda/attention_tc_common.cuh"

namespace fsdpx::cuda {
namespace tc {
namespace {

// Both kernels' shared memory: four [64, HD] 16-bit tiles, two [64, 64] fp32 score tiles, two [64, 64]
// 16-bit tiles (dS, and P for dK/dV), two [64, HD] fp32 accumulators (dQ uses one) and 2 x 64 fp32 row
// statistics (dK/dV). Every region is a multiple of 128 bytes.
template <int kHd, class T>
constexpr int backward_shared_bytes() {
  return 4 * kBlock * Ld<kHd>::tile * int(sizeof(T)) + 2 * kBlock * kSld * 4 + 2 * kBlock * kPld * int(sizeof(T)) +
         2 * kBlock * Ld<kHd>::acc * 4 + 2 * kBlock * 4;
}

// The regions of backward_shared_bytes, in order.
template <int kHd, class T>
struct BwdSmem {
  T *a, *b, *c, *d;   // [64, HD] tiles
  float *s, *dp;      // [64, 64] fp32
  T *p, *ds;          // [64, 64] 16-bit
  float *acc0, *acc1;  // [64, HD] fp32
  float *stat0, *stat1;  // [64]
  __device__ explicit BwdSmem(unsigned char* base) {
    constexpr int kT = Ld<kHd>::tile * kBlock, kA = Ld<kHd>::acc * kBlock;
    a = reinterpret_cast<T*>(base), b = a + kT, c = b + kT, d = c + kT;
    s = reinterpret_cast<float*>(d + kT), dp = s + kBlock * kSld;
    p = reinterpret_cast<T*>(dp + kBlock * kSld), ds = p + kBlock * kPld;
    acc0 = reinterpret_cast<float*>(ds + kBlock * kPld), acc1 = acc0 + kA;
    stat0 = acc1 + kA, stat1 = stat0 + kBlock;
  }
};

// dS for one warp's 16 query rows (dQ kernel): rows t = q_first + r, keys k0 + c.
template <class T>
__device__ void ds_rows(T* ds_w, const float* s_w, const float* dp_w, const float (&row_lse)[kRows],
                        const float (&row_delta)[kRows], int q_first, int k0, const tc::Dims& g) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int t = q_first + r;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int c = lane + 32 * j;
      float ds = 0.0f;
      if (k0 + c <= t && t < g.t) {
        const float p = __expf(s_w[r * kSld + c] * g.scale - row_lse[r]);
        ds = p * (dp_w[r * kSld + c] - row_delta[r]);
      }
      ds_w[r * kPld + c] = from_f32<T>(ds);
    }
  }
}

template <int kHd, class T>
__global__ void __launch_bounds__(kThreads) tc_backward_dq_kernel(BackwardArgs<T> a) {
  constexpr int kT = Ld<kHd>::tile, kA = Ld<kHd>::acc;
  extern __shared__ __align__(128) unsigned char smem[];
  const BwdSmem<kHd, T> sm(smem);
  T *q_s = sm.a, *do_s = sm.b, *k_s = sm.c, *v_s = sm.d;
  const tc::Dims& g = a.g;
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBlock, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int kvh = h / (g.nh / g.nkv), q_first = q0 + warp * kRows;
  const T* base = a.qkv + std::int64_t(b) * g.t * g.row;
  tc::load_rows<kHd>(q_s, base, q0, g.t, g.row, std::int64_t(h) * kHd);
  tc::load_rows<kHd>(do_s, a.dout + std::int64_t(b) * g.t * g.nh * kHd, q0, g.t, std::int64_t(g.nh) * kHd,
                     std::int64_t(h) * kHd);
  tc::zero_rows(sm.acc0, kA);
  float row_lse[kRows], row_delta[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const std::int64_t at = (std::int64_t(b) * g.nh + h) * g.t + min(q_first + r, g.t - 1);
    row_lse[r] = a.lse[at], row_delta[r] = a.delta[at];
  }
  float *s_w = sm.s + warp * kRows * kSld, *dp_w = sm.dp + warp * kRows * kSld, *dq_w = sm.acc0 + warp * kRows * kA;
  T* ds_w = sm.ds + warp * kRows * kPld;
  const int last_key = min(g.t - 1, q0 + kBlock - 1);
  for (int k0 = 0; k0 <= last_key; k0 += kBlock) {
    __syncthreads();  // the previous K/V tile is consumed
    tc::load_rows<kHd>(k_s, base, k0, g.t, g.row, std::int64_t(g.nh + kvh) * kHd);
    tc::load_rows<kHd>(v_s, base, k0, g.t, g.row, std::int64_t(g.nh + g.nkv + kvh) * kHd);
    __syncthreads();
    tc::warp_gemm<kHd, kBlock / 16, true, false>(s_w, kSld, q_s + warp * kRows * kT, kT, k_s, kT);    // S = Q·Kᵀ
    tc::warp_gemm<kHd, kBlock / 16, true, false>(dp_w, kSld, do_s + warp * kRows * kT, kT, v_s, kT);  // dP = dO·Vᵀ
    __syncwarp();
    ds_rows(ds_w, s_w, dp_w, row_lse, row_delta, q_first, k0, g);
    __syncwarp();
    tc::warp_gemm<kBlock, kHd / 16, false, true>(dq_w, kA, ds_w, kPld, k_s, kT);  // dQ += dS·K
    __syncwarp();
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int t = q_first + r;
    if (t >= g.t) continue;  // warp-uniform
    T* d = a.dqkv + (std::int64_t(b) * g.t + t) * g.row + std::int64_t(h) * kHd;
    for (int i = lane; i < kHd; i += 32) d[i] = from_f32<T>(to_f32(d[i]) + dq_w[r * kA + i] * g.scale);
  }
}

// Pᵀ and dSᵀ for one warp's 16 keys (dK/dV kernel): keys k_first + r, queries q0 + c.
template <class T>
__device__ void pt_dst_rows(T* pt_w, T* dst_w, const float* st_w, const float* dpt_w, const float* lse_s,
                            const float* delta_s, int k_first, int q0, const tc::Dims& g) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int key = k_first + r;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int c = lane + 32 * j, t = q0 + c;
      float p = 0.0f, ds = 0.0f;
      if (t < g.t && key <= t) {
        p = __expf(st_w[r * kSld + c] * g.scale - lse_s[c]);
        ds = p * (dpt_w[r * kSld + c] - delta_s[c]);
      }
      pt_w[r * kPld + c] = from_f32<T>(p);
      dst_w[r * kPld + c] = from_f32<T>(ds);
    }
  }
}

template <int kHd, class T>
__global__ void __launch_bounds__(kThreads) tc_backward_dkv_kernel(BackwardArgs<T> a) {
  constexpr int kT = Ld<kHd>::tile, kA = Ld<kHd>::acc;
  extern __shared__ __align__(128) unsigned char smem[];
  const BwdSmem<kHd, T> sm(smem);
  T *k_s = sm.a, *v_s = sm.b, *q_s = sm.c, *do_s = sm.d;
  const tc::Dims& g = a.g;
  const int b = blockIdx.z, kvh = blockIdx.y, k0 = blockIdx.x * kBlock, group = g.nh / g.nkv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, k_first = k0 + warp * kRows;
  const T* base = a.qkv + std::int64_t(b) * g.t * g.row;
  const T* dout = a.dout + std::int64_t(b) * g.t * g.nh * kHd;
  tc::load_rows<kHd>(k_s, base, k0, g.t, g.row, std::int64_t(g.nh + kvh) * kHd);
  tc::load_rows<kHd>(v_s, base, k0, g.t, g.row, std::int64_t(g.nh + g.nkv + kvh) * kHd);
  tc::zero_rows(sm.acc0, kA);
  tc::zero_rows(sm.acc1, kA);
  float *st_w = sm.s + warp * kRows * kSld, *dpt_w = sm.dp + warp * kRows * kSld;
  float *dk_w = sm.acc0 + warp * kRows * kA, *dv_w = sm.acc1 + warp * kRows * kA;
  T *pt_w = sm.p + warp * kRows * kPld, *dst_w = sm.ds + warp * kRows * kPld;
  for (int h = kvh * group; h < (kvh + 1) * group; ++h)
    for (int q0 = k0; q0 < g.t; q0 += kBlock) {  // causal: query tiles at or after the key tile
      __syncthreads();  // the previous query tile is consumed
      tc::load_rows<kHd>(q_s, base, q0, g.t, g.row, std::int64_t(h) * kHd);
      tc::load_rows<kHd>(do_s, dout, q0, g.t, std::int64_t(g.nh) * kHd, std::int64_t(h) * kHd);
      if (threadIdx.x < kBlock) {
        const std::int64_t at = (std::int64_t(b) * g.nh + h) * g.t + min(q0 + int(threadIdx.x), g.t - 1);
        sm.stat0[threadIdx.x] = a.lse[at], sm.stat1[threadIdx.x] = a.delta[at];
      }
      __syncthreads();
      tc::warp_gemm<kHd, kBlock / 16, true, false>(st_w, kSld, k_s + warp * kRows * kT, kT, q_s, kT);    // Sᵀ = K·Qᵀ
      tc::warp_gemm<kHd, kBlock / 16, true, false>(dpt_w, kSld, v_s + warp * kRows * kT, kT, do_s, kT);  // dPᵀ = V·dOᵀ
      __syncwarp();
      pt_dst_rows(pt_w, dst_w, st_w, dpt_w, sm.stat0, sm.stat1, k_first, q0, g);
      __syncwarp();
      tc::warp_gemm<kBlock, kHd / 16, false, true>(dv_w, kA, pt_w, kPld, do_s, kT);  // dV += Pᵀ·dO
      tc::warp_gemm<kBlock, kHd / 16, false, true>(dk_w, kA, dst_w, kPld, q_s, kT);  // dK += dSᵀ·Q
      __syncwarp();
    }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int key = k_first + r;
    if (key >= g.t) continue;  // warp-uniform
    T* d = a.dqkv + (std::int64_t(b) * g.t + key) * g.row;
    T* dk = d + std::int64_t(g.nh + kvh) * kHd;
    T* dv = d + std::int64_t(g.nh + g.nkv + kvh) * kHd;
    for (int i = lane; i < kHd; i += 32) {
      dk[i] = from_f32<T>(to_f32(dk[i]) + dk_w[r * kA + i] * g.scale);
      dv[i] = from_f32<T>(to_f32(dv[i]) + dv_w[r * kA + i]);
    }
  }
}

}  // namespace
}  // namespace tc

template <class T>
void tc_attention_backward(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv, const float* lse,
                           const AttnShape& s, cudaStream_t stream) {
  if (tc_attention_wmma_selected()) return tc_attention_backward_wmma(dqkv, scratch, dout, out, qkv, lse, s, stream);
  fa2_attention_backward(dqkv, scratch, dout, out, qkv, lse, s, stream);
}

template <class T>
void tc_attention_backward_wmma(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv,
                                const float* lse, const AttnShape& s, cudaStream_t stream) {
  const tc::Dims g = tc::tc_dims(s, {dqkv, dout, out, qkv});
  flash_attention_delta(scratch, dout, out, s, stream);
  const unsigned tiles = unsigned(ceil_div<std::int64_t>(s.t, tc::kBlock));
  const tc::BackwardArgs<T> args{dqkv, dout, qkv, lse, scratch, g};
  tc::dispatch_tc_head_dim(s.hd, [&](auto hd) {
    constexpr int kHd = decltype(hd)::value, kBytes = tc::backward_shared_bytes<kHd, T>();
    tc::allow_shared_bytes(tc::tc_backward_dq_kernel<kHd, T>, kBytes);
    tc::allow_shared_bytes(tc::tc_backward_dkv_kernel<kHd, T>, kBytes);
    tc::tc_backward_dq_kernel<kHd, T><<<dim3(tiles, unsigned(s.nh), unsigned(s.b)), tc::kThreads, kBytes, stream>>>(args);
    CUDA_CHECK(cudaGetLastError());
    tc::tc_backward_dkv_kernel<kHd, T><<<dim3(tiles, unsigned(s.nkv), unsigned(s.b)), tc::kThreads, kBytes, stream>>>(args);
    CUDA_CHECK(cudaGetLastError());
  });
}

#define FSDPX_INSTANTIATE(T)                                                                                  \
  template void tc_attention_backward<T>(T*, float*, const T*, const T*, const T*, const float*, const AttnShape&,     \
                                         cudaStream_t);                                                                \
  template void tc_attention_backward_wmma<T>(T*, float*, const T*, const T*, const T*, const float*, const AttnShape&, \
                                              cudaStream_t);
FSDPX_INSTANTIATE(bf16)
FSDPX_INSTANTIATE(f16)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
