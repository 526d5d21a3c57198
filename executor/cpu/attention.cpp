// executor/cpu/attention.cpp — causal softmax attention with GQA, forward and backward, in tiles of
// kQueryTile query rows against the keys they see (0 .. last row of the tile), each product one serial
// GEMM (gemm.h), the softmax a vectorised row loop. Forward: S = Q·Kᵀ·scale, P = softmax(S) (saved),
// O = P·V. Backward per query tile: dP = dO·Vᵀ, dS = P ⊙ (dP − Σ P·dP)·scale, dQ += dS·K, dK += dSᵀ·Q,
// dV += Pᵀ·dO (the softmax Jacobian as in llm.c attention_backward). One task per (batch, head) in
// forward and per (batch, kv head) in backward owns every element it writes: no result depends on the
// thread count. Masked entries of P are exact zeros, so the GEMMs over a tile's full key range add
// nothing for them. The context-parallel form runs the same tiles with the query rows at their
// positions in the sequence and K and V (and their gradients) in a buffer of their own.
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

// The operands of one call: Q rows in `q_base` (stride q_stride: the fused qkv row), K and V rows in
// `kv_base` (stride kv_stride; inside qkv without context parallelism), K head 0 at column k_col and V
// head 0 at v_col; O and dO rows at stride NH·HD. Query row i sits at position pos[i] (i when pos is
// null; increasing) and sees keys [0, pos[i]].
struct Layout {
  std::int64_t b, t_q, t_kv, nh, nkv, hd;
  std::int64_t q_stride, kv_stride, k_col, v_col;
  const std::int64_t* pos;
  std::int64_t q_dim() const { return nh * hd; }
  std::int64_t seen(std::int64_t row) const { return (pos ? pos[row] : row) + 1; }
  std::int64_t saved_elems() const { return b * nh * t_q * t_kv; }
};

Layout layout_of(const AttnShape& s) {
  const std::int64_t q_dim = s.nh * s.hd;
  return Layout{s.b, s.t, s.t, s.nh, s.nkv, s.hd, s.qkv_row(), s.qkv_row(), q_dim, q_dim + s.nkv * s.hd, nullptr};
}

Layout layout_of(const ContextAttnShape& s) {
  return Layout{s.b, s.t_q, s.t_kv, s.nh, s.nkv, s.hd, s.qkv_row(), s.kv_row(), 0, s.nkv * s.hd, s.q_pos};
}

template <class Real>
void forward(Real* out, Real* saved, const Real* q_base, const Real* kv_base, const Layout& l) {
  FSDP_CHECK(l.nkv > 0 && l.nh % l.nkv == 0, "attention: heads must be a multiple of kv_heads");
  const Real scale = Real(1) / std::sqrt(Real(l.hd));
  parallel_for(l.b * l.nh, l.saved_elems(), [&](std::int64_t task) {
    const std::int64_t b = task / l.nh, h = task % l.nh, kvh = h / (l.nh / l.nkv);
    const Real* q = q_base + b * l.t_q * l.q_stride + h * l.hd;
    const Real* kv = kv_base + b * l.t_kv * l.kv_stride + kvh * l.hd;
    const Real *k = kv + l.k_col, *v = kv + l.v_col;
    Real* p = saved + (b * l.nh + h) * l.t_q * l.t_kv;   // [T_q, T_kv]
    Real* o = out + b * l.t_q * l.q_dim() + h * l.hd;     // [T_q, HD], rows stride NH·HD
    for (std::int64_t t0 = 0; t0 < l.t_q; t0 += kQueryTile) {
      const std::int64_t rows = std::min(kQueryTile, l.t_q - t0), keys = l.seen(t0 + rows - 1);
      Real* pt = p + t0 * l.t_kv;  // [rows, T_kv]
      gemm_serial(false, true, rows, keys, l.hd, scale, q + t0 * l.q_stride, l.q_stride, k, l.kv_stride, Real(0),
                  pt, l.t_kv);
      for (std::int64_t i = 0; i < rows; ++i) softmax_row(pt + i * l.t_kv, l.seen(t0 + i), l.t_kv);
      gemm_serial(false, false, rows, l.hd, keys, Real(1), pt, l.t_kv, v, l.kv_stride, Real(0), o + t0 * l.q_dim(),
                  l.q_dim());
    }
  });
}

// One query tile of head h: dS (in `ds`, [rows, keys]) from P and dP, then the three gradient GEMMs.
template <class Real>
void tile_backward(Real* dq_base, Real* dkv_base, const Real* dout, const Real* q_base, const Real* kv_base,
                   const Real* saved, const Layout& l, std::int64_t b, std::int64_t h, std::int64_t t0, Real* ds) {
  const std::int64_t rows = std::min(kQueryTile, l.t_q - t0), keys = l.seen(t0 + rows - 1);
  const std::int64_t kvh = h / (l.nh / l.nkv), qs = l.q_stride, ks = l.kv_stride;
  const Real scale = Real(1) / std::sqrt(Real(l.hd));
  const std::int64_t q_off = (b * l.t_q + t0) * qs + h * l.hd, kv_off = b * l.t_kv * ks + kvh * l.hd;
  const Real *q = q_base + q_off, *k = kv_base + kv_off + l.k_col, *v = kv_base + kv_off + l.v_col;
  Real *dq = dq_base + q_off, *dk = dkv_base + kv_off + l.k_col, *dv = dkv_base + kv_off + l.v_col;
  const Real* pt = saved + ((b * l.nh + h) * l.t_q + t0) * l.t_kv;    // [rows, T_kv]
  const Real* dO = dout + (b * l.t_q + t0) * l.q_dim() + h * l.hd;    // [rows, HD], rows stride NH·HD
  gemm_serial(false, true, rows, keys, l.hd, Real(1), dO, l.q_dim(), v, ks, Real(0), ds, keys);  // dP
  for (std::int64_t i = 0; i < rows; ++i) {
    const Real* p = pt + i * l.t_kv;
    Real* d = ds + i * keys;
    Real pdp = 0;
#pragma omp simd reduction(+ : pdp)
    for (std::int64_t j = 0; j < keys; ++j) pdp += p[j] * d[j];
#pragma omp simd
    for (std::int64_t j = 0; j < keys; ++j) d[j] = p[j] * (d[j] - pdp) * scale;
  }
  gemm_serial(false, false, rows, l.hd, keys, Real(1), ds, keys, k, ks, Real(1), dq, qs);
  gemm_serial(true, false, keys, l.hd, rows, Real(1), ds, keys, q, qs, Real(1), dk, ks);
  gemm_serial(true, false, keys, l.hd, rows, Real(1), pt, l.t_kv, dO, l.q_dim(), Real(1), dv, ks);
}

template <class Real>
void backward(Real* dq_base, Real* dkv_base, const Real* dout, const Real* q_base, const Real* kv_base,
              const Real* saved, const Layout& l) {
  const std::int64_t group = l.nh / l.nkv;
  parallel_for(l.b * l.nkv, l.saved_elems(), [&](std::int64_t task) {
    const std::int64_t b = task / l.nkv, kvh = task % l.nkv;
    std::vector<Real> ds(static_cast<std::size_t>(std::min(kQueryTile, l.t_q) * l.t_kv));  // [rows, keys]
    for (std::int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
      for (std::int64_t t0 = 0; t0 < l.t_q; t0 += kQueryTile)
        tile_backward(dq_base, dkv_base, dout, q_base, kv_base, saved, l, b, h, t0, ds.data());
  });
}

}  // namespace

std::int64_t context_attention_saved_elems(const ContextAttnShape& s) { return s.b * s.nh * s.t_q * s.t_kv; }

template <class Real>
void attention_forward(Real* out, Real* saved, const Real* qkv, const AttnShape& s) {
  forward(out, saved, qkv, qkv, layout_of(s));
}

template <class Real>
void attention_backward(Real* dqkv, const Real* dout, const Real* qkv, const Real* saved, const AttnShape& s) {
  backward(dqkv, dqkv, dout, qkv, qkv, saved, layout_of(s));
}

template <class Real>
void context_attention_forward(Real* out, Real* saved, const Real* qkv, const Real* kv, const ContextAttnShape& s) {
  FSDP_CHECK(s.q_pos != nullptr, "context attention: query positions missing");
  forward(out, saved, qkv, kv, layout_of(s));
}

template <class Real>
void context_attention_backward(Real* dqkv, Real* dkv, const Real* dout, const Real* qkv, const Real* kv,
                                const Real* saved, const ContextAttnShape& s) {
  backward(dqkv, dkv, dout, qkv, kv, saved, layout_of(s));
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template void attention_forward<Real>(Real*, Real*, const Real*, const AttnShape&);                             \
  template void attention_backward<Real>(Real*, const Real*, const Real*, const Real*, const AttnShape&);         \
  template void context_attention_forward<Real>(Real*, Real*, const Real*, const Real*, const ContextAttnShape&); \
  template void context_attention_backward<Real>(Real*, Real*, const Real*, const Real*, const Real*, const Real*, \
                                                 const ContextAttnShape&);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cpu
