// executor/model/moe_mlp.cpp — the MoE MLP as CPU kernels timed under the simulator's MoE kernel names
// (cost_models/expert_compute.cpp): moe_router, moe_topk, moe_permute, moe_experts_gate_up, moe_swiglu,
// moe_experts_down. Each expert's routed rows form one GEMM (the grouped GEMM, one group at a time); the
// outputs are summed per token in expert order, as MixtralSparseMoeBlock's index_add_ loop over experts.
// Under ep > 1 the experts' GEMMs run on the rows the ep group dispatched (moe_exchange.h), one chunk per
// (source rank, local expert).
#include "executor/model/moe_mlp.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "executor/cpu/activation.h"
#include "executor/cpu/gemm.h"
#include "executor/model/moe_exchange.h"

namespace fsdpx {
namespace {

template <class Real>
void zero(std::vector<Real>& v) {
  std::fill(v.begin(), v.end(), Real(0));
}

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// probs [N, E]: softmax of the logits in place (max subtracted).
template <class Real>
void softmax_rows(Real* p, std::int64_t n, std::int64_t e) {
  for (std::int64_t i = 0; i < n; ++i) {
    Real* row = p + i * e;
    const Real mx = *std::max_element(row, row + e);
    Real sum = 0;
    for (std::int64_t j = 0; j < e; ++j) row[j] = std::exp(row[j] - mx), sum += row[j];
    for (std::int64_t j = 0; j < e; ++j) row[j] /= sum;
  }
}

// The top k experts of each token by probability (ties: the lower index), their combine weights, and
// the expert-major row order of the (token, slot) pairs.
template <class Real>
void route(const MoeDims& d, MoeActs<Real>& a) {
  std::vector<std::int32_t> order(at(d.e));
  std::fill(a.first_row.begin(), a.first_row.end(), 0);
  for (std::int64_t i = 0; i < d.n; ++i) {
    const Real* p = a.probs.data() + i * d.e;
    for (std::int64_t j = 0; j < d.e; ++j) order[at(j)] = static_cast<std::int32_t>(j);
    std::stable_sort(order.begin(), order.end(), [p](std::int32_t x, std::int32_t y) { return p[x] > p[y]; });
    Real sum = 0;
    for (std::int64_t s = 0; s < d.k; ++s) sum += p[order[at(s)]];
    for (std::int64_t s = 0; s < d.k; ++s) {
      const std::int32_t ex = order[at(s)];
      a.expert[at(i * d.k + s)] = ex;
      a.weight[at(i * d.k + s)] = d.norm_topk ? p[ex] / sum : p[ex];
      a.first_row[at(ex + 1)] += 1;
    }
  }
  for (std::int64_t ex = 0; ex < d.e; ++ex) a.first_row[at(ex + 1)] += a.first_row[at(ex)];
  std::vector<std::int64_t> next(a.first_row.begin(), a.first_row.end() - 1);
  for (std::int64_t i = 0; i < d.n; ++i)
    for (std::int64_t s = 0; s < d.k; ++s) {
      const std::int64_t r = next[at(a.expert[at(i * d.k + s)])]++;
      a.row_of[at(i * d.k + s)] = r, a.token_of[at(r)] = i, a.slot_of[at(r)] = s;
    }
}

// Load-balancing statistics of this micro-batch (load_balancing_loss_func's two means, before dividing).
template <class Real>
void record_balance(const MoeDims& d, MoeActs<Real>& a) {
  zero(a.count), zero(a.prob_sum);
  for (std::int64_t ex = 0; ex < d.e; ++ex) a.count[at(ex)] = Real(a.first_row[at(ex + 1)] - a.first_row[at(ex)]);
  for (std::int64_t i = 0; i < d.n; ++i)
    for (std::int64_t ex = 0; ex < d.e; ++ex) a.prob_sum[at(ex)] += a.probs[at(i * d.e + ex)];
}

}  // namespace

MoeDims make_moe_dims(const ModelSpec& m, std::int64_t tokens, int ep, int ep_rank) {
  FSDP_CHECK(m.is_moe() && m.moe.top_k >= 1 && m.moe.top_k <= m.moe.experts, "make_moe_dims: an MoE model");
  FSDP_CHECK(ep >= 1 && m.moe.experts % ep == 0 && ep_rank >= 0 && ep_rank < ep, "make_moe_dims: ep divides experts");
  return MoeDims{tokens, m.hidden, m.moe.experts, m.moe.top_k, m.moe.expert_ffn_hidden, m.moe.norm_topk_prob,
                 ep, ep_rank};
}

template <class Real>
void MoeActs<Real>::allocate(const MoeDims& d) {
  probs.assign(at(d.n * d.e), 0);
  expert.assign(at(d.rows()), 0), weight.assign(at(d.rows()), 0), row_of.assign(at(d.rows()), 0);
  first_row.assign(at(d.e + 1), 0);
  token_of.assign(at(d.rows()), 0), slot_of.assign(at(d.rows()), 0);
  xr.assign(at(d.rows() * d.c), 0), y.assign(at(d.rows() * d.c), 0);
  h.assign(at(d.rows() * 2 * d.f), 0), act.assign(at(d.rows() * d.f), 0);  // resized per dispatch at ep > 1
  count.assign(at(d.e), 0), prob_sum.assign(at(d.e), 0);
}

template <class Real>
void MoeScratch<Real>::allocate(const MoeDims& d) {
  dy.assign(at(d.rows() * d.c), 0), dact.assign(at(d.rows() * d.f), 0), dh.assign(at(d.rows() * 2 * d.f), 0);
  dxr.assign(at(d.rows() * d.c), 0), dprobs.assign(at(d.n * d.e), 0), dlogits.assign(at(d.n * d.e), 0);
  ex_dy.clear(), ex_dx.clear();  // ep > 1: sized per backward
}

namespace {

// The experts' forward on their side's rows: per chunk, up (gate | up), SwiGLU, down; in [R, C] -> out [R, C].
template <class Real>
void experts_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* in, Real* out, MoeActs<Real>& a,
                     OpProfiler* prof, int module) {
  const std::int64_t c = d.c, f = d.f, rows = a.expert_rows();
  if (std::int64_t(a.h.size()) < rows * 2 * f) a.h.resize(at(rows * 2 * f)), a.act.resize(at(rows * f));
  for (const ExpertChunk& k : a.chunks) {
    { ScopedOp op(prof, "moe_experts_gate_up", module);
      cpu::matmul_forward(a.h.data() + k.r0 * 2 * f, in + k.r0 * c, p.up_w + k.expert * 2 * f * c,
                          static_cast<const Real*>(nullptr), k.rows, c, 2 * f); }
    { ScopedOp op(prof, "moe_swiglu", module);
      cpu::mlp_act_forward(FfnKind::swiglu, a.act.data() + k.r0 * f, a.h.data() + k.r0 * 2 * f, k.rows, f); }
    ScopedOp op(prof, "moe_experts_down", module);
    cpu::matmul_forward(out + k.r0 * c, a.act.data() + k.r0 * f, p.down_w + k.expert * c * f,
                        static_cast<const Real*>(nullptr), k.rows, f, c);
  }
}

}  // namespace

template <class Real>
void moe_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* x, Real* out, MoeActs<Real>& a,
                 OpProfiler* prof, int module, ModelComm* comm) {
  const std::int64_t c = d.c;
  { ScopedOp op(prof, "moe_router", module);
    cpu::matmul_forward(a.probs.data(), x, p.router_w, static_cast<const Real*>(nullptr), d.n, c, d.e); }
  { ScopedOp op(prof, "moe_topk", module);
    softmax_rows(a.probs.data(), d.n, d.e);
    route(d, a);
    record_balance(d, a); }
  { ScopedOp op(prof, "moe_permute", module);
    for (std::int64_t r = 0; r < d.rows(); ++r)
      std::copy_n(x + a.token_of[at(r)] * c, c, a.xr.begin() + r * c); }
  moe_dispatch(d, a, comm);
  const bool ep = d.ep > 1;
  if (ep) a.ex_y.resize(at(a.expert_rows() * c));
  experts_forward(d, p, ep ? a.ex_x.data() : a.xr.data(), ep ? a.ex_y.data() : a.y.data(), a, prof, module);
  if (ep) moe_combine(d, a, comm);
  ScopedOp op(prof, "moe_permute", module);
  std::fill(out, out + d.n * c, Real(0));
  for (std::int64_t r = 0; r < d.rows(); ++r) {  // expert-major: each token's sum in expert order
    const std::int64_t i = a.token_of[at(r)];
    const Real w = a.weight[at(i * d.k + a.slot_of[at(r)])];
    for (std::int64_t j = 0; j < c; ++j) out[i * c + j] += w * a.y[at(r * c + j)];
  }
}

namespace {

// The routed rows' output gradients dy = weight · dout [N·k, C] and d weight [N, k] = dout · y per
// (token, slot).
template <class Real>
void routed_output_grads(const MoeDims& d, const Real* dout, const MoeActs<Real>& a, std::vector<Real>& dweight,
                         MoeScratch<Real>& s) {
  const std::int64_t c = d.c;
  for (std::int64_t r = 0; r < d.rows(); ++r) {
    const std::int64_t i = a.token_of[at(r)], slot = i * d.k + a.slot_of[at(r)];
    Real dot = 0;
    for (std::int64_t j = 0; j < c; ++j)
      s.dy[at(r * c + j)] = a.weight[at(slot)] * dout[i * c + j], dot += dout[i * c + j] * a.y[at(r * c + j)];
    dweight[at(slot)] = dot;
  }
}

// The experts' backward on their side's rows: per chunk through down, SwiGLU and up; dy [R, C] -> dx [R, C]
// (overwritten), the local experts' gradients accumulated.
template <class Real>
void experts_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g,
                      const MoeActs<Real>& a, const Real* xin, const Real* dy, Real* dx, MoeScratch<Real>& s,
                      OpProfiler* prof, int module) {
  const std::int64_t c = d.c, f = d.f, rows = a.expert_rows();
  s.dact.assign(at(rows * f), Real(0)), s.dh.assign(at(rows * 2 * f), Real(0));
  std::fill(dx, dx + rows * c, Real(0));
  for (const ExpertChunk& k : a.chunks) {
    const std::int64_t r0 = k.r0, ne = k.rows, ex = k.expert;
    { ScopedOp op(prof, "moe_experts_down_bwd", module);
      cpu::matmul_backward_dx(s.dact.data() + r0 * f, dy + r0 * c, p.down_w + ex * c * f, ne, f, c);
      cpu::matmul_backward_dw(g.down_w + ex * c * f, static_cast<Real*>(nullptr), dy + r0 * c,
                              a.act.data() + r0 * f, ne, f, c); }
    { ScopedOp op(prof, "moe_swiglu_bwd", module);
      cpu::mlp_act_backward(FfnKind::swiglu, s.dh.data() + r0 * 2 * f, s.dact.data() + r0 * f,
                            a.h.data() + r0 * 2 * f, ne, f); }
    ScopedOp op(prof, "moe_experts_gate_up_bwd", module);
    cpu::matmul_backward_dx(dx + r0 * c, s.dh.data() + r0 * 2 * f, p.up_w + ex * 2 * f * c, ne, c, 2 * f);
    cpu::matmul_backward_dw(g.up_w + ex * 2 * f * c, static_cast<Real*>(nullptr), s.dh.data() + r0 * 2 * f,
                            xin + r0 * c, ne, c, 2 * f);
  }
}

// d probs [N, E] from d weight [N, k] (through the renormalisation w_s = p_s / Σ_t p_t when norm_topk) plus
// the load-balancing loss's aux_dprob [E]; then d logits = p ⊙ (dp − Σ_j p_j dp_j), the softmax's backward.
template <class Real>
void router_probs_backward(const MoeDims& d, const MoeActs<Real>& a, const std::vector<Real>& dweight,
                           const Real* aux_dprob, MoeScratch<Real>& s) {
  zero(s.dprobs);
  for (std::int64_t i = 0; i < d.n; ++i) {
    const Real* p = a.probs.data() + i * d.e;
    Real* dp = s.dprobs.data() + i * d.e;
    const std::int64_t k0 = i * d.k;
    Real sum = 0, wdw = 0;
    for (std::int64_t t = 0; t < d.k; ++t)
      sum += p[a.expert[at(k0 + t)]], wdw += a.weight[at(k0 + t)] * dweight[at(k0 + t)];
    for (std::int64_t t = 0; t < d.k; ++t)
      dp[a.expert[at(k0 + t)]] += d.norm_topk ? (dweight[at(k0 + t)] - wdw) / sum : dweight[at(k0 + t)];
    if (aux_dprob)
      for (std::int64_t ex = 0; ex < d.e; ++ex) dp[ex] += aux_dprob[ex];
    Real pdp = 0;
    for (std::int64_t ex = 0; ex < d.e; ++ex) pdp += p[ex] * dp[ex];
    for (std::int64_t ex = 0; ex < d.e; ++ex) s.dlogits[at(i * d.e + ex)] = p[ex] * (dp[ex] - pdp);
  }
}

}  // namespace

template <class Real>
void moe_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g, const Real* x,
                  const Real* dout, const MoeActs<Real>& a, const Real* aux_dprob, Real* dx, MoeScratch<Real>& s,
                  OpProfiler* prof, int module, ModelComm* comm) {
  std::vector<Real> dweight(at(d.rows()), Real(0));
  routed_output_grads(d, dout, a, dweight, s);
  if (d.ep > 1) {
    const std::int64_t rows = a.expert_rows();
    s.ex_dy.resize(at(rows * d.c)), s.ex_dx.resize(at(rows * d.c));
    moe_dispatch_grads(d, a, s.dy.data(), s.ex_dy.data(), comm);
    experts_backward(d, p, g, a, a.ex_x.data(), s.ex_dy.data(), s.ex_dx.data(), s, prof, module);
    moe_combine_grads(d, a, s.ex_dx.data(), s.dxr.data(), comm);
  } else {
    experts_backward(d, p, g, a, a.xr.data(), s.dy.data(), s.dxr.data(), s, prof, module);
  }
  for (std::int64_t r = 0; r < d.rows(); ++r)
    for (std::int64_t j = 0; j < d.c; ++j) dx[a.token_of[at(r)] * d.c + j] += s.dxr[at(r * d.c + j)];
  ScopedOp op(prof, "moe_router_bwd", module);
  router_probs_backward(d, a, dweight, aux_dprob, s);
  cpu::matmul_backward_dx(dx, s.dlogits.data(), p.router_w, d.n, d.c, d.e);
  cpu::matmul_backward_dw(g.router_w, static_cast<Real*>(nullptr), s.dlogits.data(), x, d.n, d.c, d.e);
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template struct MoeActs<Real>;                                                                                  \
  template struct MoeScratch<Real>;                                                                               \
  template void moe_forward<Real>(const MoeDims&, const MoeTensors<const Real*>&, const Real*, Real*,             \
                                  MoeActs<Real>&, OpProfiler*, int, ModelComm*);                                  \
  template void moe_backward<Real>(const MoeDims&, const MoeTensors<const Real*>&, const MoeTensors<Real*>&,      \
                                   const Real*, const Real*, const MoeActs<Real>&, const Real*, Real*,            \
                                   MoeScratch<Real>&, OpProfiler*, int, ModelComm*);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
