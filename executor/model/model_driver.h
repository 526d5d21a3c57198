// executor/model/model_driver.h — the model driver written once for both backends (issue 26): the
// state every model holds (layout, sizes, residual streams, block activations, scratch, the ends'
// buffers, the replicated-gradient sum, the MoE auxiliary loss) and one micro-batch's sequence over
// it: each module's forward, its backward (whole, or zero bubble's input and weight passes), full
// recompute, and the pipeline's resume points (llm.c's one readable step, train_gpt2.cu's
// gpt2_forward / gpt2_backward, with the device calls left to a policy). A backend's model derives
// from ModelDriver<Model, Dev> (CRTP: no virtual call, no class hierarchy beyond this one base) and
// supplies its buffers' allocation and a few hooks; Dev is its ends policy (model_policy.h's
// CpuModelPolicy, cuda_backend/cuda_model_policy.h's CudaModelPolicy), which names the kernels, the
// block entry points and the types. Leaves out allocation, the batch upload and where the loss goes.
//
// Protocol for one micro-batch (the backend's set_batch first; `stream` only on a device):
//   for m in 0..M-1:  forward_module(m, params, stream);           // params[k]: module k's buffer or null
//   begin_backward(dloss);                                         // e.g. 1/(grad_accum·dp) for averaged grads
//   for m in M-1..0:  backward_module(m, params, grads, stream);   // grads[k] accumulate (+=)
// Module m reads params[m] only, except the tied head (params[0], grads[0]: the token table). A pipeline
// stage runs a contiguous range of modules (one model per micro-batch in flight) and resumes at its
// first module's input_buffer (forward) and its last module's output_grad_buffer (backward). Zero
// bubble splits each backward into backward_input_module (in backward order), which keeps what
// backward_weight_module later reads to write the parameter gradients without reading parameters.
//
// Design note — the two drivers side by side (model/transformer.cpp and cuda_backend/cuda_model.cpp at
// main 4f3c36c), function by function:
//   forward_module          identical up to device calls: context, ends, Dev::block_params,
//                           Dev::block_forward, Dev::is_moe                           -> here
//   begin_backward          identical                                                   -> here
//   backward_module         identical up to the gradient ops' context (Dev::grad_ops)   -> here
//   backward_input/weight   identical; the checks differ (CPU: tp = cp = 1, as the block sequence
//                           requires on both; CUDA: split_backward, in its hooks)       -> here
//   run_backward, block     identical up to where a recomputing block's activations live
//     backward, recompute   (hooks backward_acts, keep_recomputed: the CPU copies what the weight pass
//                           reads, CUDA recomputes into the block's own buffers) and the block entry
//                           (Dev::block_backward; what a split keeps: hook weight_inputs) -> here
//   ends buffers            identical fields (ends_buffers); the batch and the split's keeps are each
//                           backend's (hook ends)                                       -> here + hook
//   pipeline input/output   identical buffers; the CPU copies a host message in (set_input,
//                           set_output_grad), CUDA hands the buffer to its receive      -> here + CPU copies
//   constructor             identical sizes, vocabulary slice, positions, checks, and the
//                           options (model_options.h, Dev::Options)                     -> here;
//                           allocation is device-specific (CUDA allocates only the modules it runs,
//                           uploads RoPE tables and cp row maps)                        -> backends
//   set_batch               identical token picking under cp (rank_tokens) and start (start_batch);
//                           the copy (host vectors, or pinned staging to the device) -> here + backends
//   LoRA                    identical buffers and block slices (lora_block)             -> here
//   saved and weight-pass bytes  the same buffers measured (each backend's own: hook own_saved_bytes)
//                           -> here (exec13; before, the CPU derived them by formula: model/buffer_bytes.*)
//   block context, loss, whole-model helpers: device-specific                          -> backends
//
// Hooks a Model supplies (private, ModelDriver a friend): Ctx context(Stream, int module);
// Ends ends(int module, GradPass) (starting from ends_buffers()); Acts& backward_acts(block, GradPass);
// void keep_recomputed(block); Kept* weight_inputs(block, GradPass) (null for GradPass::all);
// std::int64_t own_saved_bytes(int module) const (what its own buffers keep for the module).
// Dev adds to its block and ends policies: Stream, Options (model_options.h), Buffers (block_buffers.h:
// Buffer<X>, bytes), GradOps (replicated_grads.h), block_params, block_forward, block_backward (with
// the pass and the kept inputs) and grad_ops(ctx).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/model_spec.h"
#include "core/plan_settings.h"
#include "executor/model/block_context.h"
#include "executor/model/block_dims.h"
#include "executor/model/block_sequence.h"
#include "executor/model/context_positions.h"
#include "executor/model/ends_sequence.h"
#include "executor/model/lora_layout.h"
#include "executor/model/mla_dims.h"
#include "executor/model/module_driver.h"
#include "executor/model/moe_aux_loss.h"
#include "executor/model/moe_dims.h"
#include "executor/model/replicated_grads.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

template <class Model, class Dev>
class ModelDriver {
 public:
  using E = typename Dev::Elem;  // parameters and activations
  using G = typename Dev::Grad;  // parameter gradients, statistics and the loss's scale
  using Stream = typename Dev::Stream;
  using Options = typename Dev::Options;  // ModelOptionsT over the backend's model communicator
  using Params = std::span<const E* const>;  // per module: its buffer or null
  using Grads = std::span<G* const>;         // per module: its gradient buffer (+=) or null

  const ParamLayout& layout() const { return drv_.layout(); }
  const ModelSpec& spec() const { return spec_; }

  void forward_module(int m, Params params, Stream stream) {
    drv_.enter_forward(m);
    const Ctx ctx = self().context(stream, m);
    if (drv_.part(m) != ModulePart::block) {
      auto e = self().ends(m, GradPass::all);
      return ends_sequence::forward<Dev>(ctx, e, drv_, m, params);
    }
    const auto i = std::size_t(m - 1);
    Acts& a = drv_.recomputes(std::int64_t(i)) ? recompute_acts_ : acts_[i];
    const auto p = Dev::block_params(layout().modules[std::size_t(m)], drv_.module_base(params, m));
    Dev::block_forward(ctx, p, resid_[i].data(), resid_[i + 1].data(), a);
    if (Dev::is_moe(ctx)) moe_aux_.add(a.moe, dims_.n);
  }
  void begin_backward(G dloss = G(1)) {
    drv_.begin_backward();
    dloss_ = dloss;
    moe_aux_.begin_backward(dloss);
  }
  // With sequence parallelism each tp rank sees its token shard, so the gradients of the tensors they
  // all hold whole are partial: this micro-batch's part is summed over tp (Megatron-LM,
  // megatron/core/distributed/finalize_model_grads.py, _allreduce_layernorm_grads; replicated_grads.h).
  void backward_module(int m, Params params, Grads grads, Stream stream) {
    drv_.enter_backward(m);
    const Ctx ctx = self().context(stream, m);
    const bool partial = par_.sp();
    const ModuleLayout& ml = layout().modules[std::size_t(m)];
    if (partial) replicated_.before(ml, drv_.module_base(grads, m), Dev::grad_ops(ctx));
    run_backward(ctx, m, params, grads, GradPass::all);
    if (partial) replicated_.after(ml, drv_.module_base(grads, m), Dev::grad_ops(ctx));
  }
  // Zero bubble (Qi et al. 2023): the input gradient first, keeping what the weight pass reads; later
  // the parameter gradients, reading no parameter. The block sequence splits with tp = cp = 1 only.
  void backward_input_module(int m, Params params, Stream stream) {
    FSDP_CHECK(!par_.any(), drv_.who() + ": the split backward runs without tensor or context parallelism");
    drv_.enter_input_pass(m);
    run_backward(self().context(stream, m), m, params, {}, GradPass::input);
  }
  void backward_weight_module(int m, Grads grads, Stream stream) {
    drv_.enter_weight_pass(m);
    run_backward(self().context(stream, m), m, {}, grads, GradPass::weight);
  }
  // The host backend has no stream: the same calls without one.
  void forward_module(int m, Params params) requires std::is_empty_v<Stream> { forward_module(m, params, {}); }
  void backward_module(int m, Params params, Grads grads) requires std::is_empty_v<Stream> {
    backward_module(m, params, grads, {});
  }
  void backward_input_module(int m, Params params) requires std::is_empty_v<Stream> {
    backward_input_module(m, params, {});
  }
  void backward_weight_module(int m, Grads grads) requires std::is_empty_v<Stream> {
    backward_weight_module(m, grads, {});
  }

  // Pipeline stages: input_buffer(m) receives the previous stage's output (the forward resumes at
  // module m), output(m) is what module m hands on; output_grad_buffer(m) receives the gradient w.r.t.
  // module m's output (the backward resumes at m), input_grad() the gradient w.r.t. the input of the
  // last module run backward. Each holds [N_local, C] activations.
  std::int64_t boundary_elems() const { return dims_.n_local * dims_.c; }
  E* input_buffer(int m) {
    drv_.resume_forward(m);
    return held(m - 1, m, "no stage of this model starts at module");
  }
  const E* output(int m) const {
    drv_.check_output(m);
    FSDP_CHECK(!resid_[std::size_t(m)].empty(), fmt::format("{}: module {} has no output to hand on", drv_.who(), m));
    return resid_[std::size_t(m)].data();
  }
  E* output_grad_buffer(int m) {
    drv_.resume_backward(m);
    held(m, m, "no stage's backward starts at module");
    return dres_.data();
  }
  const E* input_grad() const { return dres_.data(); }

  // Bytes measured on this model's buffers, each counted with the module whose backward reads it last
  // (the simulator's attribution, cost_models/activations.cpp): what module m keeps from its forward to
  // its backward (the embedding: the backend's batch, hook own_saved_bytes; a block: its input and its
  // activations unless it recomputes; the final norm: its input, output and statistics; the head: its
  // logits and cross-entropy statistics, and the backend's loss buffers), what a split backward keeps
  // from module m's input pass to its weight pass, and what the backward of modules [first, first +
  // count) works in besides (the residual-gradient pair, the block scratch, a recomputing block's shared
  // activations and discarded output). Buffers a model allocates on first use count from then on.
  std::int64_t saved_bytes(int m) const {
    FSDP_CHECK(m >= 0 && m < layout().num_modules(), fmt::format("{}: no module {}", drv_.who(), m));
    const std::int64_t own = self().own_saved_bytes(m);
    if (m == ParamLayout::embedding_index()) return own;
    if (m == layout().final_norm_index())
      return own + Bufs::bytes(resid_.back()) + Bufs::bytes(lnf_) + Bufs::bytes(lnf_mean_) + Bufs::bytes(lnf_rstd_);
    if (m == layout().head_index()) return own + Bufs::bytes(logits_) + Bufs::bytes(ce_stats_);
    const auto i = std::size_t(m - 1);
    return own + Bufs::bytes(resid_[i]) + (drv_.recomputes(std::int64_t(i)) ? 0 : acts_[i].bytes());
  }
  std::int64_t weight_pass_bytes(int m) const {
    FSDP_CHECK(m >= 0 && m < layout().num_modules(), fmt::format("{}: no module {}", drv_.who(), m));
    if (m == ParamLayout::embedding_index()) return Bufs::bytes(embedding_dout_);
    if (m == layout().final_norm_index()) return Bufs::bytes(lnf_keep_);
    if (m == layout().head_index()) return 0;
    const auto i = std::size_t(m - 1);
    std::int64_t b = i < kept_.size() ? kept_[i].bytes() : 0;
    if (drv_.recomputes(std::int64_t(i)))  // the activations its weight pass reads of its recomputed forward
      b += acts_[i].bytes() + (i < kept_acts_.size() ? kept_acts_[i].bytes() : 0);
    return b;
  }
  std::int64_t backward_working_bytes(int first, int count) const {
    bool block = false, recompute = false;
    for (int m = first; m < first + count; ++m) {
      if (drv_.part(m) != ModulePart::block) continue;
      block = true;
      recompute = recompute || drv_.recomputes(m - 1);
    }
    return Bufs::bytes(dres_) + Bufs::bytes(dlnf_) + (block ? scratch_.bytes() : 0) +
           (recompute ? recompute_acts_.bytes() + Bufs::bytes(recompute_out_) : 0);
  }

  // LoRA: the whole model's adapters [lora->total] (read in forward and backward) and their gradient
  // (accumulated in backward), in the flat layout of lora_layout.h; they stay set.
  void set_lora_buffers(const E* params, G* grads) {
    FSDP_CHECK(lora_ != nullptr, drv_.who() + ": adapter buffers for a model without LoRA");
    lora_params_ = params, lora_grads_ = grads;
  }

 protected:
  using Ctx = typename Dev::Ctx;
  using Acts = typename Dev::Acts;
  using Kept = typename Dev::Kept;
  using Bufs = typename Dev::Buffers;
  template <class X>
  using Buffer = typename Bufs::template Buffer<X>;

  // who: the model's name in check messages. The rank's sizes, vocabulary slice and positions from its
  // options (opts.parallel); the backend allocates the buffers.
  ModelDriver(std::string who, const ModelSpec& spec, std::int64_t batch, std::int64_t seq, Options opts)
      : opts_(std::move(opts)), spec_(spec), par_(opts_.parallel), lora_(opts_.lora),
        drv_(std::move(who), make_param_layout(spec, TpSlice{par_.tp, par_.tp_rank}, EpSlice{par_.ep, par_.ep_rank}),
             opts_.recompute),
        dims_(checked_dims(drv_.who(), spec, batch, seq, par_)), seq_(seq), v_local_(spec.vocab / par_.tp),
        v_first_(par_.tp_rank * v_local_), positions_(context_positions(seq, par_.cp, par_.cp_rank)) {}

  // The MoE blocks' routing and rows (the CPU's on the host; CUDA's rows on the device: cuda_moe_buffers.h)
  // and the latent attention's chains (the CPU's host vectors: mla_dims.h; CUDA's device buffers:
  // cuda_mla_buffers.h), for every block's activations.
  void allocate_host_block_parts() {
    if (spec_.is_moe()) {  // moe_mlp.h
      const MoeDims md = make_moe_dims(spec_, dims_.n, 1, 0, dims_.t);
      for (Acts& a : acts_) a.moe.allocate(md);
      recompute_acts_.moe.allocate(md), scratch_.moe.allocate(md);
    }
    if (spec_.is_mla()) {  // mla_attention.h
      const MlaDims ld = make_mla_dims(spec_, dims_.b, dims_.t);
      for (Acts& a : acts_) a.mla.allocate(ld);
      recompute_acts_.mla.allocate(ld), scratch_.mla.allocate(ld);
    }
  }
  // A micro-batch starts (after its tokens are in place).
  void start_batch() { moe_aux_.reset(spec_), drv_.start_batch(); }
  // The rank's context-parallel part [B, T] of whole sequences [B, seq] (positions_).
  std::vector<std::int32_t> rank_tokens(const std::int32_t* whole) const {
    std::vector<std::int32_t> mine;
    for (std::int64_t b = 0; b < dims_.b; ++b)
      for (std::int64_t p : positions_) mine.push_back(whole[b * seq_ + p]);
    return mine;
  }
  // The block context's fields every backend fills alike (block_context.h; L: the backend's
  // LoraBlock); the backend's context adds its own.
  template <class L>
  BlockContextBase<std::remove_pointer_t<decltype(Options::comm)>, typename Dev::Scratch, L, G> context_base(
      int module) {
    return {&spec_, dims_, opts_.profiler, module, par_, opts_.comm, &scratch_, lora_block<L>(module), moe_aux_.grad()};
  }
  // Block module m's adapters (L: the backend's LoraBlock; empty without LoRA and for the ends).
  template <class L>
  L lora_block(int m) const {
    if (!lora_ || m < 1 || m > spec_.layers) return L{};
    FSDP_CHECK(lora_params_ != nullptr, drv_.who() + ": LoRA without adapter buffers (set_lora_buffers)");
    const std::int64_t at = lora_->block_offset(m - 1);
    return L{lora_, lora_params_ + at, lora_grads_ ? lora_grads_ + at : nullptr};
  }

  // The ends' buffers every backend fills alike (ends_sequence.h); the backend adds its batch and keeps.
  typename Dev::Ends ends_buffers() {
    typename Dev::Ends e;
    e.x0 = resid_.front().data(), e.emb = emb_.data(), e.x_last = resid_.back().data();
    e.lnf = lnf_.data(), e.lnf_mean = lnf_mean_.data(), e.lnf_rstd = lnf_rstd_.data();
    e.logits = logits_.data(), e.ce_stats = ce_stats_.data(), e.dres = dres_.data(), e.dlnf = dlnf_.data();
    e.embedding_dout = embedding_dout_.empty() ? nullptr : embedding_dout_.data();
    e.scratch = &scratch_;
    e.v_local = v_local_, e.v_first = v_first_, e.batch_tokens = dims_.b * seq_, e.dloss = dloss_;
    return e;
  }

  Options opts_;
  ModelSpec spec_;
  ModelParallel par_;                        // opts_.parallel
  const LoraLayout* lora_ = nullptr;         // LoRA: a frozen base, adapters in lora_params_
  ModuleDriver<E, G> drv_;                   // module order, protocol, pointer lookups
  BlockDims dims_;
  std::int64_t seq_ = 0;                     // whole sequence (dims_.t = seq / cp)
  std::int64_t v_local_ = 0, v_first_ = 0;   // the rank's vocabulary slice
  std::vector<std::int64_t> positions_;      // [T] the global positions of the rank's tokens
  std::vector<Buffer<E>> resid_;             // L+1 × [N_local, C]: embedding output, then each block's output
  std::vector<Acts> acts_;                   // per block; unallocated for blocks that recompute
  Acts recompute_acts_;                      // shared by recomputing blocks
  Buffer<E> recompute_out_;                  // [N_local, C] discarded block output during recompute
  typename Dev::Scratch scratch_;
  Buffer<E> emb_;                            // [N, C] the embedding's partial output / gathered gradient (SP)
  Buffer<E> lnf_;                            // [N, C] final norm output (head input)
  Buffer<G> lnf_mean_, lnf_rstd_;            // [N_local] (mean: LayerNorm only, else empty)
  Buffer<E> logits_;                         // [N, V_local] logits (CPU: then probabilities), then dlogits
  Buffer<G> ce_stats_;                       // [tp, N, 3] every tp rank's cross-entropy statistics (tp or cp > 1)
  Buffer<E> dres_, dlnf_;                    // [N_local, C] residual-stream gradient, [N, C] final-norm output grad
  // Zero bubble's split: per block what its weight pass reads (Kept; the CPU allocates on first use, CUDA
  // up front), a recomputing block's activations the CPU copies for it (CUDA recomputes into acts_),
  // the embedding output's gradient (CPU; CUDA reads it in dres_) and the final norm's fp32 gradients
  // [w, b] x C (CUDA; the CPU re-runs the norm backward).
  std::vector<Kept> kept_;
  std::vector<Acts> kept_acts_;
  Buffer<E> embedding_dout_;
  Buffer<G> lnf_keep_;
  ReplicatedGradSum<typename Dev::GradOps> replicated_;  // SP: the replicated tensors' gradient sums
  MoeAuxLoss<G> moe_aux_;                    // MoE models: the load-balancing loss (moe_aux_loss.h)
  const E* lora_params_ = nullptr;           // LoRA: [lora->total] adapters
  G* lora_grads_ = nullptr;                  // and their gradient (+=)
  G dloss_ = G(1);

 private:
  Model& self() { return static_cast<Model&>(*this); }
  const Model& self() const { return static_cast<const Model&>(*this); }

  static BlockDims checked_dims(const std::string& who, const ModelSpec& spec, std::int64_t batch, std::int64_t seq,
                                const ModelParallel& par) {
    FSDP_CHECK(batch > 0 && seq > 0, who + ": batch and seq must be positive");
    FSDP_CHECK(spec.arch != Arch::gpt || seq <= spec.max_seq, who + ": seq exceeds max_seq (position table)");
    return make_block_dims(spec, batch, seq, par);
  }
  // Residual stream k's buffer, checked to be allocated (a pipeline model holds its stages' only).
  E* held(int k, int m, const char* what) {
    FSDP_CHECK(!resid_[std::size_t(k)].empty(), fmt::format("{}: {} {}", drv_.who(), what, m));
    return resid_[std::size_t(k)].data();
  }

  // An end module through ends_sequence.h; a block, with a recomputing one's forward re-run first.
  void run_backward(const Ctx& ctx, int m, Params params, Grads grads, GradPass pass) {
    FSDP_CHECK(!lora_ || pass == GradPass::all, drv_.who() + ": LoRA runs the whole backward");
    if (drv_.part(m) != ModulePart::block) {
      auto e = self().ends(m, pass);  // a frozen base (LoRA): input gradients only
      return ends_sequence::backward<Dev>(ctx, e, drv_, m, params, grads, pass, lora_ != nullptr);
    }
    const std::int64_t i = m - 1;
    const ModuleLayout& ml = layout().modules[std::size_t(m)];
    const auto p = pass == GradPass::weight ? BlockTensors<const E*>{}
                                            : Dev::block_params(ml, drv_.module_base(params, m));
    const auto g = pass == GradPass::input || lora_ ? BlockTensors<G*>{} : block_tensors(ml, drv_.module_base(grads, m));
    const E* x_in = resid_[std::size_t(i)].data();
    Kept* kept = self().weight_inputs(i, pass);
    Acts& a = self().backward_acts(i, pass);
    if (drv_.recomputes(i) && pass != GradPass::weight) {
      Dev::block_forward(ctx, p, x_in, recompute_out_.data(), a);
      if (pass == GradPass::input) self().keep_recomputed(i);
    }
    Dev::block_backward(ctx, p, g, x_in, a, dres_.data(), scratch_, pass, kept);
  }
};

}  // namespace fsdpx
