// executor/model/moe_routing.cpp — the host routing of an MoE MLP (see moe_routing.h): scoring, top-k
// selection with DeepSeek-V3's group masking, combine weights, expert-major rows, balance statistics and
// the router's backward.
#include "executor/model/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "executor/model/vector_index.h"

namespace fsdpx {
namespace {

template <class Real>
void zero(std::vector<Real>& v) {
  std::fill(v.begin(), v.end(), Real(0));
}

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
void route(const MoeDims& d, const Real* bias, MoeRoutes<Real>& a) {
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
void record_balance(const MoeDims& d, MoeRoutes<Real>& a) {
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

// The sequence-wise balance loss's gradient (record_balance) w.r.t. token i's scores, added to dp [E]:
// d/d s_j = scale / (B T S) · (f_j − Σ_e f_e s_e / S), S = Σ_e s_e, scale = dloss · alpha.
template <class Real>
void seq_balance_backward(const MoeDims& d, const MoeRoutes<Real>& a, std::int64_t i, Real scale, Real* dp) {
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
void router_probs_backward(const MoeDims& d, const MoeRoutes<Real>& a, const Real* dweight,
                           const MoeAuxGrad<Real>& aux, Real* dprobs, Real* dlogits) {
  std::fill_n(dprobs, d.n * d.e, Real(0));
  const Real scale = Real(d.routed_scaling);
  for (std::int64_t i = 0; i < d.n; ++i) {
    const Real* p = a.probs.data() + i * d.e;
    Real* dp = dprobs + i * d.e;
    const std::int64_t k0 = i * d.k;
    Real sum = d.sigmoid() ? Real(1e-20) : Real(0), wdw = 0;
    for (std::int64_t t = 0; t < d.k; ++t)
      sum += p[a.expert[at(k0 + t)]], wdw += a.weight[at(k0 + t)] * dweight[k0 + t];
    for (std::int64_t t = 0; t < d.k; ++t)
      dp[a.expert[at(k0 + t)]] += d.norm_topk ? (scale * dweight[k0 + t] - wdw) / sum : scale * dweight[k0 + t];
    if (aux.dprob)
      for (std::int64_t ex = 0; ex < d.e; ++ex) dp[ex] += aux.dprob[ex];
    if (d.sigmoid() && aux.seq_scale != Real(0)) seq_balance_backward(d, a, i, aux.seq_scale, dp);
    Real* dl = dlogits + i * d.e;
    if (d.sigmoid()) {
      for (std::int64_t ex = 0; ex < d.e; ++ex) dl[ex] = dp[ex] * p[ex] * (Real(1) - p[ex]);
      continue;
    }
    Real pdp = 0;
    for (std::int64_t ex = 0; ex < d.e; ++ex) pdp += p[ex] * dp[ex];
    for (std::int64_t ex = 0; ex < d.e; ++ex) dl[ex] = p[ex] * (dp[ex] - pdp);
  }
}

}  // namespace

template <class Real>
void moe_route(const MoeDims& d, const Real* score_bias, MoeRoutes<Real>& r) {
  score_rows(d, r.probs.data());
  route(d, score_bias, r);
  record_balance(d, r);
}

template <class Real>
void moe_router_backward(const MoeDims& d, const MoeRoutes<Real>& r, const Real* dweight, const MoeAuxGrad<Real>& aux,
                         Real* dprobs, Real* dlogits) {
  router_probs_backward(d, r, dweight, aux, dprobs, dlogits);
}

#define FSDPX_INSTANTIATE(Real)                                                                             \
  template void moe_route<Real>(const MoeDims&, const Real*, MoeRoutes<Real>&);                            \
  template void moe_router_backward<Real>(const MoeDims&, const MoeRoutes<Real>&, const Real*,             \
                                          const MoeAuxGrad<Real>&, Real*, Real*);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
