// executor/cuda/attention_fa2.cu — the register-resident attention forward (attention_fa2.h):
// FlashAttention-2's Algorithm 1 (Dao 2023, arXiv:2307.08691) with causal masking on mma.sync.
// A block of 4 warps owns 64 query rows of one head, 16 per warp. Each warp keeps its Q rows as mma
// A fragments, and for each 64-key tile up to the diagonal computes S = Q·Kᵀ (16 x 64, fp32, in
// registers), updates its rows' max m and sum l online (rescaling O by exp(m_old − m_new), Milakov &
// Gimelshein 2018), packs P = exp(scale·(S − m)) to 16 bits and adds P·V into its O accumulators
// (16 x HD, fp32, registers). At the end O /= l and lse = scale·m + log l (Alg. 1 lines 12-13).
// Only the diagonal tile is masked: keys are tiled like queries, so every earlier tile is all ≤ the query.
// Fragment layouts and the tile products: attention_fa2_mma.cuh.
#include "executor/cuda/attention_fa2.h"

#include <cstdint>

#include "executor/cuda/attention_fa2_mma.cuh"
#include "executor/cuda/attention_tc_common.cuh"

namespace fsdpx::cuda {
namespace fa2 {
namespace {

// Shared memory: Q, K and V tiles [64, HD] 16-bit, rows padded by 16 bytes (tc::Ld) so that the 8 row
// addresses of one ldmatrix matrix fall in distinct bank groups.
template <int kHd, class T>
constexpr int shared_bytes() {
  return 3 * kBlock * tc::Ld<kHd>::tile * int(sizeof(T));
}

template <int kHd, class T>
__global__ void __launch_bounds__(kThreads) fa2_forward_kernel(T* out, float* lse, const T* qkv, tc::Dims g) {
  using G = Geometry<kHd>;
  extern __shared__ __align__(128) unsigned char smem[];
  T *q_s = shared_tile<kHd, T>(smem, 0), *k_s = shared_tile<kHd, T>(smem, 1), *v_s = shared_tile<kHd, T>(smem, 2);
  // Query blocks in reverse: the longest (last, causal) start first, so short ones fill the tail (as FA2).
  const int b = blockIdx.z, h = blockIdx.y, q0 = (gridDim.x - 1 - blockIdx.x) * kBlock;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = lane / 4, quad = lane % 4;
  const int kvh = h / (g.nh / g.nkv);
  const T* base = qkv + std::int64_t(b) * g.t * g.row;

  tc::load_rows<kHd>(q_s, base, q0, g.t, g.row, std::int64_t(h) * kHd);
  __syncthreads();
  std::uint32_t qf[G::hd_steps][4];  // the warp's 16 Q rows as A fragments
#pragma unroll
  for (int kk = 0; kk < G::hd_steps; ++kk)
    ldmatrix_x4(qf[kk], shared_address(q_s + (warp * kRows + a_row()) * G::ld + 16 * kk + a_col()));

  float o[G::hd_blocks][4];
  zero(o);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // rows group and group + 8; l: this lane's part
  const float scale_log2 = g.scale * kLog2e;
  const int row0 = warp * kRows + group;  // this lane's first row in the block
  const int last_key = min(g.t - 1, q0 + kBlock - 1);  // causal: no key after the block's last query
  for (int k0 = 0; k0 <= last_key; k0 += kBlock) {
    __syncthreads();  // every warp is done with the previous K/V tile
    tc::load_rows<kHd>(k_s, base, k0, g.t, g.row, std::int64_t(g.nh + kvh) * kHd);
    tc::load_rows<kHd>(v_s, base, k0, g.t, g.row, std::int64_t(g.nh + g.nkv + kvh) * kHd);
    __syncthreads();

    float s[G::row_blocks][4];  // S = Q·Kᵀ: n-block j holds keys 8j..8j+7 of the tile
    zero(s);
    mma_fbt<G::hd_steps, G::row_blocks, G::ld>(
        s,
        [&qf](int kk, std::uint32_t(&af)[4]) {
#pragma unroll
          for (int r = 0; r < 4; ++r) af[r] = qf[kk][r];
        },
        k_s);
    if (k0 == q0) {  // the diagonal tile: key k0 + c after query q0 + r is masked
#pragma unroll
      for (int j = 0; j < G::row_blocks; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (8 * j + 2 * quad + (e % 2) > row0 + 8 * (e / 2)) s[j][e] = -INFINITY;
    }

    // Online softmax of rows group (i = 0: s[.][0..1]) and group + 8 (i = 1: s[.][2..3]).
    float m_scaled[2], corr[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float mx = m[i];
#pragma unroll
      for (int j = 0; j < G::row_blocks; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * i], s[j][2 * i + 1]));
      mx = quad_max(mx);
      // Every row has an unmasked key (key k0 ≤ q0 ≤ the row); the guard keeps a fully masked row at P = 0.
      m_scaled[i] = mx == -INFINITY ? 0.0f : mx * scale_log2;
      corr[i] = m[i] == -INFINITY ? 0.0f : exp2f(m[i] * scale_log2 - m_scaled[i]);
      m[i] = mx;
      l[i] *= corr[i];
    }
#pragma unroll
    for (int j = 0; j < G::row_blocks; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[j][e] = exp2f(fmaf(s[j][e], scale_log2, -m_scaled[e / 2]));
        l[e / 2] += s[j][e];
      }
#pragma unroll
    for (int d = 0; d < G::hd_blocks; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[d][e] *= corr[e / 2];

    // O += P·V: P's k-step kk is S's n-blocks 2kk and 2kk + 1, packed to T.
    std::uint32_t pf[G::row_steps][4];
    pack_a<T>(pf, s);
    mma_py<G::row_steps, G::hd_blocks, G::ld>(o, pf, v_s);
  }

#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float row_sum = quad_sum(l[i]);  // every lane reaches the shuffles before any row is skipped
    const int t = q0 + row0 + 8 * i;
    if (t >= g.t) continue;
    const float inv = 1.0f / row_sum;
    T* o_row = out + (std::int64_t(b) * g.t + t) * g.nh * kHd + std::int64_t(h) * kHd;
#pragma unroll
    for (int d = 0; d < G::hd_blocks; ++d)
      *reinterpret_cast<std::uint32_t*>(o_row + 8 * d + 2 * quad) =
          pack2<T>(o[d][2 * i] * inv, o[d][2 * i + 1] * inv);
    if (quad == 0) lse[(std::int64_t(b) * g.nh + h) * g.t + t] = m[i] * g.scale + logf(row_sum);
  }
}

}  // namespace
}  // namespace fa2

template <class T>
void fa2_attention_forward(T* out, float* lse, const T* qkv, const AttnShape& s, cudaStream_t stream) {
  const tc::Dims g = tc::tc_dims(s, {out, qkv});
  const dim3 grid(unsigned(ceil_div<std::int64_t>(s.t, tc::kBlock)), unsigned(s.nh), unsigned(s.b));
  tc::dispatch_tc_head_dim(s.hd, [&](auto hd) {
    constexpr int kHd = decltype(hd)::value, kBytes = fa2::shared_bytes<kHd, T>();
    tc::allow_shared_bytes(fa2::fa2_forward_kernel<kHd, T>, kBytes);
    fa2::fa2_forward_kernel<kHd, T><<<grid, tc::kThreads, kBytes, stream>>>(out, lse, qkv, g);
  });
  CUDA_CHECK(cudaGetLastError());
}

template void fa2_attention_forward<bf16>(bf16*, float*, const bf16*, const AttnShape&, cudaStream_t);
template void fa2_attention_forward<f16>(f16*, float*, const f16*, const AttnShape&, cudaStream_t);

}  // namespace fsdpx::cuda
