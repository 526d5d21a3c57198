// executor/cuda/attention.cu — the tiled causal attention kernels (see attention.h for the layout and
// launch constraints). Online softmax per query row (Milakov & Gimelshein 2018): running max m, sum l
// and output accumulator rescaled by exp(m_old − m_new) per key tile. Backward per FA2 (Dao 2023,
// Alg. 2): P = exp(S − lse), dP = dO·Vᵀ, dS = P ∘ (dP − delta), dQ = dS·K·scale, dK = dSᵀ·Q·scale,
// dV = Pᵀ·dO; dQ and dK/dV in separate kernels so that no element needs atomics.
#include "executor/cuda/attention.h"

#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kTile = 32;        // query rows per block, keys per tile
constexpr int kWarps = 8;        // 256 threads
constexpr int kRowsPerWarp = 4;  // kWarps · kRowsPerWarp == kTile

struct Dims {
  int t, nh, nkv, row;  // row = (NH + 2·NKV)·HD elements per token
  float scale;
};

// Copies rows [r0, r0 + kTile) of one head (column offset col) into a padded smem tile; rows ≥ T -> 0.
template <int kHd, class T>
__device__ void load_tile(T* tile, const T* src, int r0, int t, int ld, int col) {
  for (int e = threadIdx.x; e < kTile * kHd; e += kWarps * 32) {
    const int r = e / kHd, d = e % kHd;
    tile[r * (kHd + 2) + d] = r0 + r < t ? src[std::int64_t(r0 + r) * ld + col + d] : from_f32<T>(0.0f);
  }
}

// Σ_d a[d]·b[d] over two padded smem rows.
template <int kHd, class T>
__device__ __forceinline__ float dot_rows(const T* a, const T* b) {
  float acc = 0.0f;
#pragma unroll 8
  for (int d = 0; d < kHd; ++d) acc += to_f32(a[d]) * to_f32(b[d]);
  return acc;
}

// The block of a query-tile kernel (forward and dQ): query rows [q0, q0 + kTile) of head h, whose keys
// and values are those of kv head kvh, in sequence b; warp w owns rows q0 + w·kRowsPerWarp + rr.
template <class T>
struct QueryTile {
  int b, h, kvh, q0, warp, lane;
  const T* base;  // sequence b's qkv rows [T, row]
};

template <class T>
__device__ __forceinline__ QueryTile<T> query_tile(const T* qkv, const Dims& g) {
  QueryTile<T> q;
  q.b = blockIdx.z, q.h = blockIdx.y, q.q0 = blockIdx.x * kTile;
  q.kvh = q.h / (g.nh / g.nkv), q.warp = threadIdx.x / 32, q.lane = threadIdx.x % 32;
  q.base = qkv + std::int64_t(q.b) * g.t * g.row;
  return q;
}

// K and V of kv head kvh for keys [k0, k0 + kTile) into padded smem tiles.
template <int kHd, class T>
__device__ void load_kv_tiles(T* k_s, T* v_s, const T* base, int k0, int kvh, const Dims& g) {
  load_tile<kHd>(k_s, base, k0, g.t, g.row, (g.nh + kvh) * kHd);
  load_tile<kHd>(v_s, base, k0, g.t, g.row, (g.nh + g.nkv + kvh) * kHd);
}

// body(k0) for every key tile that the causal mask leaves to the query tile, with its K and V loaded.
template <int kHd, class T, class Body>
__device__ __forceinline__ void for_each_key_tile(T* k_s, T* v_s, const QueryTile<T>& q, const Dims& g,
                                                  Body&& body) {
  const int last_key = min(g.t - 1, q.q0 + kTile - 1);
  for (int k0 = 0; k0 <= last_key; k0 += kTile) {
    __syncthreads();  // the previous K/V tile is consumed
    load_kv_tiles<kHd>(k_s, v_s, q.base, k0, q.kvh, g);
    __syncthreads();
    body(k0);
  }
}

// fn(rr, t) for this warp's query rows t = q0 + warp·kRowsPerWarp + rr that exist (t < T); warp-uniform.
template <class T, class Fn>
__device__ __forceinline__ void for_each_warp_row(const QueryTile<T>& q, const Dims& g, Fn&& fn) {
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int t = q.q0 + q.warp * kRowsPerWarp + rr;
    if (t < g.t) fn(rr, t);
  }
}

template <int kDpl, class T>
__global__ void __launch_bounds__(kWarps * 32) flash_forward_kernel(T* out, float* lse, const T* qkv, Dims g) {
  constexpr int kHd = 32 * kDpl, kS = kHd + 2;
  __shared__ T q_s[kTile * kS], k_s[kTile * kS], v_s[kTile * kS];
  const auto q = query_tile(qkv, g);
  const int lane = q.lane;
  load_tile<kHd>(q_s, q.base, q.q0, g.t, g.row, q.h * kHd);
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kDpl];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
#pragma unroll
    for (int i = 0; i < kDpl; ++i) acc[rr][i] = 0.0f;
  }
  for_each_key_tile<kHd>(k_s, v_s, q, g, [&](int k0) {
    for_each_warp_row(q, g, [&](int rr, int t) {
      const int r = t - q.q0, key = k0 + lane;
      const float s = key <= t ? dot_rows<kHd>(q_s + r * kS, k_s + lane * kS) * g.scale : -INFINITY;
      const float m_new = fmaxf(m[rr], warp_max(s));
      if (m_new == -INFINITY) return;  // warp-uniform: no valid key yet for this row
      const float corr = __expf(m[rr] - m_new), p = s == -INFINITY ? 0.0f : __expf(s - m_new);
      l[rr] = l[rr] * corr + warp_sum(p);
      m[rr] = m_new;
#pragma unroll
      for (int i = 0; i < kDpl; ++i) acc[rr][i] *= corr;
      for (int j = 0; j < 32; ++j) {
        const float pj = __shfl_sync(0xffffffffu, p, j);
#pragma unroll
        for (int i = 0; i < kDpl; ++i) acc[rr][i] += pj * to_f32(v_s[j * kS + lane + 32 * i]);
      }
    });
  });
  for_each_warp_row(q, g, [&](int rr, int t) {
    T* o = out + (std::int64_t(q.b) * g.t + t) * g.nh * kHd + q.h * kHd;
#pragma unroll
    for (int i = 0; i < kDpl; ++i) o[lane + 32 * i] = from_f32<T>(acc[rr][i] / l[rr]);
    if (lane == 0) lse[(std::int64_t(q.b) * g.nh + q.h) * g.t + t] = m[rr] + logf(l[rr]);
  });
}

// delta [B, NH, T] = Σ_d dO·O, one warp per (b, t, h).
template <class T>
__global__ void flash_delta_kernel(float* delta, const T* dout, const T* out, std::int64_t rows, int t, int nh,
                                   int hd) {
  const std::int64_t r = std::int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;  // (b·T + t)·NH + h
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  float acc = 0.0f;
  for (int d = lane; d < hd; d += 32) acc += to_f32(dout[r * hd + d]) * to_f32(out[r * hd + d]);
  acc = warp_sum(acc);
  const std::int64_t token = r / nh, b = token / t;
  if (lane == 0) delta[(b * nh + r % nh) * t + token % t] = acc;
}

// The backward kernels' arguments: dqkv [B, T, row] (+=), dout [B, T, NH·HD], qkv, lse and delta [B, NH, T].
template <class T>
struct BackwardArgs {
  T* dqkv;
  const T* dout;
  const T* qkv;
  const float* lse;
  const float* delta;
  Dims g;
};

// dQ: the forward's layout (block = 32 query rows of head h; warp = 4 rows; lane j = key j of the tile).
template <int kDpl, class T>
__global__ void __launch_bounds__(kWarps * 32) flash_backward_dq_kernel(BackwardArgs<T> a) {
  constexpr int kHd = 32 * kDpl, kS = kHd + 2;
  __shared__ T q_s[kTile * kS], do_s[kTile * kS], k_s[kTile * kS], v_s[kTile * kS];
  const Dims& g = a.g;
  const T *dout = a.dout, *qkv = a.qkv;
  const float *lse = a.lse, *delta = a.delta;
  T* dqkv = a.dqkv;
  const auto q = query_tile(qkv, g);
  const int lane = q.lane;
  load_tile<kHd>(q_s, q.base, q.q0, g.t, g.row, q.h * kHd);
  load_tile<kHd>(do_s, dout + std::int64_t(q.b) * g.t * g.nh * kHd, q.q0, g.t, g.nh * kHd, q.h * kHd);
  float row_lse[kRowsPerWarp], row_delta[kRowsPerWarp], dq[kRowsPerWarp][kDpl];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int t = q.q0 + q.warp * kRowsPerWarp + rr;
    const std::int64_t at = (std::int64_t(q.b) * g.nh + q.h) * g.t + min(t, g.t - 1);
    row_lse[rr] = lse[at];
    row_delta[rr] = delta[at];
#pragma unroll
    for (int i = 0; i < kDpl; ++i) dq[rr][i] = 0.0f;
  }
  for_each_key_tile<kHd>(k_s, v_s, q, g, [&](int k0) {
    for_each_warp_row(q, g, [&](int rr, int t) {
      const int r = t - q.q0, key = k0 + lane;
      float ds = 0.0f;
      if (key <= t) {
        const float p = __expf(dot_rows<kHd>(q_s + r * kS, k_s + lane * kS) * g.scale - row_lse[rr]);
        ds = p * (dot_rows<kHd>(do_s + r * kS, v_s + lane * kS) - row_delta[rr]);
      }
      for (int j = 0; j < 32; ++j) {
        const float dsj = __shfl_sync(0xffffffffu, ds, j);
#pragma unroll
        for (int i = 0; i < kDpl; ++i) dq[rr][i] += dsj * to_f32(k_s[j * kS + lane + 32 * i]);
      }
    });
  });
  for_each_warp_row(q, g, [&](int rr, int t) {
    T* d = dqkv + (std::int64_t(q.b) * g.t + t) * g.row + q.h * kHd;
#pragma unroll
    for (int i = 0; i < kDpl; ++i) d[lane + 32 * i] = from_f32<T>(to_f32(d[lane + 32 * i]) + dq[rr][i] * g.scale);
  });
}

// dK, dV: block = 32 keys of kv head kvh; warp = 4 keys; lane i = query row i of the current query tile.
// Loops over the query heads of the GQA group and every query tile at or after the key tile (causal).
template <int kDpl, class T>
__global__ void __launch_bounds__(kWarps * 32) flash_backward_dkv_kernel(BackwardArgs<T> a) {
  constexpr int kHd = 32 * kDpl, kS = kHd + 2;
  __shared__ T k_s[kTile * kS], v_s[kTile * kS], q_s[kTile * kS], do_s[kTile * kS];
  __shared__ float lse_s[kTile], delta_s[kTile];
  const Dims& g = a.g;
  const T *dout = a.dout, *qkv = a.qkv;
  const float *lse = a.lse, *delta = a.delta;
  T* dqkv = a.dqkv;
  const int b = blockIdx.z, kvh = blockIdx.y, k0 = blockIdx.x * kTile, group = g.nh / g.nkv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* base = qkv + std::int64_t(b) * g.t * g.row;
  load_kv_tiles<kHd>(k_s, v_s, base, k0, kvh, g);
  float dk[kRowsPerWarp][kDpl], dv[kRowsPerWarp][kDpl];
#pragma unroll
  for (int kk = 0; kk < kRowsPerWarp; ++kk)
#pragma unroll
    for (int i = 0; i < kDpl; ++i) dk[kk][i] = dv[kk][i] = 0.0f;
  for (int h = kvh * group; h < (kvh + 1) * group; ++h)
    for (int q0 = k0; q0 < g.t; q0 += kTile) {
      __syncthreads();  // the previous query tile is consumed
      load_tile<kHd>(q_s, base, q0, g.t, g.row, h * kHd);
      load_tile<kHd>(do_s, dout + std::int64_t(b) * g.t * g.nh * kHd, q0, g.t, g.nh * kHd, h * kHd);
      if (threadIdx.x < kTile) {
        const std::int64_t at = (std::int64_t(b) * g.nh + h) * g.t + min(q0 + int(threadIdx.x), g.t - 1);
        lse_s[threadIdx.x] = lse[at];
        delta_s[threadIdx.x] = delta[at];
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kRowsPerWarp; ++kk) {
        const int kl = warp * kRowsPerWarp + kk, key = k0 + kl, t = q0 + lane;
        float p = 0.0f, ds = 0.0f;
        if (t < g.t && key <= t) {
          p = __expf(dot_rows<kHd>(q_s + lane * kS, k_s + kl * kS) * g.scale - lse_s[lane]);
          ds = p * (dot_rows<kHd>(do_s + lane * kS, v_s + kl * kS) - delta_s[lane]);
        }
        for (int j = 0; j < 32; ++j) {
          const float pj = __shfl_sync(0xffffffffu, p, j), dsj = __shfl_sync(0xffffffffu, ds, j);
#pragma unroll
          for (int i = 0; i < kDpl; ++i) {
            dv[kk][i] += pj * to_f32(do_s[j * kS + lane + 32 * i]);
            dk[kk][i] += dsj * to_f32(q_s[j * kS + lane + 32 * i]);
          }
        }
      }
    }
#pragma unroll
  for (int kk = 0; kk < kRowsPerWarp; ++kk) {
    const int key = k0 + warp * kRowsPerWarp + kk;
    if (key >= g.t) continue;
    T* d = dqkv + (std::int64_t(b) * g.t + key) * g.row;
#pragma unroll
    for (int i = 0; i < kDpl; ++i) {
      T* dkp = d + (g.nh + kvh) * kHd + lane + 32 * i;
      T* dvp = d + (g.nh + g.nkv + kvh) * kHd + lane + 32 * i;
      *dkp = from_f32<T>(to_f32(*dkp) + dk[kk][i] * g.scale);
      *dvp = from_f32<T>(to_f32(*dvp) + dv[kk][i]);
    }
  }
}

Dims check_shape(const AttnShape& s) {
  FSDP_CHECK(s.b > 0 && s.t > 0 && s.nkv > 0 && s.nh % s.nkv == 0 && s.nh <= 65535 && s.b <= 65535,
             fmt::format("flash attention: bad shape b={} t={} nh={} nkv={}", s.b, s.t, s.nh, s.nkv));
  FSDP_CHECK(s.hd % 32 == 0 && s.hd >= 32 && s.hd <= 128,
             fmt::format("flash attention: head_dim {} not in {{32, 64, 96, 128}}", s.hd));
  FSDP_CHECK(s.b * s.t * s.qkv_row() < (std::int64_t(1) << 62) && s.t < (1 << 30), "flash attention: too large");
  return Dims{int(s.t), int(s.nh), int(s.nkv), int(s.qkv_row()), float(1.0 / std::sqrt(double(s.hd)))};
}

// Calls fn(std::integral_constant<int, HD/32>) for the supported head dims.
template <class Fn>
void dispatch_head_dim(std::int64_t hd, Fn&& fn) {
  switch (hd / 32) {
    case 1: fn(std::integral_constant<int, 1>{}); break;
    case 2: fn(std::integral_constant<int, 2>{}); break;
    case 3: fn(std::integral_constant<int, 3>{}); break;
    default: fn(std::integral_constant<int, 4>{}); break;
  }
}

}  // namespace

std::int64_t flash_attention_lse_elems(const AttnShape& s) { return s.b * s.nh * s.t; }
std::int64_t flash_attention_scratch_elems(const AttnShape& s) { return s.b * s.nh * s.t; }

template <class T>
void flash_attention_forward(T* out, float* lse, const T* qkv, const AttnShape& s, cudaStream_t stream) {
  const Dims g = check_shape(s);
  const dim3 grid(unsigned(ceil_div<std::int64_t>(s.t, kTile)), unsigned(s.nh), unsigned(s.b));
  dispatch_head_dim(s.hd, [&](auto dpl) {
    flash_forward_kernel<decltype(dpl)::value, T><<<grid, kWarps * 32, 0, stream>>>(out, lse, qkv, g);
  });
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void flash_attention_delta(float* delta, const T* dout, const T* out, const AttnShape& s, cudaStream_t stream) {
  const std::int64_t rows = s.b * s.t * s.nh;
  flash_delta_kernel<T><<<unsigned(ceil_div<std::int64_t>(rows, kWarps)), kWarps * 32, 0, stream>>>(
      delta, dout, out, rows, int(s.t), int(s.nh), int(s.hd));
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void flash_attention_backward(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv,
                              const float* lse, const AttnShape& s, cudaStream_t stream) {
  const Dims g = check_shape(s);
  flash_attention_delta(scratch, dout, out, s, stream);
  const unsigned tiles = unsigned(ceil_div<std::int64_t>(s.t, kTile));
  const BackwardArgs<T> args{dqkv, dout, qkv, lse, scratch, g};
  dispatch_head_dim(s.hd, [&](auto dpl) {
    constexpr int kDpl = decltype(dpl)::value;
    flash_backward_dq_kernel<kDpl, T><<<dim3(tiles, unsigned(s.nh), unsigned(s.b)), kWarps * 32, 0, stream>>>(args);
    CUDA_CHECK(cudaGetLastError());
    flash_backward_dkv_kernel<kDpl, T><<<dim3(tiles, unsigned(s.nkv), unsigned(s.b)), kWarps * 32, 0, stream>>>(args);
    CUDA_CHECK(cudaGetLastError());
  });
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template void flash_attention_forward<T>(T*, float*, const T*, const AttnShape&, cudaStream_t);                 \
  template void flash_attention_delta<T>(float*, const T*, const T*, const AttnShape&, cudaStream_t);            \
  template void flash_attention_backward<T>(T*, float*, const T*, const T*, const T*, const float*,              \
                                            const AttnShape&, cudaStream_t);
FSDPX_INSTANTIATE(bf16)
FSDPX_INSTANTIATE(f16)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
