// executor/model/mla_dims.cpp — latent attention's sizes from the model spec and its buffers' allocation
// (see mla_dims.h).
#include "executor/model/mla_dims.h"

#include "core/errors.h"
#include "executor/model/rope_table.h"
#include "executor/model/vector_index.h"

namespace fsdpx {
MlaDims make_mla_dims(const ModelSpec& m, std::int64_t batch, std::int64_t seq) {
  FSDP_CHECK(m.is_mla() && m.mla.qk_rope_head_dim % 2 == 0, "make_mla_dims: a latent-attention model");
  MlaDims d;
  d.b = batch, d.t = seq, d.n = batch * seq, d.c = m.hidden, d.heads = m.heads;
  d.q_rank = m.mla.q_lora_rank, d.kv_rank = m.mla.kv_lora_rank;
  d.nope = m.mla.qk_nope_head_dim, d.rope = m.mla.qk_rope_head_dim, d.v = m.mla.v_head_dim;
  d.eps = m.norm_eps;
  d.softmax_scale_factor = yarn_softmax_scale_factor(m.rope_scaling);
  FSDP_CHECK(d.v <= d.qk(), "make_mla_dims: v_head_dim above the query/key head dim");
  return d;
}

template <class Real>
void MlaActs<Real>::allocate(const MlaDims& d) {
  qa.assign(at(d.n * d.q_rank), 0), qa_rstd.assign(at(d.q_rank > 0 ? d.n : 0), 0), qa_n.assign(qa.size(), 0);
  c_kv.assign(at(d.n * d.kv_rank), 0), kv_rstd.assign(at(d.n), 0), kv_n.assign(c_kv.size(), 0);
  out_pad.assign(at(d.n * d.q_width()), 0);
  q.assign(at(d.n * d.q_width()), 0), kva.assign(at(d.n * d.kv_a_width()), 0), kvb.assign(at(d.n * d.kv_b_width()), 0);
}

template <class Real>
void MlaScratch<Real>::allocate(const MlaDims& d) {
  dout_pad.assign(at(d.n * d.q_width()), 0), dq.assign(at(d.n * d.q_width()), 0);
  dqa_n.assign(at(d.n * d.q_rank), 0), dqa.assign(dqa_n.size(), 0);
  dkva.assign(at(d.n * d.kv_a_width()), 0), dkv_n.assign(at(d.n * d.kv_rank), 0), dc_kv.assign(dkv_n.size(), 0);
  dkvb.assign(at(d.n * d.kv_b_width()), 0);
}

template struct MlaActs<float>;
template struct MlaActs<double>;
template struct MlaScratch<float>;
template struct MlaScratch<double>;

}  // namespace fsdpx
