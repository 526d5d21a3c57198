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
#include "executor/cpu/cross_entropy.h"
#include "executor/cpu/embedding.h"
#include "executor/cpu/gemm.h"
#include "executor/model/moe_block_mlp.h"
#include "executor/model/qkv_groups.h"
#include "executor/model/tp_region.h"
#include "executor/model/vocab_parallel.h"

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
  if (par_.tp > 1) emb_.assign(n * c, 0);
  lnf_.assign(n * c, 0), lnf_mean_.assign(dims_.layernorm ? nl : 0, 0), lnf_rstd_.assign(nl, 0);
  probs_.assign(n * static_cast<std::size_t>(v_local_), 0);
  if (par_.any()) ce_stats_.assign(n * 3 * static_cast<std::size_t>(par_.tp), 0);
  dres_.assign(nl * c, 0), dlnf_.assign(n * c, 0);
}

template <class Real>
BlockContext<Real> Transformer<Real>::block_context(int module) {
  BlockContext<Real> ctx{&spec_,    dims_,      spec_.arch == Arch::llama ? &rope_ : nullptr,
                         opts_.profiler, module, par_,
                         opts_.comm, &scratch_, &group_columns_, &cp_positions_, LoraBlock<Real>{}, nullptr};
  if (opts_.lora) {
    FSDP_CHECK(lora_params_ != nullptr, "Transformer: LoRA without adapter buffers (set_lora_buffers)");
    const std::int64_t at = opts_.lora->block_offset(module - 1);
    ctx.lora = LoraBlock<Real>{opts_.lora, lora_params_ + at, lora_grads_ ? lora_grads_ + at : nullptr};
  }
  if (opts_.fp8) ctx.fp8 = &fp8_;
  ctx.moe_aux = moe_aux_.grad();
  return ctx;
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
  switch (drv_.part(m)) {
    case ModulePart::embedding: return embedding_forward(params);
    case ModulePart::final_norm: return final_norm_forward(drv_.tensor(params, m, "final_norm.weight"));
    case ModulePart::head: return head_forward(params);
    case ModulePart::block: break;
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
  if (partial) sum_replicated_grads(m, grads, false);
  run_backward(m, params, grads, GradPass::all);
  if (partial) sum_replicated_grads(m, grads, true);
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
  if (opts_.lora) {  // frozen base: only input gradients outside the blocks (whose adapters get theirs)
    FSDP_CHECK(pass == GradPass::all, "Transformer: LoRA runs the whole backward");
    if (m == layout().head_index()) head_backward(params, grads, GradPass::input);
    else if (m == layout().final_norm_index()) final_norm_backward(params, grads, GradPass::input);
    else if (m != ParamLayout::embedding_index()) block_module_backward(m, params, grads, pass);
    return;
  }
  if (m == layout().head_index()) head_backward(params, grads, pass);
  else if (m == layout().final_norm_index()) final_norm_backward(params, grads, pass);
  else if (m == ParamLayout::embedding_index()) embedding_backward(grads, pass);
  else block_module_backward(m, params, grads, pass);
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

// Before a module's backward (after = false): keeps the accumulated gradients of its tp-replicated
// tensors in replicated_before_ and zeroes them. After it: sums this micro-batch's partial gradients
// over tp (one all-reduce) and adds back what was accumulated.
template <class Real>
void Transformer<Real>::sum_replicated_grads(int m, std::span<Real* const> all_grads, bool after) {
  const ModuleLayout& ml = layout().modules[static_cast<std::size_t>(m)];
  if (std::none_of(ml.tensors.begin(), ml.tensors.end(), [](const TensorSlot& t) { return t.tp_replicated; })) return;
  Real* grads = drv_.module_base(all_grads, m);
  std::vector<Real> part;  // the replicated tensors back to back
  for (const TensorSlot& t : ml.tensors)
    if (t.tp_replicated) part.insert(part.end(), grads + t.offset, grads + t.offset + t.numel());
  if (after) opts_.comm->all_reduce(ModelAxis::tp, part.data(), std::int64_t(part.size()));
  std::size_t k = 0;
  for (const TensorSlot& t : ml.tensors) {
    if (!t.tp_replicated) continue;
    for (std::int64_t e = 0; e < t.numel(); ++e, ++k)
      grads[t.offset + e] = after ? replicated_before_[k] + part[k] : Real(0);
  }
  if (!after) replicated_before_ = std::move(part);
}

// The input pass of a recomputing block re-runs its forward into the shared recompute buffers; what
// its weight pass reads of them is kept per block.
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

// Without tensor or context parallelism the fused kernels of cpu/; else the vocabulary-parallel
// lookup, summed over tp by g, and positions looked up by global index.
template <class Real>
void Transformer<Real>::embedding_forward(std::span<const Real* const> params) {
  const Real* wte = drv_.tensor(params, 0, "tok.weight");
  const Real* wpe = drv_.tensor(params, 0, "pos.weight");
  PausableOp op(opts_.profiler, "embed", 0);
  if (!par_.any()) {
    cpu::embedding_forward(resid_[0].data(), tokens_.data(), wte, wpe, dims_.b, dims_.t, dims_.c, spec_.vocab);
    return;
  }
  Real* partial = par_.tp > 1 ? emb_.data() : resid_[0].data();
  vocab_embedding_forward(partial, tokens_.data(), wte, v_first_, v_local_, dims_.n, dims_.c);
  op.pause();
  TpRegion{par_, opts_.comm, dims_.n, dims_.n_local, dims_.c}.exit(partial, resid_[0].data());
  op.resume();
  if (wpe) add_positions(resid_[0].data(), wpe, shard_positions_.data(), dims_.n_local, dims_.c);
}

// The embedding has no input gradient: its input pass keeps the output's gradient for the weight pass.
template <class Real>
void Transformer<Real>::embedding_backward(std::span<Real* const> grads, GradPass pass) {
  if (pass == GradPass::input) {
    embedding_dout_ = dres_;
    return;
  }
  Real* dwte = drv_.tensor(grads, 0, "tok.weight");
  Real* dwpe = drv_.tensor(grads, 0, "pos.weight");
  if (!par_.any()) {
    ScopedOp op(opts_.profiler, "embed_dw", 0);
    cpu::embedding_backward(dwte, dwpe, pass == GradPass::weight ? embedding_dout_.data() : dres_.data(),
                            tokens_.data(), dims_.b, dims_.t, dims_.c);
    return;
  }
  const Real* dfull = TpRegion{par_, opts_.comm, dims_.n, dims_.n_local, dims_.c}.exit_backward(dres_.data(), emb_.data());
  ScopedOp op(opts_.profiler, "embed_dw", 0);
  vocab_embedding_backward(dwte, dfull, tokens_.data(), v_first_, v_local_, dims_.n, dims_.c);
  if (dwpe) positions_backward(dwpe, dres_.data(), shard_positions_.data(), dims_.n_local, dims_.c);
}

template <class Real>
void Transformer<Real>::final_norm_forward(const Real* p) {
  const int m = layout().final_norm_index();
  ScopedOp op(opts_.profiler, "final_norm", m);
  const ModuleLayout& ml = layout().modules[static_cast<std::size_t>(m)];
  const TensorSlot* b = ml.find("final_norm.bias");
  const std::int64_t row = par_.sp() ? par_.tp_rank * dims_.n_local : 0;  // the rank's shard of lnf_
  norm_forward(spec_.arch, lnf_.data() + row * dims_.c, lnf_mean_.data(), lnf_rstd_.data(), resid_.back().data(), p,
               b ? p + b->offset : nullptr, dims_.n_local, dims_.c, spec_.norm_eps);
}

template <class Real>
void Transformer<Real>::final_norm_backward(std::span<const Real* const> params, std::span<Real* const> grads,
                                            GradPass pass) {
  const int m = layout().final_norm_index();
  ScopedOp op(opts_.profiler, "final_norm_bwd", m);
  const TensorSlot* b = layout().modules[static_cast<std::size_t>(m)].find("final_norm.bias");
  const Real* p = pass == GradPass::weight ? nullptr : drv_.tensor(params, m, "final_norm.weight");
  Real* g = pass == GradPass::input ? nullptr : drv_.tensor(grads, m, "final_norm.weight");
  const std::int64_t row = par_.sp() ? par_.tp_rank * dims_.n_local : 0;
  if (pass != GradPass::weight) std::fill(dres_.begin(), dres_.end(), Real(0));
  norm_backward(spec_.arch, pass == GradPass::weight ? nullptr : dres_.data(), g, g && b ? g + b->offset : nullptr,
                dlnf_.data() + row * dims_.c, resid_.back().data(), p, lnf_mean_.data(), lnf_rstd_.data(),
                dims_.n_local, dims_.c);
}

// Σ over the rank's tokens of the cross-entropy over the whole vocabulary, from the tp ranks'
// statistics of their slices (vocab_parallel.h); probs_ becomes the rank's slice of the probabilities.
template <class Real>
Real Transformer<Real>::vocab_parallel_loss() {
  const std::int64_t n = dims_.n;
  Real* mine = ce_stats_.data() + std::int64_t(par_.tp_rank) * n * 3;
  PausableOp op(opts_.profiler, "loss", layout().head_index());
  vocab_ce_stats(mine, probs_.data(), targets_.data(), n, v_local_, v_first_);
  op.pause();
  if (par_.tp > 1) opts_.comm->all_gather(ModelAxis::tp, mine, ce_stats_.data(), n * 3);
  op.resume();
  return vocab_ce_probs(probs_.data(), ce_stats_.data(), par_.tp, n, v_local_);
}

template <class Real>
void Transformer<Real>::head_forward(std::span<const Real* const> params) {
  const int m = layout().head_index();
  const Real* w = spec_.tied_embeddings ? drv_.tensor(params, 0, "tok.weight") : drv_.tensor(params, m, "head.weight");
  TpRegion{par_, opts_.comm, dims_.n, dims_.n_local, dims_.c}.enter(lnf_.data());
  {
    ScopedOp op(opts_.profiler, "lm_head", m);
    cpu::matmul_forward(probs_.data(), lnf_.data(), w, static_cast<const Real*>(nullptr), dims_.n, dims_.c, v_local_);
  }
  if (par_.any()) {
    loss_ = vocab_parallel_loss() / Real(dims_.b * seq_);
    return;
  }
  ScopedOp op(opts_.profiler, "loss", m);
  loss_ = cpu::softmax_cross_entropy_forward(probs_.data(), targets_.data(), dims_.n, spec_.vocab) + moe_aux_.loss();
}

// dlogits (probs_) and the final norm's output stay in the model until its next forward, so the weight
// pass reads them there.
template <class Real>
void Transformer<Real>::head_backward(std::span<const Real* const> params, std::span<Real* const> grads, GradPass pass) {
  const int m = layout().head_index();
  const bool tied = spec_.tied_embeddings;
  if (pass != GradPass::weight) {
    const Real* w = tied ? drv_.tensor(params, 0, "tok.weight") : drv_.tensor(params, m, "head.weight");
    {
      ScopedOp op(opts_.profiler, "loss_bwd", m);
      if (par_.any())
        vocab_ce_backward(probs_.data(), targets_.data(), dims_.n, v_local_, v_first_, dloss_ / Real(dims_.b * seq_));
      else
        cpu::softmax_cross_entropy_backward(probs_.data(), targets_.data(), dims_.n, spec_.vocab, dloss_);
    }
    std::fill(dlnf_.begin(), dlnf_.end(), Real(0));
    {
      ScopedOp op(opts_.profiler, "lm_head_dx", m);
      cpu::matmul_backward_dx(dlnf_.data(), probs_.data(), w, dims_.n, dims_.c, v_local_);
    }
    TpRegion{par_, opts_.comm, dims_.n, dims_.n_local, dims_.c}.enter_backward(dlnf_.data());
  }
  if (pass == GradPass::input) return;
  Real* dw = tied ? drv_.tensor(grads, 0, "tok.weight") : drv_.tensor(grads, m, "head.weight");
  ScopedOp op(opts_.profiler, "lm_head_dw", m);
  cpu::matmul_backward_dw(dw, static_cast<Real*>(nullptr), probs_.data(), lnf_.data(), dims_.n, dims_.c, v_local_);
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
