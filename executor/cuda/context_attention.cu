// executor/cuda/context_attention.cu — context parallelism's kernels (see context_attention.h): the
// forward is one thread per (batch, head, query row) with an online softmax over the keys at positions
// <= the row's (Milakov & Gimelshein 2018, §3); the backward follows FlashAttention-2's equations (Dao
// 2023, §2.3: D = rowsum(dO ∘ O), dS = P ∘ (dP − D)) with dQ per query row and dK, dV per key row, so
// every gradient element has one writer and one summation order. Simple, not fast (issue 27).
#include "executor/cuda/context_attention.h"

#include <cmath>

#include "core/errors.h"
#include "executor/cuda/common.cuh"

namespace fsdpx::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHd = 128;

unsigned blocks(std::int64_t n) { return unsigned((n + kThreads - 1) / kThreads); }

struct Rows {  // the element offsets of one query row's head and one key row's K and V heads
  ContextAttnDims s;
  __device__ std::int64_t q(std::int64_t b, std::int64_t i, std::int64_t h) const {
    return (b * s.t_q + i) * (s.nh + 2 * s.nkv) * s.hd + h * s.hd;
  }
  __device__ std::int64_t o(std::int64_t b, std::int64_t i, std::int64_t h) const { return (b * s.t_q + i) * s.nh * s.hd + h * s.hd; }
  __device__ std::int64_t k(std::int64_t b, std::int64_t j, std::int64_t g) const { return (b * s.t_kv + j) * 2 * s.nkv * s.hd + g * s.hd; }
  __device__ std::int64_t v(std::int64_t b, std::int64_t j, std::int64_t g) const { return k(b, j, g) + s.nkv * s.hd; }
  __device__ std::int64_t row(std::int64_t b, std::int64_t h, std::int64_t i) const { return (b * s.nh + h) * s.t_q + i; }
};

// The (batch, head, query row, kv head) of thread `id` of a per-query-row kernel; false past the end.
struct QueryRow {
  std::int64_t b, h, i, g;
};
__device__ bool query_row(const ContextAttnDims& s, std::int64_t id, QueryRow* q) {
  if (id >= s.b * s.nh * s.t_q) return false;
  q->i = id % s.t_q, q->h = (id / s.t_q) % s.nh, q->b = id / (s.t_q * s.nh), q->g = q->h / (s.nh / s.nkv);
  return true;
}

template <class T>
__device__ float dot(const T* a, const T* b, std::int64_t n) {
  float acc = 0.0f;
  for (std::int64_t d = 0; d < n; ++d) acc += to_f32(a[d]) * to_f32(b[d]);
  return acc;
}

template <class T>
__global__ void forward_kernel(T* out, float* lse, const T* qkv, const T* kv, Rows r, float scale) {
  const ContextAttnDims& s = r.s;
  QueryRow qr;
  if (!query_row(s, std::int64_t(blockIdx.x) * kThreads + threadIdx.x, &qr)) return;
  const std::int64_t i = qr.i, h = qr.h, b = qr.b, g = qr.g;
  const T* q = qkv + r.q(b, i, h);
  float m = -INFINITY, l = 0.0f, acc[kMaxHd];
  for (int d = 0; d < s.hd; ++d) acc[d] = 0.0f;
  for (std::int64_t j = 0; j <= s.q_pos[i]; ++j) {
    const float x = dot(q, kv + r.k(b, j, g), s.hd) * scale, m_new = fmaxf(m, x);
    const float old = expf(m - m_new), p = expf(x - m_new);
    const T* v = kv + r.v(b, j, g);
    for (int d = 0; d < s.hd; ++d) acc[d] = acc[d] * old + p * to_f32(v[d]);
    l = l * old + p, m = m_new;
  }
  for (int d = 0; d < s.hd; ++d) out[r.o(b, i, h) + d] = from_f32<T>(acc[d] / l);
  lse[r.row(b, h, i)] = m + logf(l);
}

template <class T>
__global__ void delta_kernel(float* delta, const T* dout, const T* out, Rows r) {
  const ContextAttnDims& s = r.s;
  QueryRow q;
  if (!query_row(s, std::int64_t(blockIdx.x) * kThreads + threadIdx.x, &q)) return;
  delta[r.row(q.b, q.h, q.i)] = dot(dout + r.o(q.b, q.i, q.h), out + r.o(q.b, q.i, q.h), s.hd);
}

template <class T>
__global__ void dq_kernel(T* dqkv, const float* delta, const T* dout, const T* qkv, const T* kv, const float* lse,
                          Rows r, float scale) {
  const ContextAttnDims& s = r.s;
  QueryRow qr;
  if (!query_row(s, std::int64_t(blockIdx.x) * kThreads + threadIdx.x, &qr)) return;
  const std::int64_t i = qr.i, h = qr.h, b = qr.b, g = qr.g;
  const T *q = qkv + r.q(b, i, h), *dy = dout + r.o(b, i, h);
  const float row_lse = lse[r.row(b, h, i)], row_delta = delta[r.row(b, h, i)];
  float dq[kMaxHd];
  for (int d = 0; d < s.hd; ++d) dq[d] = 0.0f;
  for (std::int64_t j = 0; j <= s.q_pos[i]; ++j) {
    const T* k = kv + r.k(b, j, g);
    const float p = expf(dot(q, k, s.hd) * scale - row_lse);
    const float ds = p * (dot(dy, kv + r.v(b, j, g), s.hd) - row_delta) * scale;
    for (int d = 0; d < s.hd; ++d) dq[d] += ds * to_f32(k[d]);
  }
  T* out = dqkv + r.q(b, i, h);
  for (int d = 0; d < s.hd; ++d) out[d] = from_f32<T>(to_f32(out[d]) + dq[d]);
}

template <class T>
__global__ void dkv_kernel(T* dkv, const float* delta, const T* dout, const T* qkv, const T* kv, const float* lse,
                           Rows r, float scale) {
  const ContextAttnDims& s = r.s;
  const std::int64_t id = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (id >= s.b * s.nkv * s.t_kv) return;
  const std::int64_t j = id % s.t_kv, g = (id / s.t_kv) % s.nkv, b = id / (s.t_kv * s.nkv), group = s.nh / s.nkv;
  const T *k = kv + r.k(b, j, g), *v = kv + r.v(b, j, g);
  float dk[kMaxHd], dv[kMaxHd];
  for (int d = 0; d < s.hd; ++d) dk[d] = dv[d] = 0.0f;
  for (std::int64_t h = g * group; h < (g + 1) * group; ++h)
    for (std::int64_t i = 0; i < s.t_q; ++i) {
      if (s.q_pos[i] < j) continue;
      const T *q = qkv + r.q(b, i, h), *dy = dout + r.o(b, i, h);
      const float p = expf(dot(q, k, s.hd) * scale - lse[r.row(b, h, i)]);
      const float ds = p * (dot(dy, v, s.hd) - delta[r.row(b, h, i)]) * scale;
      for (int d = 0; d < s.hd; ++d) dv[d] += p * to_f32(dy[d]), dk[d] += ds * to_f32(q[d]);
    }
  T *ok = dkv + r.k(b, j, g), *ov = dkv + r.v(b, j, g);
  for (int d = 0; d < s.hd; ++d) ok[d] = from_f32<T>(to_f32(ok[d]) + dk[d]), ov[d] = from_f32<T>(to_f32(ov[d]) + dv[d]);
}

template <class T>
__global__ void move_rows_kernel(T* dst, const T* src, const std::int64_t* map, std::int64_t rows, std::int64_t width,
                                 bool scatter) {
  const std::int64_t id = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (id >= rows * width) return;
  const std::int64_t r = id / width, c = id % width;
  if (scatter) dst[map[r] * width + c] = src[id];
  else dst[id] = src[map[r] * width + c];
}

template <class T>
__global__ void columns_kernel(T* dst, std::int64_t dst_ld, const T* src, std::int64_t src_ld, std::int64_t rows,
                               std::int64_t width, bool accumulate) {
  const std::int64_t id = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (id >= rows * width) return;
  const std::int64_t r = id / width, c = id % width;
  const float x = to_f32(src[r * src_ld + c]);
  dst[r * dst_ld + c] = from_f32<T>(accumulate ? to_f32(dst[r * dst_ld + c]) + x : x);
}

void check(const ContextAttnDims& s) {
  FSDP_CHECK(s.hd > 0 && s.hd <= kMaxHd && s.nkv > 0 && s.nh % s.nkv == 0 && s.q_pos != nullptr,
             "context_attention: bad shape");
}

}  // namespace

template <class T>
void context_attention_forward(T* out, float* lse, const T* qkv, const T* kv, const ContextAttnDims& s,
                               cudaStream_t stream) {
  check(s);
  forward_kernel<T><<<blocks(s.b * s.nh * s.t_q), kThreads, 0, stream>>>(out, lse, qkv, kv, Rows{s},
                                                                         1.0f / sqrtf(float(s.hd)));
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void context_attention_backward(T* dqkv, T* dkv, float* delta, const T* dout, const T* out, const T* qkv, const T* kv,
                                const float* lse, const ContextAttnDims& s, cudaStream_t stream) {
  check(s);
  const float scale = 1.0f / sqrtf(float(s.hd));
  delta_kernel<T><<<blocks(s.b * s.nh * s.t_q), kThreads, 0, stream>>>(delta, dout, out, Rows{s});
  CUDA_CHECK(cudaGetLastError());
  dq_kernel<T><<<blocks(s.b * s.nh * s.t_q), kThreads, 0, stream>>>(dqkv, delta, dout, qkv, kv, lse, Rows{s}, scale);
  CUDA_CHECK(cudaGetLastError());
  dkv_kernel<T><<<blocks(s.b * s.nkv * s.t_kv), kThreads, 0, stream>>>(dkv, delta, dout, qkv, kv, lse, Rows{s}, scale);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void scatter_rows(T* dst, const T* src, const std::int64_t* map, std::int64_t rows, std::int64_t width,
                  cudaStream_t stream) {
  move_rows_kernel<T><<<blocks(rows * width), kThreads, 0, stream>>>(dst, src, map, rows, width, true);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void gather_rows(T* dst, const T* src, const std::int64_t* map, std::int64_t rows, std::int64_t width,
                 cudaStream_t stream) {
  move_rows_kernel<T><<<blocks(rows * width), kThreads, 0, stream>>>(dst, src, map, rows, width, false);
  CUDA_CHECK(cudaGetLastError());
}

template <class T>
void copy_columns(T* dst, std::int64_t dst_ld, const T* src, std::int64_t src_ld, std::int64_t rows,
                  std::int64_t width, bool accumulate, cudaStream_t stream) {
  columns_kernel<T><<<blocks(rows * width), kThreads, 0, stream>>>(dst, dst_ld, src, src_ld, rows, width, accumulate);
  CUDA_CHECK(cudaGetLastError());
}

FSDPX_CONTEXT_ATTENTION_INSTANTIATE(bf16)
FSDPX_CONTEXT_ATTENTION_INSTANTIATE(f16)

}  // namespace fsdpx::cuda
