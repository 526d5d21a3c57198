// executor/model/transformer.cpp — module-by-module forward and backward of the CPU reference model:
// embedding (token + learned positions for gpt), blocks (with optional full recompute), final norm,
// LM head + softmax cross-entropy (mean over B·T tokens). Activation memory: L+1 residual streams plus
// per-block BlockActs, or one shared BlockActs for the blocks that recompute.
#include "executor/model/transformer.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cpu/cross_entropy.h"
#include "executor/cpu/embedding.h"
#include "executor/cpu/gemm.h"

namespace fsdpx {

template <class Real>
Transformer<Real>::Transformer(const ModelSpec& spec, std::int64_t batch, std::int64_t seq, ModelOptions opts)
    : spec_(spec), opts_(std::move(opts)), layout_(make_param_layout(spec)), dims_(make_block_dims(spec, batch, seq)) {
  FSDP_CHECK(batch > 0 && seq > 0, "Transformer: batch and seq must be positive");
  FSDP_CHECK(spec.arch != Arch::gpt || seq <= spec.max_seq, "Transformer: seq exceeds max_seq (position table)");
  FSDP_CHECK(opts_.recompute.empty() || std::int64_t(opts_.recompute.size()) == spec.layers,
             "Transformer: need one recompute mode per block");
  if (spec.arch == Arch::llama)
    rope_ = cpu::make_rope_table<Real>(seq, spec.head_dim, spec.rope_theta, spec.rope_scaling);
  const auto nc = static_cast<std::size_t>(dims_.n * dims_.c);
  resid_.assign(static_cast<std::size_t>(spec.layers + 1), std::vector<Real>(nc));
  acts_.resize(static_cast<std::size_t>(spec.layers));
  bool any_recompute = false;
  for (std::int64_t i = 0; i < spec.layers; ++i) {
    if (recomputes(i)) any_recompute = true;
    else acts_[static_cast<std::size_t>(i)].allocate(dims_);
  }
  if (any_recompute) recompute_acts_.allocate(dims_), recompute_out_.assign(nc, 0);
  scratch_.allocate(dims_);
  lnf_.assign(nc, 0), lnf_mean_.assign(static_cast<std::size_t>(dims_.layernorm ? dims_.n : 0), 0);
  lnf_rstd_.assign(static_cast<std::size_t>(dims_.n), 0);
  probs_.assign(static_cast<std::size_t>(dims_.n * spec.vocab), 0);
  dres_.assign(nc, 0), dlnf_.assign(nc, 0);
}

template <class Real>
bool Transformer<Real>::recomputes(std::int64_t block) const {
  // selective == none here: see ModelOptions::recompute.
  return !opts_.recompute.empty() && opts_.recompute[static_cast<std::size_t>(block)] == RecomputeMode::full;
}

template <class Real>
BlockContext<Real> Transformer<Real>::block_context(int module) const {
  return BlockContext<Real>{&spec_, dims_, spec_.arch == Arch::llama ? &rope_ : nullptr, opts_.profiler,
                            module};
}

template <class Real>
const Real* Transformer<Real>::module_base(std::span<const Real* const> params, int module) const {
  FSDP_CHECK(std::int64_t(params.size()) == layout_.num_modules(), "Transformer: need one pointer per module");
  const Real* base = params[static_cast<std::size_t>(module)];
  FSDP_CHECK(base != nullptr, fmt::format("Transformer: buffer of module {} not provided",
                                          layout_.modules[static_cast<std::size_t>(module)].name));
  return base;
}

template <class Real>
const Real* Transformer<Real>::tensor(std::span<const Real* const> params, int module, const char* name) const {
  const Real* base = module_base(params, module);
  const TensorSlot* t = layout_.modules[static_cast<std::size_t>(module)].find(name);
  return t ? base + t->offset : nullptr;
}

template <class Real>
Real* Transformer<Real>::module_base(std::span<Real* const> grads, int module) const {
  FSDP_CHECK(std::int64_t(grads.size()) == layout_.num_modules(), "Transformer: need one pointer per module");
  Real* base = grads[static_cast<std::size_t>(module)];
  FSDP_CHECK(base != nullptr, fmt::format("Transformer: gradient buffer of module {} not provided",
                                          layout_.modules[static_cast<std::size_t>(module)].name));
  return base;
}

template <class Real>
Real* Transformer<Real>::tensor(std::span<Real* const> grads, int module, const char* name) const {
  Real* base = module_base(grads, module);
  const TensorSlot* t = layout_.modules[static_cast<std::size_t>(module)].find(name);
  return t ? base + t->offset : nullptr;
}

template <class Real>
void Transformer<Real>::set_batch(const std::int32_t* tokens, const std::int32_t* targets) {
  tokens_.assign(tokens, tokens + dims_.n);
  targets_.assign(targets, targets + dims_.n);
  next_forward_ = 0;
  next_backward_ = -1;
}

template <class Real>
void Transformer<Real>::forward_module(int m, std::span<const Real* const> params) {
  FSDP_CHECK(m == next_forward_, fmt::format("Transformer: forward of module {} out of order", m));
  if (m == ParamLayout::embedding_index()) {
    embedding_forward(params);
  } else if (m == layout_.final_norm_index()) {
    final_norm_forward(tensor(params, m, "final_norm.weight"));
  } else if (m == layout_.head_index()) {
    head_forward(params);
  } else {
    const std::int64_t i = m - 1;
    BlockActs<Real>& a = recomputes(i) ? recompute_acts_ : acts_[static_cast<std::size_t>(i)];
    const auto p = block_tensors(layout_.modules[static_cast<std::size_t>(m)], module_base(params, m));
    block_forward(block_context(m), p, resid_[static_cast<std::size_t>(i)].data(),
                  resid_[static_cast<std::size_t>(i + 1)].data(), a);
  }
  next_forward_ = m + 1;
}

template <class Real>
void Transformer<Real>::begin_backward(Real dloss) {
  FSDP_CHECK(next_forward_ == layout_.num_modules(), "Transformer: begin_backward before the forward finished");
  dloss_ = dloss;
  next_backward_ = layout_.head_index();
}

template <class Real>
void Transformer<Real>::backward_module(int m, std::span<const Real* const> params, std::span<Real* const> grads) {
  FSDP_CHECK(m == next_backward_, fmt::format("Transformer: backward of module {} out of order", m));
  if (m == layout_.head_index()) {
    head_backward(params, grads);
  } else if (m == layout_.final_norm_index()) {
    final_norm_backward(tensor(params, m, "final_norm.weight"), tensor(grads, m, "final_norm.weight"));
  } else if (m == ParamLayout::embedding_index()) {
    embedding_backward(grads);
  } else {
    const std::int64_t i = m - 1;
    const ModuleLayout& ml = layout_.modules[static_cast<std::size_t>(m)];
    const auto p = block_tensors(ml, module_base(params, m));
    const auto g = block_tensors(ml, module_base(grads, m));
    const Real* x_in = resid_[static_cast<std::size_t>(i)].data();
    if (recomputes(i)) block_forward(block_context(m), p, x_in, recompute_out_.data(), recompute_acts_);
    const BlockActs<Real>& a = recomputes(i) ? recompute_acts_ : acts_[static_cast<std::size_t>(i)];
    block_backward(block_context(m), p, g, x_in, a, dres_.data(), scratch_);
  }
  next_backward_ = m - 1;
}

template <class Real>
void Transformer<Real>::embedding_forward(std::span<const Real* const> params) {
  ScopedOp op(opts_.profiler, "embed", 0);
  cpu::embedding_forward(resid_[0].data(), tokens_.data(), tensor(params, 0, "tok.weight"),
                         tensor(params, 0, "pos.weight"), dims_.b, dims_.t, dims_.c, spec_.vocab);
}

template <class Real>
void Transformer<Real>::embedding_backward(std::span<Real* const> grads) {
  ScopedOp op(opts_.profiler, "embed_dw", 0);
  cpu::embedding_backward(tensor(grads, 0, "tok.weight"), tensor(grads, 0, "pos.weight"), dres_.data(),
                          tokens_.data(), dims_.b, dims_.t, dims_.c);
}

template <class Real>
void Transformer<Real>::final_norm_forward(const Real* p) {
  const int m = layout_.final_norm_index();
  ScopedOp op(opts_.profiler, "final_norm", m);
  const ModuleLayout& ml = layout_.modules[static_cast<std::size_t>(m)];
  const TensorSlot* b = ml.find("final_norm.bias");
  norm_forward(spec_.arch, lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), resid_.back().data(), p,
               b ? p + b->offset : nullptr, dims_.n, dims_.c, spec_.norm_eps);
}

template <class Real>
void Transformer<Real>::final_norm_backward(const Real* p, Real* g) {
  const int m = layout_.final_norm_index();
  ScopedOp op(opts_.profiler, "final_norm_bwd", m);
  const TensorSlot* b = layout_.modules[static_cast<std::size_t>(m)].find("final_norm.bias");
  std::fill(dres_.begin(), dres_.end(), Real(0));
  norm_backward(spec_.arch, dres_.data(), g, b ? g + b->offset : nullptr, dlnf_.data(), resid_.back().data(), p,
                lnf_mean_.data(), lnf_rstd_.data(), dims_.n, dims_.c);
}

template <class Real>
void Transformer<Real>::head_forward(std::span<const Real* const> params) {
  const int m = layout_.head_index();
  const Real* w = spec_.tied_embeddings ? tensor(params, 0, "tok.weight") : tensor(params, m, "head.weight");
  {
    ScopedOp op(opts_.profiler, "lm_head", m);
    cpu::matmul_forward(probs_.data(), lnf_.data(), w, static_cast<const Real*>(nullptr), dims_.n, dims_.c,
                        spec_.vocab);
  }
  ScopedOp op(opts_.profiler, "loss", m);
  loss_ = cpu::softmax_cross_entropy_forward(probs_.data(), targets_.data(), dims_.n, spec_.vocab);
}

template <class Real>
void Transformer<Real>::head_backward(std::span<const Real* const> params, std::span<Real* const> grads) {
  const int m = layout_.head_index();
  const bool tied = spec_.tied_embeddings;
  const Real* w = tied ? tensor(params, 0, "tok.weight") : tensor(params, m, "head.weight");
  Real* dw = tied ? tensor(grads, 0, "tok.weight") : tensor(grads, m, "head.weight");
  {
    ScopedOp op(opts_.profiler, "loss_bwd", m);
    cpu::softmax_cross_entropy_backward(probs_.data(), targets_.data(), dims_.n, spec_.vocab, dloss_);
  }
  std::fill(dlnf_.begin(), dlnf_.end(), Real(0));
  {
    ScopedOp op(opts_.profiler, "lm_head_dx", m);
    cpu::matmul_backward_dx(dlnf_.data(), probs_.data(), w, dims_.n, dims_.c, spec_.vocab);
  }
  ScopedOp op(opts_.profiler, "lm_head_dw", m);
  cpu::matmul_backward_dw(dw, static_cast<Real*>(nullptr), probs_.data(), lnf_.data(), dims_.n, dims_.c, spec_.vocab);
}

template <class Real>
std::vector<const Real*> Transformer<Real>::module_ptrs(const Real* flat) const {
  std::vector<const Real*> out;
  for (const ModuleLayout& m : layout_.modules) out.push_back(flat + m.offset);
  return out;
}

template <class Real>
std::vector<Real*> Transformer<Real>::module_ptrs(Real* flat) const {
  std::vector<Real*> out;
  for (const ModuleLayout& m : layout_.modules) out.push_back(flat + m.offset);
  return out;
}

template <class Real>
Real Transformer<Real>::forward(const Real* params, const std::int32_t* tokens, const std::int32_t* targets) {
  set_batch(tokens, targets);
  const std::vector<const Real*> p = module_ptrs(params);
  for (int m = 0; m < layout_.num_modules(); ++m) forward_module(m, p);
  return loss_;
}

template <class Real>
void Transformer<Real>::backward(const Real* params, Real* grads, Real dloss) {
  begin_backward(dloss);
  const std::vector<const Real*> p = module_ptrs(params);
  const std::vector<Real*> g = module_ptrs(grads);
  for (int m = layout_.num_modules() - 1; m >= 0; --m) backward_module(m, p, g);
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace fsdpx
