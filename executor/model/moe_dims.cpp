// executor/model/moe_dims.cpp — a MoE MLP's sizes from the model spec and its buffers' allocation (see
// moe_dims.h).
#include "executor/model/moe_dims.h"

#include "core/errors.h"
#include "executor/model/vector_index.h"

namespace fsdpx {
MoeDims make_moe_dims(const ModelSpec& m, std::int64_t tokens, int ep, int ep_rank, std::int64_t seq) {
  const MoeSpec& e = m.moe;
  FSDP_CHECK(m.is_moe() && e.top_k >= 1 && e.top_k <= e.experts, "make_moe_dims: an MoE model");
  FSDP_CHECK(ep >= 1 && e.experts % ep == 0 && ep_rank >= 0 && ep_rank < ep, "make_moe_dims: ep divides experts");
  FSDP_CHECK(e.groups >= 1 && e.experts % e.groups == 0 && e.topk_groups >= 1 && e.topk_groups <= e.groups,
             "make_moe_dims: groups divide the experts");
  FSDP_CHECK(seq >= 0 && (seq == 0 || tokens % seq == 0), "make_moe_dims: whole sequences");
  MoeDims d{tokens, m.hidden, e.experts, e.top_k, e.expert_ffn_hidden, e.norm_topk_prob, ep, ep_rank};
  d.scoring = e.scoring, d.score_bias = e.score_correction_bias;
  d.groups = e.groups, d.topk_groups = e.topk_groups, d.routed_scaling = e.routed_scaling;
  d.sf = e.shared_experts * e.shared_ffn_hidden, d.t = seq;
  return d;
}

template <class Real>
void MoeRoutes<Real>::allocate(const MoeDims& d) {
  probs.assign(at(d.n * d.e), 0);
  expert.assign(at(d.rows()), 0), weight.assign(at(d.rows()), 0), row_of.assign(at(d.rows()), 0);
  first_row.assign(at(d.e + 1), 0);
  token_of.assign(at(d.rows()), 0), slot_of.assign(at(d.rows()), 0);
  count.assign(at(d.e), 0), prob_sum.assign(at(d.e), 0);
  seq_count.assign(d.sigmoid() ? at(d.sequences() * d.e) : 0, 0);
}

template <class Real>
void MoeActs<Real>::allocate(const MoeDims& d) {
  MoeRoutes<Real>::allocate(d);
  xr.assign(at(d.rows() * d.c), 0), y.assign(at(d.rows() * d.c), 0);
  h.assign(at(d.rows() * 2 * d.f), 0), act.assign(at(d.rows() * d.f), 0);  // resized per dispatch at ep > 1
  sh_h.assign(at(d.n * 2 * d.sf), 0), sh_act.assign(at(d.n * d.sf), 0);
}

template <class Real>
void MoeScratch<Real>::allocate(const MoeDims& d) {
  dy.assign(at(d.rows() * d.c), 0), dact.assign(at(d.rows() * d.f), 0), dh.assign(at(d.rows() * 2 * d.f), 0);
  dxr.assign(at(d.rows() * d.c), 0), dprobs.assign(at(d.n * d.e), 0), dlogits.assign(at(d.n * d.e), 0);
  dweight.assign(at(d.rows()), 0);
  ex_dy.clear(), ex_dx.clear();  // ep > 1: sized per backward
  sh_dact.assign(at(d.n * d.sf), 0), sh_dh.assign(at(d.n * 2 * d.sf), 0);
}

template struct MoeRoutes<float>;
template struct MoeRoutes<double>;
template struct MoeActs<float>;
template struct MoeActs<double>;
template struct MoeScratch<float>;
template struct MoeScratch<double>;

}  // namespace fsdpx
