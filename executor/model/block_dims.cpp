// executor/model/block_dims.cpp — a block's sizes on one rank and its tensors' places in its module
// buffer (see block_dims.h).
#include "executor/model/block_dims.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/model/block_tensor_names.h"

namespace fsdpx {
BlockDims make_block_dims(const ModelSpec& m, std::int64_t batch, std::int64_t seq, const ModelParallel& par) {
  FSDP_CHECK(seq % par.cp == 0, "make_block_dims: cp must divide seq");
  BlockDims d;
  d.b = batch;
  d.t = seq / par.cp;
  d.t_kv = seq;
  d.n = batch * d.t;
  FSDP_CHECK(!par.sp() || d.n % par.tp == 0, "make_block_dims: sequence parallelism needs tp | tokens");
  d.n_local = par.sp() ? d.n / par.tp : d.n;
  d.c = m.hidden;
  const std::int64_t heads = m.heads / par.tp, kv_heads = std::max<std::int64_t>(1, m.kv_heads / par.tp);
  d.q = heads * m.head_dim;
  d.qkv = (heads + 2 * kv_heads) * m.head_dim;
  d.qkv_rows = (m.q_dim() + 2 * m.kv_dim()) / par.tp;
  d.f = m.ffn_hidden / par.tp;
  d.fu = mlp_up_width(m.ffn_kind, d.f);
  d.layernorm = m.arch == Arch::gpt;
  d.attn = AttnShape{batch, d.t, heads, kv_heads, m.head_dim};
  if (m.is_mla()) {
    FSDP_CHECK(par.tp == 1 && par.cp == 1, "make_block_dims: latent attention runs without tp or cp");
    const std::int64_t qk = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    d.q = m.heads * m.mla.v_head_dim;
    d.qkv = d.qkv_rows = 3 * m.heads * qk;
    d.attn = AttnShape{batch, d.t, m.heads, m.heads, qk};
  }
  return d;
}

template <class P>
BlockTensors<P> block_tensors(const ModuleLayout& m, P base) {
  return block_tensors_at(m, base);
}

template BlockTensors<const float*> block_tensors<const float*>(const ModuleLayout&, const float*);
template BlockTensors<float*> block_tensors<float*>(const ModuleLayout&, float*);
template BlockTensors<const double*> block_tensors<const double*>(const ModuleLayout&, const double*);
template BlockTensors<double*> block_tensors<double*>(const ModuleLayout&, double*);

}  // namespace fsdpx
