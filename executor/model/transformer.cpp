// executor/model/transformer.cpp — module-by-module forward and backward of the CPU reference model:
// embedding (token + learned positions for gpt), blocks (with optional full recompute), final norm,
// LM head + softmax cross-entropy (mean over B·T tokens). Activation memory: L+1 residual streams plus
// per-block BlockActs, or one shared BlockActs for the blocks that recompute. Under tensor or context
// parallelism the embedding and the loss take the vocabulary-parallel path (vocab_parallel.h) and the
// gradients of tensors every tp rank holds whole are summed over tp after each module's backward.
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
    : spec_(spec), opts_(std::move(opts)), par_(opts_.parallel),
      drv_("Transformer", make_param_layout(spec, TpSlice{par_.tp, par_.tp_rank}, EpSlice{par_.ep, par_.ep_rank}),
           opts_.recompute),
      dims_(make_block_dims(spec, batch, seq, par_)), seq_(seq) {
  FSDP_CHECK(batch > 0 && seq > 0, "Transformer: batch and seq must be positive");
  FSDP_CHECK(!opts_.lora || par_.tp == 1, "Transformer: LoRA runs without tensor parallelism");
  FSDP_CHECK(!opts_.fp8 || (par_.tp == 1 && !opts_.lora), "Transformer: fp8 runs with tp = 1 and without LoRA");
  FSDP_CHECK(spec.arch != Arch::gpt || seq <= spec.max_seq, "Transformer: seq exceeds max_seq (position table)");
  FSDP_CHECK(!par_.any() || opts_.comm != nullptr, "Transformer: tensor or context parallelism needs a ModelComm");
  v_local_ = spec.vocab / par_.tp;
  v_first_ = par_.tp_rank * v_local_;
  positions_ = context_positions(seq, par_.cp, par_.cp_rank);
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
  if (spec.is_moe()) {  // the MoE blocks' routed rows (moe_mlp.h)
    const MoeDims md = make_moe_dims(spec, dims_.n, 1, 0, dims_.t);
    for (BlockActs<Real>& a : acts_) a.moe.allocate(md);
    recompute_acts_.moe.allocate(md), scratch_.moe.allocate(md);
  }
  if (spec.is_mla()) {  // the latent chains (mla_attention.h)
    const MlaDims ld = make_mla_dims(spec, dims_.b, dims_.t);
    for (BlockActs<Real>& a : acts_) a.mla.allocate(ld);
    recompute_acts_.mla.allocate(ld), scratch_.mla.allocate(ld);
  }
  scratch_.allocate(dims_, par_);
  if (par_.sp()) emb_.assign(n * c, 0);
  lnf_.assign(n * c, 0), lnf_mean_.assign(dims_.layernorm ? nl : 0, 0), lnf_rstd_.assign(nl, 0);
  probs_.assign(n * static_cast<std::size_t>(v_local_), 0);
  if (par_.any()) ce_stats_.assign(n * 3 * static_cast<std::size_t>(par_.tp), 0);
  dres_.assign(nl * c, 0), dlnf_.assign(n * c, 0);
  if (par_.sp()) replicated_.allocate(layout());
}

template <class Real>
BlockContext<Real> Transformer<Real>::block_context(int module) {
  BlockContext<Real> ctx{&spec_,    dims_,      spec_.arch == Arch::llama ? &rope_ : nullptr,
                         opts_.profiler, module, par_,
                         opts_.comm, &scratch_, &group_columns_, &cp_positions_, LoraBlock<Real>{}, nullptr};
  if (module < 1 || module > spec_.layers) return ctx;  // the ends: no adapters, fp32 GEMMs
  if (opts_.lora) {
    FSDP_CHECK(lora_params_ != nullptr, "Transformer: LoRA without adapter buffers (set_lora_buffers)");
    const std::int64_t at = opts_.lora->block_offset(module - 1);
    ctx.lora = LoraBlock<Real>{opts_.lora, lora_params_ + at, lora_grads_ ? lora_grads_ + at : nullptr};
  }
  if (opts_.fp8) ctx.fp8 = &fp8_;
  ctx.moe_aux = moe_aux_.grad();
  return ctx;
}

// The ends' buffers and batch (ends_sequence.h); a split backward keeps the embedding's output gradient
// apart (allocated by its first input pass).
template <class Real>
auto Transformer<Real>::ends(int m, GradPass pass) {
  if (m == ParamLayout::embedding_index() && pass == GradPass::input && embedding_dout_.empty())
    embedding_dout_.assign(dres_.size(), Real(0));
  typename CpuModelPolicy<Real>::Ends e;
  e.x0 = resid_[0].data(), e.emb = emb_.data(), e.x_last = resid_.back().data();
  e.lnf = lnf_.data(), e.lnf_mean = lnf_mean_.data(), e.lnf_rstd = lnf_rstd_.data();
  e.logits = probs_.data(), e.ce_stats = ce_stats_.data(), e.dres = dres_.data(), e.dlnf = dlnf_.data();
  e.embedding_dout = embedding_dout_.empty() ? nullptr : embedding_dout_.data();
  e.scratch = &scratch_;
  e.v_local = v_local_, e.v_first = v_first_, e.batch_tokens = dims_.b * seq_, e.dloss = dloss_;
  e.batch = CpuEndsBatch<Real>{tokens_.data(), targets_.data(), shard_positions_.data(), &moe_aux_, &loss_};
  return e;
}

// The rank's context-parallel part of each sequence (positions_).
template <class Real>
void Transformer<Real>::set_batch(const std::int32_t* tokens, const std::int32_t* targets) {
  tokens_.resize(static_cast<std::size_t>(dims_.n));
  targets_.resize(tokens_.size());
  for (std::int64_t b = 0; b < dims_.b; ++b)
    for (std::int64_t i = 0; i < dims_.t; ++i) {
      const std::int64_t from = b * seq_ + positions_[static_cast<std::size_t>(i)];
      tokens_[static_cast<std::size_t>(b * dims_.t + i)] = tokens[from];
      targets_[static_cast<std::size_t>(b * dims_.t + i)] = targets[from];
    }
  moe_aux_.reset(spec_);
  drv_.start_batch();
}

template <class Real>
void Transformer<Real>::forward_module(int m, std::span<const Real* const> params) {
  drv_.enter_forward(m);
  if (drv_.part(m) != ModulePart::block) {
    auto e = ends(m, GradPass::all);
    return ends_sequence::forward<CpuModelPolicy<Real>>(block_context(m), e, drv_, m, params);
  }
  const auto i = static_cast<std::size_t>(m - 1);
  BlockActs<Real>& a = drv_.recomputes(std::int64_t(i)) ? recompute_acts_ : acts_[i];
  const auto p = block_tensors(layout().modules[static_cast<std::size_t>(m)], drv_.module_base(params, m));
  const BlockContext<Real> ctx = block_context(m);
  block_forward(ctx, p, resid_[i].data(), resid_[i + 1].data(), a);
  if (is_moe_mlp(ctx)) moe_aux_.add(a.moe, dims_.n);
}

template <class Real>
void Transformer<Real>::begin_backward(Real dloss) {
  drv_.begin_backward();
  dloss_ = dloss;
  moe_aux_.begin_backward(dloss);
}

template <class Real>
void Transformer<Real>::backward_module(int m, std::span<const Real* const> params, std::span<Real* const> grads) {
  drv_.enter_backward(m);
  // With sequence parallelism each tp rank sees its token shard, so the gradients of the tensors they
  // all hold whole are partial: this micro-batch's part is summed over tp (Megatron-LM,
  // megatron/core/distributed/finalize_model_grads.py, _allreduce_layernorm_grads).
  const bool partial = par_.sp();
  const ModuleLayout& ml = layout().modules[std::size_t(m)];
  if (partial) replicated_.before(ml, drv_.module_base(grads, m), opts_.comm);
  run_backward(m, params, grads, GradPass::all);
  if (partial) replicated_.after(ml, drv_.module_base(grads, m), opts_.comm);
}

template <class Real>
void Transformer<Real>::backward_input_module(int m, std::span<const Real* const> params) {
  FSDP_CHECK(!par_.any(), "Transformer: the split backward runs without tensor or context parallelism");
  drv_.enter_input_pass(m);
  run_backward(m, params, {}, GradPass::input);
}

template <class Real>
void Transformer<Real>::backward_weight_module(int m, std::span<Real* const> grads) {
  drv_.enter_weight_pass(m);
  run_backward(m, {}, grads, GradPass::weight);
}

template <class Real>
void Transformer<Real>::run_backward(int m, std::span<const Real* const> params, std::span<Real* const> grads,
                                     GradPass pass) {
  FSDP_CHECK(!opts_.lora || pass == GradPass::all, "Transformer: LoRA runs the whole backward");
  if (drv_.part(m) == ModulePart::block) return block_module_backward(m, params, grads, pass);
  auto e = ends(m, pass);  // a frozen base (LoRA): input gradients only outside the blocks
  ends_sequence::backward<CpuModelPolicy<Real>>(block_context(m), e, drv_, m, params, grads, pass,
                                                opts_.lora != nullptr);
}

template <class Real>
void Transformer<Real>::set_input(int m, const Real* x) {
  drv_.resume_forward(m);
  std::vector<Real>& in = resid_[static_cast<std::size_t>(m - 1)];
  std::copy(x, x + in.size(), in.begin());
}

template <class Real>
const Real* Transformer<Real>::output(int m) const {
  drv_.check_output(m);
  return resid_[static_cast<std::size_t>(m)].data();
}

template <class Real>
void Transformer<Real>::set_output_grad(int m, const Real* dout) {
  drv_.resume_backward(m);
  std::copy(dout, dout + dres_.size(), dres_.begin());
}

template <class Real>
void Transformer<Real>::block_module_backward(int m, std::span<const Real* const> params,
                                              std::span<Real* const> grads, GradPass pass) {
  const auto i = static_cast<std::size_t>(m - 1);
  const ModuleLayout& ml = layout().modules[static_cast<std::size_t>(m)];
  const auto p =
      pass == GradPass::weight ? BlockTensors<const Real*>{} : block_tensors(ml, drv_.module_base(params, m));
  const auto g =
      pass == GradPass::input || opts_.lora ? BlockTensors<Real*>{} : block_tensors(ml, drv_.module_base(grads, m));
  const Real* x_in = resid_[i].data();
  const bool rc = drv_.recomputes(std::int64_t(i));
  if (rc && pass != GradPass::weight) block_forward(block_context(m), p, x_in, recompute_out_.data(), recompute_acts_);
  if (pass != GradPass::all && kept_.size() <= i) kept_.resize(i + 1), kept_acts_.resize(i + 1);
  if (pass == GradPass::input && kept_[i].d_out.empty()) kept_[i].allocate(dims_);
  if (pass == GradPass::input && rc) {
    BlockActs<Real>& k = kept_acts_[i];
    const BlockActs<Real>& r = recompute_acts_;
    k.ln1 = r.ln1, k.ln1_mean = r.ln1_mean, k.ln1_rstd = r.ln1_rstd, k.atty = r.atty, k.x_mid = r.x_mid;
    k.ln2 = r.ln2, k.ln2_mean = r.ln2_mean, k.ln2_rstd = r.ln2_rstd, k.fc_act = r.fc_act;
  }
  const BlockActs<Real>& a = !rc ? acts_[i] : pass == GradPass::weight ? kept_acts_[i] : recompute_acts_;
  block_backward(block_context(m), p, g, x_in, a, dres_.data(), scratch_, pass,
                 pass == GradPass::all ? nullptr : &kept_[i]);
}

template <class Real>
std::vector<const Real*> Transformer<Real>::module_ptrs(const Real* flat) const {
  std::vector<const Real*> out;
  for (const ModuleLayout& m : layout().modules) out.push_back(flat + m.offset);
  return out;
}

template <class Real>
std::vector<Real*> Transformer<Real>::module_ptrs(Real* flat) const {
  std::vector<Real*> out;
  for (const ModuleLayout& m : layout().modules) out.push_back(flat + m.offset);
  return out;
}

template <class Real>
Real Transformer<Real>::forward(const Real* params, const std::int32_t* tokens, const std::int32_t* targets) {
  set_batch(tokens, targets);
  const std::vector<const Real*> p = module_ptrs(params);
  for (int m = 0; m < layout().num_modules(); ++m) forward_module(m, p);
  return loss_;
}

template <class Real>
void Transformer<Real>::backward(const Real* params, Real* grads, Real dloss) {
  begin_backward(dloss);
  const std::vector<const Real*> p = module_ptrs(params);
  const std::vector<Real*> g = module_ptrs(grads);
  for (int m = layout().num_modules() - 1; m >= 0; --m) backward_module(m, p, g);
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace fsdpx
