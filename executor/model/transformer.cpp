// executor/model/transformer.cpp — the host half of the CPU reference model: its buffers (L+1 residual
// streams plus per-block BlockActs, or one shared BlockActs for the blocks that recompute), the blocks'
// contexts (RoPE, tp and cp places, LoRA, fp8), the ends' batch and loss, what a split backward keeps,
// and the whole-model helpers. The modules run through the shared driver (model_driver.h) over
// model_policy.h: embedding, blocks, final norm, LM head + softmax cross-entropy (mean over B·T tokens).
#include "executor/model/transformer.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/model/model_policy.h"
#include "executor/model/moe_block_mlp.h"
#include "executor/model/qkv_groups.h"

namespace fsdpx {

template <class Real>
Transformer<Real>::Transformer(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, ModelOptions opts)
    : Base("Transformer", spec, batch, seq, std::move(opts)) {
  FSDP_CHECK(!opts_.lora || par_.tp == 1, "Transformer: LoRA runs without tensor parallelism");
  FSDP_CHECK(!opts_.fp8 || (par_.tp == 1 && !opts_.lora), "Transformer: fp8 runs with tp = 1 and without LoRA");
  FSDP_CHECK(!par_.any() || opts_.comm != nullptr, "Transformer: tensor or context parallelism needs a ModelComm");
  for (int r = 0; r < par_.cp && par_.cp > 1; ++r) {
    const std::vector<std::int64_t> p = context_positions(seq, par_.cp, r);
    cp_positions_.insert(cp_positions_.end(), p.begin(), p.end());
  }
  const std::int64_t shard_first = par_.sp() ? par_.tp_rank * dims_.n_local : 0;
  for (std::int64_t i = 0; i < dims_.n_local; ++i)
    shard_positions_.push_back(positions_[std::size_t((shard_first + i) % dims_.t)]);
  if (dims_.grouped_qkv()) group_columns_ = query_group_columns(spec, par_);
  if (spec.arch == Arch::llama)  // latent attention rotates its qk_rope_head_dim part only (mla_attention.h)
    rope_ = cpu::make_rope_table<Real>(positions_, spec.is_mla() ? spec.mla.qk_rope_head_dim : spec.head_dim,
                                       spec.rope_theta, spec.rope_scaling);
  const auto n = static_cast<std::size_t>(dims_.n), nl = static_cast<std::size_t>(dims_.n_local);
  const auto c = static_cast<std::size_t>(dims_.c);
  resid_.assign(static_cast<std::size_t>(spec.layers + 1), std::vector<Real>(nl * c));
  acts_.resize(static_cast<std::size_t>(spec.layers));
  bool any_recompute = false;
  for (std::int64_t i = 0; i < spec.layers; ++i) {
    if (drv_.recomputes(i)) any_recompute = true;
    else acts_[static_cast<std::size_t>(i)].allocate(dims_);
  }
  if (any_recompute) recompute_acts_.allocate(dims_), recompute_out_.assign(nl * c, 0);
  this->allocate_host_block_parts();
  scratch_.allocate(dims_, par_.tp);
  if (par_.sp()) emb_.assign(n * c, 0);
  lnf_.assign(n * c, 0), lnf_mean_.assign(dims_.layernorm ? nl : 0, 0), lnf_rstd_.assign(nl, 0);
  logits_.assign(n * static_cast<std::size_t>(this->v_local_), 0);
  if (par_.any()) ce_stats_.assign(n * 3 * static_cast<std::size_t>(par_.tp), 0);
  dres_.assign(nl * c, 0), dlnf_.assign(n * c, 0);
  if (par_.sp()) replicated_.allocate(this->layout());
}

template <class Real>
BlockContext<Real> Transformer<Real>::context(HostStream, int module) {
  BlockContext<Real> ctx{this->template context_base<LoraBlock<Real>>(module),
                         spec_.arch == Arch::llama ? &rope_ : nullptr, &group_columns_, &cp_positions_, nullptr};
  if (opts_.fp8 && module >= 1 && module <= spec_.layers) ctx.fp8 = &fp8_;  // the ends' GEMMs stay fp32
  return ctx;
}

// The ends' buffers and batch (ends_sequence.h); a split backward keeps the embedding's output gradient
// apart (allocated by its first input pass).
template <class Real>
typename CpuModelPolicy<Real>::Ends Transformer<Real>::ends(int m, GradPass pass) {
  if (m == ParamLayout::embedding_index() && pass == GradPass::input && embedding_dout_.empty())
    embedding_dout_.assign(dres_.size(), Real(0));
  typename CpuModelPolicy<Real>::Ends e = this->ends_buffers();
  e.batch = CpuEndsBatch<Real>{tokens_.data(), targets_.data(), shard_positions_.data(), &moe_aux_, &loss_};
  return e;
}

// The rank's context-parallel part of each sequence (positions_).
template <class Real>
void Transformer<Real>::set_batch(const std::int32_t* tokens, const std::int32_t* targets) {
  tokens_ = this->rank_tokens(tokens), targets_ = this->rank_tokens(targets);
  this->start_batch();
}

// Where a block's backward reads its activations: its own, or a recomputing block's shared ones
// (recomputed there), which a split backward copies for the weight pass (keep_recomputed).
template <class Real>
BlockActs<Real>& Transformer<Real>::backward_acts(std::int64_t block, GradPass pass) {
  const auto i = std::size_t(block);
  return !drv_.recomputes(block) ? acts_[i] : pass == GradPass::weight ? kept_acts_[i] : recompute_acts_;
}

// What the weight pass of a recomputing block reads of its re-materialised activations.
template <class Real>
void Transformer<Real>::keep_recomputed(std::int64_t block) {
  BlockActs<Real>& k = kept_acts_[std::size_t(block)];
  const BlockActs<Real>& r = recompute_acts_;
  k.ln1 = r.ln1, k.ln1_mean = r.ln1_mean, k.ln1_rstd = r.ln1_rstd, k.atty = r.atty, k.x_mid = r.x_mid;
  k.ln2 = r.ln2, k.ln2_mean = r.ln2_mean, k.ln2_rstd = r.ln2_rstd, k.fc_act = r.fc_act;
}

// A split backward's per-block keeps, allocated by the block's first input pass.
template <class Real>
BlockWeightInputs<Real>* Transformer<Real>::weight_inputs(std::int64_t block, GradPass pass) {
  const auto i = std::size_t(block);
  if (pass == GradPass::all) return nullptr;
  if (kept_.size() <= i) kept_.resize(i + 1), kept_acts_.resize(i + 1);
  if (pass == GradPass::input && kept_[i].d_out.empty()) kept_[i].allocate(dims_);
  return &kept_[i];
}

// The token ids and targets (int32 each), counted with the embedding.
template <class Real>
std::int64_t Transformer<Real>::own_saved_bytes(int m) const {
  if (m != ParamLayout::embedding_index()) return 0;
  return std::int64_t((tokens_.size() + targets_.size()) * sizeof(std::int32_t));
}

template <class Real>
void Transformer<Real>::set_input(int m, const Real* x) {
  std::copy(x, x + this->boundary_elems(), this->input_buffer(m));
}

template <class Real>
void Transformer<Real>::set_output_grad(int m, const Real* dout) {
  std::copy(dout, dout + this->boundary_elems(), this->output_grad_buffer(m));
}

template <class Real>
std::vector<const Real*> Transformer<Real>::module_ptrs(const Real* flat) const {
  std::vector<const Real*> out;
  for (const ModuleLayout& m : this->layout().modules) out.push_back(flat + m.offset);
  return out;
}

template <class Real>
std::vector<Real*> Transformer<Real>::module_ptrs(Real* flat) const {
  std::vector<Real*> out;
  for (const ModuleLayout& m : this->layout().modules) out.push_back(flat + m.offset);
  return out;
}

template <class Real>
Real Transformer<Real>::forward(const Real* params, const std::int32_t* tokens, const std::int32_t* targets) {
  set_batch(tokens, targets);
  const std::vector<const Real*> p = module_ptrs(params);
  for (int m = 0; m < this->layout().num_modules(); ++m) this->forward_module(m, p);
  return loss_;
}

template <class Real>
void Transformer<Real>::backward(const Real* params, Real* grads, Real dloss) {
  this->begin_backward(dloss);
  const std::vector<const Real*> p = module_ptrs(params);
  const std::vector<Real*> g = module_ptrs(grads);
  for (int m = this->layout().num_modules() - 1; m >= 0; --m) this->backward_module(m, p, g);
}

template class ModelDriver<Transformer<float>, CpuModelPolicy<float>>;
template class ModelDriver<Transformer<double>, CpuModelPolicy<double>>;
template class Transformer<float>;
template class Transformer<double>;

}  // namespace fsdpx
