// executor/model/moe_mlp.cpp — the MoE MLP as CPU kernels timed under the simulator's MoE kernel names
// (cost_models/expert_compute.cpp): moe_router, moe_topk, moe_permute, moe_experts_gate_up, moe_swiglu,
// moe_experts_down, moe_shared_gate_up, moe_shared_down. Each expert's routed rows form one GEMM (the
// grouped GEMM, one group at a time); the outputs are summed per token in expert order, as
// MixtralSparseMoeBlock's index_add_ loop over experts.
// Under ep > 1 the experts' GEMMs run on the rows the ep group dispatched (moe_exchange.h), one chunk per
// (source rank, local expert).
#include "executor/model/moe_mlp.h"

#include <algorithm>
#include <cmath>
#include <functional>

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

// Router scores in place: softmax over the experts (Mixtral) or each logit's sigmoid (DeepSeek-V3).
template <class Real>
void score_rows(const MoeDims& d, Real* p) {
  if (!d.sigmoid()) return softmax_rows(p, d.n, d.e);
  for (std::int64_t i = 0; i < d.n * d.e; ++i) p[i] = Real(1) / (Real(1) + std::exp(-p[i]));
}

// What one token's selection ranks (get_topk_indices): the scores themselves under softmax; under
// sigmoid scores + bias, set to 0 outside the topk_groups groups whose two best biased scores sum highest.
template <class Real>
void choice_scores(const MoeDims& d, const Real* p, const Real* bias, std::vector<Real>& choice) {
  for (std::int64_t j = 0; j < d.e; ++j) choice[at(j)] = p[j] + (d.score_bias && bias ? bias[j] : Real(0));
  if (!d.sigmoid() || d.groups == 1) return;
  const std::int64_t per = d.e / d.groups;
  std::vector<Real> group_score(at(d.groups));
  std::vector<std::int64_t> groups(at(d.groups));
  for (std::int64_t g = 0; g < d.groups; ++g) {
    std::vector<Real> in(choice.begin() + g * per, choice.begin() + (g + 1) * per);
    std::sort(in.begin(), in.end(), std::greater<Real>());
    group_score[at(g)] = in[0] + (per > 1 ? in[1] : Real(0));
    groups[at(g)] = g;
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [&](std::int64_t x, std::int64_t y) { return group_score[at(x)] > group_score[at(y)]; });
  for (std::int64_t r = d.topk_groups; r < d.groups; ++r)
    std::fill_n(choice.begin() + groups[at(r)] * per, per, Real(0));
}

// The top k experts of each token by choice score (ties: the lower index), their combine weights (the
// unbiased scores, renormalised when norm_topk, times routed_scaling), and the expert-major row order of
// the (token, slot) pairs.
template <class Real>
void route(const MoeDims& d, const Real* bias, MoeActs<Real>& a) {
  std::vector<std::int32_t> order(at(d.e));
  std::vector<Real> choice(at(d.e));
  std::fill(a.first_row.begin(), a.first_row.end(), 0);
  const Real scale = Real(d.routed_scaling);
  for (std::int64_t i = 0; i < d.n; ++i) {
    const Real* p = a.probs.data() + i * d.e;
    choice_scores(d, p, bias, choice);
    for (std::int64_t j = 0; j < d.e; ++j) order[at(j)] = static_cast<std::int32_t>(j);
    std::stable_sort(order.begin(), order.end(),
                     [&choice](std::int32_t x, std::int32_t y) { return choice[at(x)] > choice[at(y)]; });
    Real sum = 0;
    for (std::int64_t s = 0; s < d.k; ++s) sum += p[order[at(s)]];
    if (d.sigmoid()) sum += Real(1e-20);  // DeepseekV3TopkRouter's denominator
    for (std::int64_t s = 0; s < d.k; ++s) {
      const std::int32_t ex = order[at(s)];
      a.expert[at(i * d.k + s)] = ex;
      a.weight[at(i * d.k + s)] = (d.norm_topk ? p[ex] / sum : p[ex]) * scale;
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
  if (!d.sigmoid()) return;
  // DeepSeek-V3's sequence-wise balance (§2.1.2, eq. 17-20): per sequence of T tokens,
  // f_e = E / (k T) · picks of e, P_e = (1/T) Σ_t s_e,t / Σ_j s_j,t; the mean over sequences of Σ_e f_e P_e.
  const std::int64_t t = d.seq_len(), b = d.sequences();
  zero(a.seq_count);
  for (std::int64_t i = 0; i < d.n; ++i)
    for (std::int64_t s = 0; s < d.k; ++s) a.seq_count[at((i / t) * d.e + a.expert[at(i * d.k + s)])] += 1;
  Real total = 0;
  const Real f_unit = Real(d.e) / Real(d.k * t);
  for (std::int64_t q = 0; q < b; ++q) {
    std::vector<Real> p_mean(at(d.e), Real(0));
    for (std::int64_t i = q * t; i < (q + 1) * t; ++i) {
      const Real* p = a.probs.data() + i * d.e;
      Real sum = 0;
      for (std::int64_t ex = 0; ex < d.e; ++ex) sum += p[ex];
      for (std::int64_t ex = 0; ex < d.e; ++ex) p_mean[at(ex)] += p[ex] / sum / Real(t);
    }
    for (std::int64_t ex = 0; ex < d.e; ++ex) total += f_unit * a.seq_count[at(q * d.e + ex)] * p_mean[at(ex)];
  }
  a.seq_balance = total / Real(b);
}

}  // namespace

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

// DeepseekV3MoE's shared experts, one SwiGLU SF wide on every token: out [N, C] += down(silu(gate x) · up x).
template <class Real>
void shared_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* x, Real* out, MoeActs<Real>& a,
                    OpProfiler* prof, int module) {
  FSDP_CHECK(p.shared_up_w && p.shared_down_w, "moe_forward: shared experts without their tensors");
  std::vector<Real> y(at(d.n * d.c));
  { ScopedOp op(prof, "moe_shared_gate_up", module);
    cpu::matmul_forward(a.sh_h.data(), x, p.shared_up_w, static_cast<const Real*>(nullptr), d.n, d.c, 2 * d.sf);
    cpu::mlp_act_forward(FfnKind::swiglu, a.sh_act.data(), a.sh_h.data(), d.n, d.sf); }
  ScopedOp op(prof, "moe_shared_down", module);
  cpu::matmul_forward(y.data(), a.sh_act.data(), p.shared_down_w, static_cast<const Real*>(nullptr), d.n, d.sf, d.c);
  for (std::int64_t i = 0; i < d.n * d.c; ++i) out[i] += y[at(i)];
}

}  // namespace

template <class Real>
void moe_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* x, Real* out, MoeActs<Real>& a,
                 OpProfiler* prof, int module, ExpertExchange* comm) {
  const std::int64_t c = d.c;
  { ScopedOp op(prof, "moe_router", module);
    cpu::matmul_forward(a.probs.data(), x, p.router_w, static_cast<const Real*>(nullptr), d.n, c, d.e); }
  { ScopedOp op(prof, "moe_topk", module);
    score_rows(d, a.probs.data());
    route(d, p.score_bias, a);
    record_balance(d, a); }
  { ScopedOp op(prof, "moe_permute", module);
    for (std::int64_t r = 0; r < d.rows(); ++r)
      std::copy_n(x + a.token_of[at(r)] * c, c, a.xr.begin() + r * c); }
  moe_dispatch(d, a, comm);
  const bool ep = d.ep > 1;
  if (ep) a.ex_y.resize(at(a.expert_rows() * c));
  experts_forward(d, p, ep ? a.ex_x.data() : a.xr.data(), ep ? a.ex_y.data() : a.y.data(), a, prof, module);
  if (ep) moe_combine(d, a, comm);
  { ScopedOp op(prof, "moe_permute", module);
    std::fill(out, out + d.n * c, Real(0));
    for (std::int64_t r = 0; r < d.rows(); ++r) {  // expert-major: each token's sum in expert order
      const std::int64_t i = a.token_of[at(r)];
      const Real w = a.weight[at(i * d.k + a.slot_of[at(r)])];
      for (std::int64_t j = 0; j < c; ++j) out[i * c + j] += w * a.y[at(r * c + j)];
    } }
  if (d.sf > 0) shared_forward(d, p, x, out, a, prof, module);
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

// The sequence-wise balance loss's gradient (record_balance) w.r.t. token i's scores, added to dp [E]:
// d/d s_j = scale / (B T S) · (f_j − Σ_e f_e s_e / S), S = Σ_e s_e, scale = dloss · alpha.
template <class Real>
void seq_balance_backward(const MoeDims& d, const MoeActs<Real>& a, std::int64_t i, Real scale, Real* dp) {
  const std::int64_t t = d.seq_len();
  const Real* p = a.probs.data() + i * d.e;
  const Real* count = a.seq_count.data() + (i / t) * d.e;
  const Real f_unit = Real(d.e) / Real(d.k * t);
  Real sum = 0, fs = 0;
  for (std::int64_t ex = 0; ex < d.e; ++ex) sum += p[ex], fs += f_unit * count[ex] * p[ex];
  const Real c = scale / (Real(d.sequences()) * Real(t) * sum);
  for (std::int64_t ex = 0; ex < d.e; ++ex) dp[ex] += c * (f_unit * count[ex] - fs / sum);
}

// d probs [N, E] from d weight [N, k] (w_s = rs · p_s / D, D = Σ_t p_t (+1e-20 under sigmoid), when
// norm_topk; rs · p_s otherwise) plus the load-balancing loss's; then d logits through the scoring:
// p ⊙ (dp − Σ_j p_j dp_j) for the softmax, dp ⊙ p (1 − p) for the sigmoid. The correction bias only
// selects, so it gets no gradient (get_topk_indices runs under no_grad).
template <class Real>
void router_probs_backward(const MoeDims& d, const MoeActs<Real>& a, const std::vector<Real>& dweight,
                           const MoeAuxGrad<Real>& aux, MoeScratch<Real>& s) {
  zero(s.dprobs);
  const Real scale = Real(d.routed_scaling);
  for (std::int64_t i = 0; i < d.n; ++i) {
    const Real* p = a.probs.data() + i * d.e;
    Real* dp = s.dprobs.data() + i * d.e;
    const std::int64_t k0 = i * d.k;
    Real sum = d.sigmoid() ? Real(1e-20) : Real(0), wdw = 0;
    for (std::int64_t t = 0; t < d.k; ++t)
      sum += p[a.expert[at(k0 + t)]], wdw += a.weight[at(k0 + t)] * dweight[at(k0 + t)];
    for (std::int64_t t = 0; t < d.k; ++t)
      dp[a.expert[at(k0 + t)]] += d.norm_topk ? (scale * dweight[at(k0 + t)] - wdw) / sum : scale * dweight[at(k0 + t)];
    if (aux.dprob)
      for (std::int64_t ex = 0; ex < d.e; ++ex) dp[ex] += aux.dprob[ex];
    if (d.sigmoid() && aux.seq_scale != Real(0)) seq_balance_backward(d, a, i, aux.seq_scale, dp);
    Real* dl = s.dlogits.data() + i * d.e;
    if (d.sigmoid()) {
      for (std::int64_t ex = 0; ex < d.e; ++ex) dl[ex] = dp[ex] * p[ex] * (Real(1) - p[ex]);
      continue;
    }
    Real pdp = 0;
    for (std::int64_t ex = 0; ex < d.e; ++ex) pdp += p[ex] * dp[ex];
    for (std::int64_t ex = 0; ex < d.e; ++ex) dl[ex] = p[ex] * (dp[ex] - pdp);
  }
}

// The shared experts' backward: dx [N, C] += their input gradient from dout [N, C]; their gradients +=.
template <class Real>
void shared_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g, const Real* x,
                     const Real* dout, const MoeActs<Real>& a, Real* dx, MoeScratch<Real>& s, OpProfiler* prof,
                     int module) {
  std::fill(s.sh_dact.begin(), s.sh_dact.end(), Real(0)), std::fill(s.sh_dh.begin(), s.sh_dh.end(), Real(0));
  { ScopedOp op(prof, "moe_shared_down_bwd", module);
    cpu::matmul_backward_dx(s.sh_dact.data(), dout, p.shared_down_w, d.n, d.sf, d.c);
    cpu::matmul_backward_dw(g.shared_down_w, static_cast<Real*>(nullptr), dout, a.sh_act.data(), d.n, d.sf, d.c); }
  ScopedOp op(prof, "moe_shared_gate_up_bwd", module);
  cpu::mlp_act_backward(FfnKind::swiglu, s.sh_dh.data(), s.sh_dact.data(), a.sh_h.data(), d.n, d.sf);
  cpu::matmul_backward_dx(dx, s.sh_dh.data(), p.shared_up_w, d.n, d.c, 2 * d.sf);
  cpu::matmul_backward_dw(g.shared_up_w, static_cast<Real*>(nullptr), s.sh_dh.data(), x, d.n, d.c, 2 * d.sf);
}

}  // namespace

template <class Real>
void moe_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g, const Real* x,
                  const Real* dout, const MoeActs<Real>& a, const MoeAuxGrad<Real>& aux, Real* dx, MoeScratch<Real>& s,
                  OpProfiler* prof, int module, ExpertExchange* comm) {
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
  if (d.sf > 0) shared_backward(d, p, g, x, dout, a, dx, s, prof, module);
  ScopedOp op(prof, "moe_router_bwd", module);
  router_probs_backward(d, a, dweight, aux, s);
  cpu::matmul_backward_dx(dx, s.dlogits.data(), p.router_w, d.n, d.c, d.e);
  cpu::matmul_backward_dw(g.router_w, static_cast<Real*>(nullptr), s.dlogits.data(), x, d.n, d.c, d.e);
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template void moe_forward<Real>(const MoeDims&, const MoeTensors<const Real*>&, const Real*, Real*,             \
                                  MoeActs<Real>&, OpProfiler*, int, ExpertExchange*);                                  \
  template void moe_backward<Real>(const MoeDims&, const MoeTensors<const Real*>&, const MoeTensors<Real*>&,      \
                                   const Real*, const Real*, const MoeActs<Real>&, const MoeAuxGrad<Real>&, Real*, \
                                   MoeScratch<Real>&, OpProfiler*, int, ExpertExchange*);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
