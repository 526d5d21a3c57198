// executor/cpu/attention.cpp — causal softmax attention with GQA, forward and backward, in tiles of
// kQueryTile query rows against the keys they see (0 .. last row of the tile), each product one serial
// GEMM (gemm.h), the softmax a vectorised row loop. Forward: S = Q·Kᵀ·scale, P = softmax(S) (saved),
// O = P·V. Backward per query tile: dP = dO·Vᵀ, dS = P ⊙ (dP − Σ P·dP)·scale, dQ += dS·K, dK += dSᵀ·Q,
// dV += Pᵀ·dO (the softmax Jacobian as in llm.c attention_backward). One task per (batch, head) in
// forward and per (batch, kv head) in backward owns every element it writes: no result depends on the
// thread count. Masked entries of P are exact zeros, so the GEMMs over a tile's full key range add
// nothing for them.
#include "executor/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/errors.h"
#include "executor/cpu/gemm.h"
#include "executor/cpu/vec_math.h"
#include "executor/cpu/kernel_pool.h"

namespace fsdpx::cpu {
namespace {

constexpr std::int64_t kQueryTile = 64;

// p [n_keys]: the scaled scores of one query row that sees keys [0, seen) -> softmax over them, zeros
// after (the causal mask).
template <class Real>
void softmax_row(Real* p, std::int64_t seen, std::int64_t n_keys) {
  Real maxv = p[0];
#pragma omp simd reduction(max : maxv)
  for (std::int64_t j = 1; j < seen; ++j) maxv = std::max(maxv, p[j]);
  Real sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < seen; ++j) {
    p[j] = vexp(p[j] - maxv);
    sum += p[j];
  }
  const Real inv = Real(1) / sum;
#pragma omp simd
  for (std::int64_t j = 0; j < seen; ++j) p[j] *= inv;
  std::fill(p + seen, p + n_keys, Real(0));
}

// Where head h of sequence b sits: Q, K, V rows start at base + {q, k, v} with stride `row`; O and dO
// rows at b·T·NH·HD + h·HD with stride NH·HD.
struct HeadOffsets {
  std::int64_t row, q_dim, base, q, k, v;
};

HeadOffsets head_offsets(const AttnShape& s, std::int64_t b, std::int64_t h) {
  const std::int64_t row = s.qkv_row(), q_dim = s.nh * s.hd, kvh = h / (s.nh / s.nkv);
  return {row, q_dim, b * s.t * row, h * s.hd, q_dim + kvh * s.hd, q_dim + (s.nkv + kvh) * s.hd};
}

}  // namespace

std::int64_t attention_saved_elems(const AttnShape& s) { return s.b * s.nh * s.t * s.t; }

template <class Real>
void attention_forward(Real* out, Real* saved, const Real* qkv, const AttnShape& s) {
  FSDP_CHECK(s.nkv > 0 && s.nh % s.nkv == 0, "attention: heads must be a multiple of kv_heads");
  const Real scale = Real(1) / std::sqrt(Real(s.hd));
  parallel_for(s.b * s.nh, attention_saved_elems(s), [&](std::int64_t task) {
    const std::int64_t b = task / s.nh, h = task % s.nh;
    const HeadOffsets ho = head_offsets(s, b, h);
    const Real *q = qkv + ho.base + ho.q, *k = qkv + ho.base + ho.k, *v = qkv + ho.base + ho.v;
    Real* p = saved + (b * s.nh + h) * s.t * s.t;   // [T, T]
    Real* o = out + b * s.t * ho.q_dim + h * s.hd;  // [T, HD], rows stride NH·HD
    for (std::int64_t t0 = 0; t0 < s.t; t0 += kQueryTile) {
      const std::int64_t rows = std::min(kQueryTile, s.t - t0), keys = t0 + rows;
      Real* pt = p + t0 * s.t;  // [rows, T]
      gemm_serial(false, true, rows, keys, s.hd, scale, q + t0 * ho.row, ho.row, k, ho.row, Real(0), pt, s.t);
      for (std::int64_t i = 0; i < rows; ++i) softmax_row(pt + i * s.t, t0 + i + 1, s.t);
      gemm_serial(false, false, rows, s.hd, keys, Real(1), pt, s.t, v, ho.row, Real(0), o + t0 * ho.q_dim, ho.q_dim);
    }
  });
}

namespace {

// One query tile of head h: dS (in `ds`, [rows, keys]) from P and dP, then the three gradient GEMMs.
template <class Real>
void attention_tile_backward(Real* dqkv, const Real* dout, const Real* qkv, const Real* saved, const AttnShape& s,
                             std::int64_t b, std::int64_t h, std::int64_t t0, Real* ds) {
  const HeadOffsets ho = head_offsets(s, b, h);
  const std::int64_t rows = std::min(kQueryTile, s.t - t0), keys = t0 + rows, row = ho.row;
  const Real scale = Real(1) / std::sqrt(Real(s.hd));
  const Real *q = qkv + ho.base + ho.q + t0 * row, *k = qkv + ho.base + ho.k, *v = qkv + ho.base + ho.v;
  Real *dq = dqkv + ho.base + ho.q + t0 * row, *dk = dqkv + ho.base + ho.k, *dv = dqkv + ho.base + ho.v;
  const Real* pt = saved + ((b * s.nh + h) * s.t + t0) * s.t;    // [rows, T]
  const Real* dO = dout + (b * s.t + t0) * ho.q_dim + h * s.hd;  // [rows, HD], rows stride NH·HD
  gemm_serial(false, true, rows, keys, s.hd, Real(1), dO, ho.q_dim, v, row, Real(0), ds, keys);  // dP
  for (std::int64_t i = 0; i < rows; ++i) {
    const Real* p = pt + i * s.t;
    Real* d = ds + i * keys;
    Real pdp = 0;
#pragma omp simd reduction(+ : pdp)
    for (std::int64_t j = 0; j < keys; ++j) pdp += p[j] * d[j];
#pragma omp simd
    for (std::int64_t j = 0; j < keys; ++j) d[j] = p[j] * (d[j] - pdp) * scale;
  }
  gemm_serial(false, false, rows, s.hd, keys, Real(1), ds, keys, k, row, Real(1), dq, row);
  gemm_serial(true, false, keys, s.hd, rows, Real(1), ds, keys, q, row, Real(1), dk, row);
  gemm_serial(true, false, keys, s.hd, rows, Real(1), pt, s.t, dO, ho.q_dim, Real(1), dv, row);
}

}  // namespace

template <class Real>
void attention_backward(Real* dqkv, const Real* dout, const Real* qkv, const Real* saved, const AttnShape& s) {
  const std::int64_t group = s.nh / s.nkv;
  parallel_for(s.b * s.nkv, attention_saved_elems(s), [&](std::int64_t task) {
    const std::int64_t b = task / s.nkv, kvh = task % s.nkv;
    std::vector<Real> ds(static_cast<std::size_t>(std::min(kQueryTile, s.t) * s.t));  // [rows, keys]
    for (std::int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
      for (std::int64_t t0 = 0; t0 < s.t; t0 += kQueryTile)
        attention_tile_backward(dqkv, dout, qkv, saved, s, b, h, t0, ds.data());
  });
}

#define FSDPX_INSTANTIATE(Real)                                                            \
  template void attention_forward<Real>(Real*, Real*, const Real*, const AttnShape&); \
  template void attention_backward<Real>(Real*, const Real*, const Real*, const Real*, const AttnShape&);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cpu
