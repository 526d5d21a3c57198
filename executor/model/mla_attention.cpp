// executor/model/mla_attention.cpp — multi-head latent attention on the CPU (see mla_attention.h), timed
// under the simulator's kernel names (cost_models/compute_mla.cpp): wq_a, q_a_norm, wq_b (or wq), wkv_a,
// kv_a_norm, wkv_b, rope, attn_core; backward the same with _dx/_dw and _bwd. Forward runs the query
// chain, the key/value chain, RoPE, then assembles the padded multi-head qkv (queries times YaRN's softmax
// factor, so the core's 1/sqrt(D) becomes DeepSeek's softmax_scale); backward runs the reverse.
#include "executor/model/mla_attention.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/cpu/attention.h"
#include "executor/cpu/gemm.h"
#include "executor/cpu/norm.h"

namespace fsdpx {
namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

template <class Real>
constexpr const Real* kNoBias = nullptr;

// RoPE on interleaved pairs (x_2i, x_2i+1) of a rope-wide vector at table row `row`, by +angle (sign 1) or
// -angle (sign -1: the backward, the rotation's transpose).
template <class Real>
void rotate_interleaved(Real* x, const RopeTable<Real>& tab, std::int64_t row, Real sign) {
  const Real* c = tab.cos.data() + row * tab.half;
  const Real* s = tab.sin.data() + row * tab.half;
  for (std::int64_t i = 0; i < tab.half; ++i) {
    const Real x0 = x[2 * i], x1 = x[2 * i + 1];
    x[2 * i] = x0 * c[i] - sign * x1 * s[i];
    x[2 * i + 1] = x1 * c[i] + sign * x0 * s[i];
  }
}

}  // namespace

template <class Real>
void mla_forward(const MlaDims& d, const MlaTensors<const Real*>& p, const RopeTable<Real>& rope, const Real* x,
                 Real* out, Real* qkv, Real* att, MlaActs<Real>& a, OpProfiler* prof, int module) {
  FSDP_CHECK(rope.half * 2 == d.rope && rope.seq >= d.t, "mla_forward: the RoPE table is not qk_rope_head_dim wide");
  const std::int64_t D = d.qk(), H = d.heads, row = 3 * H * D, kvb_row = d.nope + d.v;
  std::vector<Real> qd(at(d.n * d.q_width()));  // [N, H·D] queries before RoPE
  if (d.q_rank > 0) {
    { ScopedOp op(prof, "wq_a", module);
      cpu::matmul_forward(a.qa.data(), x, p.q_a, kNoBias<Real>, d.n, d.c, d.q_rank); }
    { ScopedOp op(prof, "q_a_norm", module);
      cpu::rmsnorm_forward(a.qa_n.data(), a.qa_rstd.data(), a.qa.data(), p.q_a_norm, d.n, d.q_rank, d.eps); }
    ScopedOp op(prof, "wq_b", module);
    cpu::matmul_forward(qd.data(), a.qa_n.data(), p.q_b, kNoBias<Real>, d.n, d.q_rank, d.q_width());
  } else {
    ScopedOp op(prof, "wq", module);
    cpu::matmul_forward(qd.data(), x, p.q, kNoBias<Real>, d.n, d.c, d.q_width());
  }
  { ScopedOp op(prof, "wkv_a", module);
    cpu::matmul_forward(a.kva.data(), x, p.kv_a, kNoBias<Real>, d.n, d.c, d.kv_a_width()); }
  { ScopedOp op(prof, "kv_a_norm", module);
    std::vector<Real> c_kv(at(d.n * d.kv_rank));  // the latent, without the rope key
    for (std::int64_t i = 0; i < d.n; ++i)
      std::copy_n(a.kva.begin() + i * d.kv_a_width(), d.kv_rank, c_kv.begin() + i * d.kv_rank);
    cpu::rmsnorm_forward(a.kv_n.data(), a.kv_rstd.data(), c_kv.data(), p.kv_a_norm, d.n, d.kv_rank, d.eps); }
  { ScopedOp op(prof, "wkv_b", module);
    cpu::matmul_forward(a.kvb.data(), a.kv_n.data(), p.kv_b, kNoBias<Real>, d.n, d.kv_rank, d.kv_b_width()); }
  ScopedOp op(prof, "rope", module);  // and the assembly of the padded multi-head qkv
  const Real q_scale = static_cast<Real>(d.softmax_scale_factor);
  for (std::int64_t i = 0; i < d.n; ++i) {
    const std::int64_t pos_row = i % d.t;
    Real* r = qkv + i * row;
    std::vector<Real> k_pe(a.kva.begin() + i * d.kv_a_width() + d.kv_rank, a.kva.begin() + (i + 1) * d.kv_a_width());
    rotate_interleaved(k_pe.data(), rope, pos_row, Real(1));
    for (std::int64_t h = 0; h < H; ++h) {
      Real* qh = r + h * D;
      std::copy_n(qd.begin() + i * d.q_width() + h * D, D, qh);
      rotate_interleaved(qh + d.nope, rope, pos_row, Real(1));
      if (q_scale != Real(1))  // YaRN's softmax factor: (f·q)·k / sqrt(D) = f · q·k / sqrt(D)
        for (std::int64_t j = 0; j < D; ++j) qh[j] *= q_scale;
      const Real* kv_h = a.kvb.data() + i * d.kv_b_width() + h * kvb_row;  // [k_nope | v]
      Real* kh = r + (H + h) * D;
      std::copy_n(kv_h, d.nope, kh);
      std::copy(k_pe.begin(), k_pe.end(), kh + d.nope);
      Real* vh = r + (2 * H + h) * D;
      std::copy_n(kv_h + d.nope, d.v, vh);
      std::fill(vh + d.v, vh + D, Real(0));
    }
  }
  { ScopedOp core(prof, "attn_core", module);
    cpu::attention_forward(a.out_pad.data(), att, qkv, d.attn()); }
  for (std::int64_t i = 0; i < d.n; ++i)
    for (std::int64_t h = 0; h < H; ++h)
      std::copy_n(a.out_pad.begin() + i * d.q_width() + h * D, d.v, out + i * d.out_width() + h * d.v);
}

template <class Real>
void mla_backward(const MlaDims& d, const MlaTensors<const Real*>& p, const MlaTensors<Real*>& g,
                  const RopeTable<Real>& rope, const Real* x, const Real* dout, const Real* qkv, const Real* att,
                  const MlaActs<Real>& a, Real* dqkv, Real* dx, MlaScratch<Real>& s, OpProfiler* prof, int module) {
  const std::int64_t D = d.qk(), H = d.heads, row = 3 * H * D, kvb_row = d.nope + d.v;
  std::fill(s.dout_pad.begin(), s.dout_pad.end(), Real(0));
  for (std::int64_t i = 0; i < d.n; ++i)
    for (std::int64_t h = 0; h < H; ++h)
      std::copy_n(dout + i * d.out_width() + h * d.v, d.v, s.dout_pad.begin() + i * d.q_width() + h * D);
  std::fill(dqkv, dqkv + d.n * row, Real(0));
  { ScopedOp op(prof, "attn_core_bwd", module);
    cpu::attention_backward(dqkv, s.dout_pad.data(), qkv, att, d.attn()); }
  { ScopedOp op(prof, "rope_bwd", module);  // and the split of dqkv into the chains' output gradients
    const Real q_scale = static_cast<Real>(d.softmax_scale_factor);
    std::fill(s.dkva.begin(), s.dkva.end(), Real(0));
    for (std::int64_t i = 0; i < d.n; ++i) {
      const std::int64_t pos_row = i % d.t;
      const Real* r = dqkv + i * row;
      Real* dk_pe = s.dkva.data() + i * d.kv_a_width() + d.kv_rank;  // the shared key: every head's gradient
      for (std::int64_t h = 0; h < H; ++h) {
        Real* dq = s.dq.data() + i * d.q_width() + h * D;
        std::copy_n(r + h * D, D, dq);
        if (q_scale != Real(1))
          for (std::int64_t j = 0; j < D; ++j) dq[j] *= q_scale;
        rotate_interleaved(dq + d.nope, rope, pos_row, Real(-1));
        const Real* dk = r + (H + h) * D;
        Real* dkv_h = s.dkvb.data() + i * d.kv_b_width() + h * kvb_row;
        std::copy_n(dk, d.nope, dkv_h);
        for (std::int64_t j = 0; j < d.rope; ++j) dk_pe[j] += dk[d.nope + j];
        std::copy_n(r + (2 * H + h) * D, d.v, dkv_h + d.nope);
      }
      rotate_interleaved(dk_pe, rope, pos_row, Real(-1));
    } }
  { ScopedOp op(prof, "wkv_b_dx", module);  // and its weight gradient
    std::fill(s.dkv_n.begin(), s.dkv_n.end(), Real(0));
    cpu::matmul_backward_dx(s.dkv_n.data(), s.dkvb.data(), p.kv_b, d.n, d.kv_rank, d.kv_b_width());
    cpu::matmul_backward_dw(g.kv_b, static_cast<Real*>(nullptr), s.dkvb.data(), a.kv_n.data(), d.n, d.kv_rank,
                            d.kv_b_width()); }
  { ScopedOp op(prof, "kv_a_norm_bwd", module);
    std::vector<Real> c_kv(at(d.n * d.kv_rank)), dc_kv(c_kv.size(), Real(0));
    for (std::int64_t i = 0; i < d.n; ++i)
      std::copy_n(a.kva.begin() + i * d.kv_a_width(), d.kv_rank, c_kv.begin() + i * d.kv_rank);
    cpu::rmsnorm_backward(dc_kv.data(), g.kv_a_norm, s.dkv_n.data(), c_kv.data(), p.kv_a_norm, a.kv_rstd.data(), d.n,
                          d.kv_rank);
    for (std::int64_t i = 0; i < d.n; ++i)
      std::copy_n(dc_kv.begin() + i * d.kv_rank, d.kv_rank, s.dkva.begin() + i * d.kv_a_width()); }
  { ScopedOp op(prof, "wkv_a_dx", module);
    cpu::matmul_backward_dx(dx, s.dkva.data(), p.kv_a, d.n, d.c, d.kv_a_width());
    cpu::matmul_backward_dw(g.kv_a, static_cast<Real*>(nullptr), s.dkva.data(), x, d.n, d.c, d.kv_a_width()); }
  if (d.q_rank == 0) {
    ScopedOp op(prof, "wq_dx", module);
    cpu::matmul_backward_dx(dx, s.dq.data(), p.q, d.n, d.c, d.q_width());
    cpu::matmul_backward_dw(g.q, static_cast<Real*>(nullptr), s.dq.data(), x, d.n, d.c, d.q_width());
    return;
  }
  { ScopedOp op(prof, "wq_b_dx", module);
    std::fill(s.dqa_n.begin(), s.dqa_n.end(), Real(0));
    cpu::matmul_backward_dx(s.dqa_n.data(), s.dq.data(), p.q_b, d.n, d.q_rank, d.q_width());
    cpu::matmul_backward_dw(g.q_b, static_cast<Real*>(nullptr), s.dq.data(), a.qa_n.data(), d.n, d.q_rank,
                            d.q_width()); }
  { ScopedOp op(prof, "q_a_norm_bwd", module);
    std::fill(s.dqa.begin(), s.dqa.end(), Real(0));
    cpu::rmsnorm_backward(s.dqa.data(), g.q_a_norm, s.dqa_n.data(), a.qa.data(), p.q_a_norm, a.qa_rstd.data(), d.n,
                          d.q_rank); }
  ScopedOp op(prof, "wq_a_dx", module);
  cpu::matmul_backward_dx(dx, s.dqa.data(), p.q_a, d.n, d.c, d.q_rank);
  cpu::matmul_backward_dw(g.q_a, static_cast<Real*>(nullptr), s.dqa.data(), x, d.n, d.c, d.q_rank);
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template void mla_forward<Real>(const MlaDims&, const MlaTensors<const Real*>&, const RopeTable<Real>&,          \
                                  const Real*, Real*, Real*, Real*, MlaActs<Real>&, OpProfiler*, int);             \
  template void mla_backward<Real>(const MlaDims&, const MlaTensors<const Real*>&, const MlaTensors<Real*>&,       \
                                   const RopeTable<Real>&, const Real*, const Real*, const Real*, const Real*,     \
                                   const MlaActs<Real>&, Real*, Real*, MlaScratch<Real>&, OpProfiler*, int);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
