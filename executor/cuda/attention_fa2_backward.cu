// executor/cuda/attention_fa2_backward.cu — the register-resident attention backward (attention_fa2.h):
// FlashAttention-2's Algorithm 2 (Dao 2023, arXiv:2307.08691) with causal masking on mma.sync, in the
// two kernels of attention_tc_backward.cu so that every dqkv element has one writer (no float atomics:
// deterministic). Both recompute, per 64 x 64 tile, S = Q·Kᵀ, P = exp(scale·S − lse), dP = dO·Vᵀ and
// dS = P ∘ (dP − delta) (Alg. 2 lines 11-14; delta = rowsum(dO ∘ O), line 4, by attention.h's delta
// kernel) in registers. The dQ kernel: a block of 4 warps owns 64 query rows (16 per warp) and walks the
// key tiles up to the diagonal: dQ += dS·K, dS packed to 16 bits as the A operand. The dK/dV kernel: a
// block owns 64 keys of KV head g (16 per warp) and walks every query tile at or after them, for every
// query head of g's group, computing the transposed tiles Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ directly, so Pᵀ and
// dSᵀ are already in the A-fragment layout of dV += Pᵀ·dO and dK += dSᵀ·Q (no shared-memory transpose).
// dQ and dK carry the 1/sqrt(HD) scale at the end. Q, dO, K, V tiles sit in shared memory (operands are
// read by ldmatrix each use); lse and delta of a query tile too (dK/dV kernel). Leaves out: cp.async
// pipelining, FA2's single kernel with atomic dQ.
#include <cstdint>

#include "executor/cuda/attention.h"
#include "executor/cuda/attention_fa2.h"
#include "executor/cuda/attention_fa2_mma.cuh"
#include "executor/cuda/attention_tc_common.cuh"

namespace fsdpx::cuda {
namespace fa2 {
namespace {

// Four [64, HD] 16-bit tiles (rows padded by 16 bytes) and two [64] fp32 rows (lse·log2 e, delta).
template <int kHd, class T>
constexpr int backward_shared_bytes() {
  return 4 * kBlock * Geometry<kHd>::ld * int(sizeof(T)) + 2 * kBlock * 4;
}

// dst[0..1] += (x, y), rounded to T (two adjacent elements, 4-byte aligned).
template <class T>
__device__ __forceinline__ void add_pair(T* dst, float x, float y) {
  auto* p = reinterpret_cast<std::uint32_t*>(dst);
  const float2 v = unpack2<T>(*p);
  *p = pack2<T>(v.x + x, v.y + y);
}

template <int kHd, class T>
__global__ void __launch_bounds__(kThreads) fa2_backward_dq_kernel(tc::BackwardArgs<T> a) {
  using G = Geometry<kHd>;
  extern __shared__ __align__(128) unsigned char smem[];
  T *q_s = shared_tile<kHd, T>(smem, 0), *do_s = shared_tile<kHd, T>(smem, 1);
  T *k_s = shared_tile<kHd, T>(smem, 2), *v_s = shared_tile<kHd, T>(smem, 3);
  const tc::Dims& g = a.g;
  const int b = blockIdx.z, h = blockIdx.y, q0 = (gridDim.x - 1 - blockIdx.x) * kBlock;  // longest first
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
  const int kvh = h / (g.nh / g.nkv), row0 = warp * kRows + group;  // row0: this lane's first row in the block
  const T* base = a.qkv + std::int64_t(b) * g.t * g.row;
  tc::load_rows<kHd>(q_s, base, q0, g.t, g.row, std::int64_t(h) * kHd);
  tc::load_rows<kHd>(do_s, a.dout + std::int64_t(b) * g.t * g.nh * kHd, q0, g.t, std::int64_t(g.nh) * kHd,
                     std::int64_t(h) * kHd);
  float lse_log2[2], delta[2];  // rows row0 and row0 + 8 (rows ≥ T read row T − 1's and are never written)
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const std::int64_t at = (std::int64_t(b) * g.nh + h) * g.t + min(q0 + row0 + 8 * i, g.t - 1);
    lse_log2[i] = a.lse[at] * kLog2e, delta[i] = a.delta[at];
  }
  const float scale_log2 = g.scale * kLog2e;
  const T* q_w = q_s + warp * kRows * G::ld;
  const T* do_w = do_s + warp * kRows * G::ld;
  float dq[G::hd_blocks][4];
  zero(dq);
  const int last_key = min(g.t - 1, q0 + kBlock - 1);  // causal: no key after the block's last query
  for (int k0 = 0; k0 <= last_key; k0 += kBlock) {
    __syncthreads();  // every warp is done with the previous K/V tile (and Q, dO are in place)
    tc::load_rows<kHd>(k_s, base, k0, g.t, g.row, std::int64_t(g.nh + kvh) * kHd);
    tc::load_rows<kHd>(v_s, base, k0, g.t, g.row, std::int64_t(g.nh + g.nkv + kvh) * kHd);
    __syncthreads();
    float s[G::row_blocks][4], dp[G::row_blocks][4];
    zero(s), zero(dp);
    mma_abt<G::hd_steps, G::row_blocks, G::ld>(s, q_w, k_s);    // S = Q·Kᵀ
    mma_abt<G::hd_steps, G::row_blocks, G::ld>(dp, do_w, v_s);  // dP = dO·Vᵀ
    const bool diagonal = k0 == q0;  // the only tile with keys after a query (keys ≥ T included)
#pragma unroll
    for (int j = 0; j < G::row_blocks; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = e / 2;
        const float p = exp2f(fmaf(s[j][e], scale_log2, -lse_log2[i]));
        // Assigned, not multiplied: a masked p may be inf.
        s[j][e] = diagonal && 8 * j + 2 * quad + e % 2 > row0 + 8 * i ? 0.0f : p * (dp[j][e] - delta[i]);
      }
    std::uint32_t dsf[G::row_steps][4];
    pack_a<T>(dsf, s);
    mma_py<G::row_steps, G::hd_blocks, G::ld>(dq, dsf, k_s);  // dQ += dS·K
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int t = q0 + row0 + 8 * i;
    if (t >= g.t) continue;
    T* d = a.dqkv + (std::int64_t(b) * g.t + t) * g.row + std::int64_t(h) * kHd + 2 * quad;
#pragma unroll
    for (int n = 0; n < G::hd_blocks; ++n) add_pair(d + 8 * n, dq[n][2 * i] * g.scale, dq[n][2 * i + 1] * g.scale);
  }
}

template <int kHd, class T>
__global__ void __launch_bounds__(kThreads) fa2_backward_dkv_kernel(tc::BackwardArgs<T> a) {
  using G = Geometry<kHd>;
  extern __shared__ __align__(128) unsigned char smem[];
  T *k_s = shared_tile<kHd, T>(smem, 0), *v_s = shared_tile<kHd, T>(smem, 1);
  T *q_s = shared_tile<kHd, T>(smem, 2), *do_s = shared_tile<kHd, T>(smem, 3);
  float* lse_s = reinterpret_cast<float*>(shared_tile<kHd, T>(smem, 4));  // lse·log2 e of the query tile's rows
  float* delta_s = lse_s + kBlock;
  const tc::Dims& g = a.g;
  const int b = blockIdx.z, kvh = blockIdx.y, k0 = blockIdx.x * kBlock, heads = g.nh / g.nkv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
  const int key0 = warp * kRows + group;  // this lane's first key row in the block
  const T* base = a.qkv + std::int64_t(b) * g.t * g.row;
  const T* dout = a.dout + std::int64_t(b) * g.t * g.nh * kHd;
  tc::load_rows<kHd>(k_s, base, k0, g.t, g.row, std::int64_t(g.nh + kvh) * kHd);
  tc::load_rows<kHd>(v_s, base, k0, g.t, g.row, std::int64_t(g.nh + g.nkv + kvh) * kHd);
  const float scale_log2 = g.scale * kLog2e;
  const T* k_w = k_s + warp * kRows * G::ld;
  const T* v_w = v_s + warp * kRows * G::ld;
  float dk[G::hd_blocks][4], dv[G::hd_blocks][4];
  zero(dk), zero(dv);
  for (int h = kvh * heads; h < (kvh + 1) * heads; ++h)
    for (int q0 = k0; q0 < g.t; q0 += kBlock) {  // causal: query tiles at or after the key tile
      __syncthreads();  // every warp is done with the previous query tile (and K, V are in place)
      tc::load_rows<kHd>(q_s, base, q0, g.t, g.row, std::int64_t(h) * kHd);
      tc::load_rows<kHd>(do_s, dout, q0, g.t, std::int64_t(g.nh) * kHd, std::int64_t(h) * kHd);
      if (threadIdx.x < kBlock) {
        const std::int64_t at = (std::int64_t(b) * g.nh + h) * g.t + min(q0 + int(threadIdx.x), g.t - 1);
        lse_s[threadIdx.x] = a.lse[at] * kLog2e, delta_s[threadIdx.x] = a.delta[at];
      }
      __syncthreads();
      float st[G::row_blocks][4], dpt[G::row_blocks][4];  // rows: the warp's keys; n-block j: queries 8j..8j+7
      zero(st), zero(dpt);
      mma_abt<G::hd_steps, G::row_blocks, G::ld>(st, k_w, q_s);    // Sᵀ = K·Qᵀ
      mma_abt<G::hd_steps, G::row_blocks, G::ld>(dpt, v_w, do_s);  // dPᵀ = V·dOᵀ
      const bool edge = q0 == k0 || q0 + kBlock > g.t;     // keys after a query, or queries ≥ T
#pragma unroll
      for (int j = 0; j < G::row_blocks; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int c = 8 * j + 2 * quad + e % 2, r = key0 + 8 * (e / 2);
          const bool masked = edge && (k0 + r > q0 + c || q0 + c >= g.t);
          const float p = exp2f(fmaf(st[j][e], scale_log2, -lse_s[c]));
          st[j][e] = masked ? 0.0f : p;  // assigned, not multiplied: a masked p may be inf
          dpt[j][e] = masked ? 0.0f : p * (dpt[j][e] - delta_s[c]);
        }
      std::uint32_t f[G::row_steps][4];
      pack_a<T>(f, st);
      mma_py<G::row_steps, G::hd_blocks, G::ld>(dv, f, do_s);  // dV += Pᵀ·dO
      pack_a<T>(f, dpt);
      mma_py<G::row_steps, G::hd_blocks, G::ld>(dk, f, q_s);  // dK += dSᵀ·Q
    }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int key = k0 + key0 + 8 * i;
    if (key >= g.t) continue;
    T* d = a.dqkv + (std::int64_t(b) * g.t + key) * g.row + 2 * quad;
    T* dk_row = d + std::int64_t(g.nh + kvh) * kHd;
    T* dv_row = d + std::int64_t(g.nh + g.nkv + kvh) * kHd;
#pragma unroll
    for (int n = 0; n < G::hd_blocks; ++n) {
      add_pair(dk_row + 8 * n, dk[n][2 * i] * g.scale, dk[n][2 * i + 1] * g.scale);
      add_pair(dv_row + 8 * n, dv[n][2 * i], dv[n][2 * i + 1]);
    }
  }
}

}  // namespace
}  // namespace fa2

template <class T>
void fa2_attention_backward(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv, const float* lse,
                            const AttnShape& s, cudaStream_t stream) {
  const tc::Dims g = tc::tc_dims(s, {dqkv, dout, out, qkv});
  flash_attention_delta(scratch, dout, out, s, stream);
  const unsigned tiles = unsigned(ceil_div<std::int64_t>(s.t, tc::kBlock));
  const tc::BackwardArgs<T> args{dqkv, dout, qkv, lse, scratch, g};
  tc::dispatch_tc_head_dim(s.hd, [&](auto hd) {
    constexpr int kHd = decltype(hd)::value, kBytes = fa2::backward_shared_bytes<kHd, T>();
    tc::allow_shared_bytes(fa2::fa2_backward_dq_kernel<kHd, T>, kBytes);
    tc::allow_shared_bytes(fa2::fa2_backward_dkv_kernel<kHd, T>, kBytes);
    fa2::fa2_backward_dq_kernel<kHd, T>
        <<<dim3(tiles, unsigned(s.nh), unsigned(s.b)), tc::kThreads, kBytes, stream>>>(args);
    CUDA_CHECK(cudaGetLastError());
    fa2::fa2_backward_dkv_kernel<kHd, T>
        <<<dim3(tiles, unsigned(s.nkv), unsigned(s.b)), tc::kThreads, kBytes, stream>>>(args);
    CUDA_CHECK(cudaGetLastError());
  });
}

template void fa2_attention_backward<bf16>(bf16*, float*, const bf16*, const bf16*, const bf16*, const float*,
                                           const AttnShape&, cudaStream_t);
template void fa2_attention_backward<f16>(f16*, float*, const f16*, const f16*, const f16*, const float*,
                                          const AttnShape&, cudaStream_t);

}  // namespace fsdpx::cuda
