// executor/cuda/attention_tc.cu — the tensor-core attention forward (attention_tc.h): FlashAttention-2's
// Algorithm 1 (Dao 2023) with causal masking. A block holds 64 query rows of one head in shared memory;
// for each 64-key tile up to the diagonal it loads K and V of the head's KV group, each warp computes its
// 16 rows of S = Q·Kᵀ on tensor cores, updates the row max m and sum l online (rescaling O by
// exp(m_old − m_new), Milakov & Gimelshein 2018), writes P = exp(S·scale − m) as 16-bit and adds P·V
// into O (fp32, shared memory). At the end O /= l and lse = m + log l (Alg. 1 lines 12-13).
// tc_attention_forward runs the register-resident version (attention_fa2.h); this WMMA one stays as
// tc_attention_forward_wmma for A/B benchmarks and as the fallback.
#include "executor/cuda/attention_tc.h"

#include <cstdlib>
#include <string_view>

#include "executor/cuda/attention_fa2.h"
#include "executor/cuda/attention_tc_common.cuh"

namespace fsdpx::cuda {
namespace tc {
namespace {

// Shared memory of the forward: Q, K, V [64, HD] 16-bit; S [64, 64] fp32; O [64, HD] fp32; P [64, 64]
// 16-bit. Every region is a multiple of 128 bytes, so each starts aligned.
template <int kHd, class T>
constexpr int forward_shared_bytes() {
  return 3 * kBlock * Ld<kHd>::tile * int(sizeof(T)) + kBlock * kSld * 4 + kBlock * Ld<kHd>::acc * 4 +
         kBlock * kPld * int(sizeof(T));
}

// One warp's online-softmax step over its 16 rows of the S tile of keys [k0, k0 + 64): masks keys after
// the row's query (and rows ≥ T), updates m and l, writes P and rescales the warp's O rows.
template <int kHd, class T>
__device__ void softmax_tile(float (&m)[kRows], float (&l)[kRows], const float* s_w, T* p_w, float* o_w, int q_first,
                             int k0, const tc::Dims& g) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int t = q_first + r;
    float s[2], p[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int c = lane + 32 * j;
      s[j] = k0 + c <= t && t < g.t ? s_w[r * kSld + c] * g.scale : -INFINITY;
    }
    const float m_new = fmaxf(m[r], warp_max(fmaxf(s[0], s[1])));
    // No valid key yet (rows ≥ T): P = 0, O and l unchanged.
    const float corr = m_new == -INFINITY ? 1.0f : __expf(m[r] - m_new);
#pragma unroll
    for (int j = 0; j < 2; ++j) p[j] = s[j] == -INFINITY ? 0.0f : __expf(s[j] - m_new);
    l[r] = l[r] * corr + warp_sum(p[0] + p[1]);
    m[r] = m_new;
#pragma unroll
    for (int j = 0; j < 2; ++j) p_w[r * kPld + lane + 32 * j] = from_f32<T>(p[j]);
    for (int d = lane; d < kHd; d += 32) o_w[r * Ld<kHd>::acc + d] *= corr;
  }
}

template <int kHd, class T>
__global__ void __launch_bounds__(kThreads) tc_forward_kernel(T* out, float* lse, const T* qkv, tc::Dims g) {
  constexpr int kT = Ld<kHd>::tile, kA = Ld<kHd>::acc;
  extern __shared__ __align__(128) unsigned char smem[];
  T* q_s = reinterpret_cast<T*>(smem);
  T* k_s = q_s + kBlock * kT;
  T* v_s = k_s + kBlock * kT;
  float* s_s = reinterpret_cast<float*>(v_s + kBlock * kT);
  float* o_s = s_s + kBlock * kSld;
  T* p_s = reinterpret_cast<T*>(o_s + kBlock * kA);
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBlock, warp = threadIdx.x / 32;
  const int kvh = h / (g.nh / g.nkv), q_first = q0 + warp * kRows;
  const T* base = qkv + std::int64_t(b) * g.t * g.row;
  float *s_w = s_s + warp * kRows * kSld, *o_w = o_s + warp * kRows * kA;
  T* p_w = p_s + warp * kRows * kPld;
  const T* q_w = q_s + warp * kRows * kT;
  tc::load_rows<kHd>(q_s, base, q0, g.t, g.row, std::int64_t(h) * kHd);
  tc::zero_rows(o_s, kA);
  float m[kRows], l[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) m[r] = -INFINITY, l[r] = 0.0f;
  const int last_key = min(g.t - 1, q0 + kBlock - 1);  // causal: no key after the block's last query
  for (int k0 = 0; k0 <= last_key; k0 += kBlock) {
    __syncthreads();  // the previous K/V tile is consumed (and Q, O are in place)
    tc::load_rows<kHd>(k_s, base, k0, g.t, g.row, std::int64_t(g.nh + kvh) * kHd);
    tc::load_rows<kHd>(v_s, base, k0, g.t, g.row, std::int64_t(g.nh + g.nkv + kvh) * kHd);
    __syncthreads();
    tc::warp_gemm<kHd, kBlock / 16, true, false>(s_w, kSld, q_w, kT, k_s, kT);  // S = Q·Kᵀ
    __syncwarp();
    softmax_tile<kHd>(m, l, s_w, p_w, o_w, q_first, k0, g);
    __syncwarp();
    tc::warp_gemm<kBlock, kHd / 16, false, true>(o_w, kA, p_w, kPld, v_s, kT);  // O += P·V
    __syncwarp();
  }
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int t = q_first + r;
    if (t >= g.t) continue;  // warp-uniform
    T* o = out + (std::int64_t(b) * g.t + t) * g.nh * kHd + std::int64_t(h) * kHd;
    for (int d = lane; d < kHd; d += 32) o[d] = from_f32<T>(o_w[r * kA + d] / l[r]);
    if (lane == 0) lse[(std::int64_t(b) * g.nh + h) * g.t + t] = m[r] + logf(l[r]);
  }
}

}  // namespace
}  // namespace tc

bool tc_attention_supports(const AttnShape& s) { return s.hd == 64 || s.hd == 128; }

bool tc_attention_wmma_selected() {
  static const bool wmma = [] {
    const char* v = std::getenv("FSDPX_TC_ATTENTION");
    return v != nullptr && std::string_view(v) == "wmma";
  }();
  return wmma;
}

template <class T>
void tc_attention_forward(T* out, float* lse, const T* qkv, const AttnShape& s, cudaStream_t stream) {
  if (tc_attention_wmma_selected()) return tc_attention_forward_wmma(out, lse, qkv, s, stream);
  fa2_attention_forward(out, lse, qkv, s, stream);
}

template <class T>
void tc_attention_forward_wmma(T* out, float* lse, const T* qkv, const AttnShape& s, cudaStream_t stream) {
  const tc::Dims g = tc::tc_dims(s, {out, qkv});
  const dim3 grid(unsigned(ceil_div<std::int64_t>(s.t, tc::kBlock)), unsigned(s.nh), unsigned(s.b));
  tc::dispatch_tc_head_dim(s.hd, [&](auto hd) {
    constexpr int kHd = decltype(hd)::value, kBytes = tc::forward_shared_bytes<kHd, T>();
    tc::allow_shared_bytes(tc::tc_forward_kernel<kHd, T>, kBytes);
    tc::tc_forward_kernel<kHd, T><<<grid, tc::kThreads, kBytes, stream>>>(out, lse, qkv, g);
  });
  CUDA_CHECK(cudaGetLastError());
}

template void tc_attention_forward<bf16>(bf16*, float*, const bf16*, const AttnShape&, cudaStream_t);
template void tc_attention_forward<f16>(f16*, float*, const f16*, const AttnShape&, cudaStream_t);
template void tc_attention_forward_wmma<bf16>(bf16*, float*, const bf16*, const AttnShape&, cudaStream_t);
template void tc_attention_forward_wmma<f16>(f16*, float*, const f16*, const AttnShape&, cudaStream_t);

}  // namespace fsdpx::cuda
