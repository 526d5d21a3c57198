// executor/model/ends_sequence.h — the model's ends around the blocks, forward and backward (whole, or
// zero bubble's input / weight pass), written once over a device policy as block_sequence.h writes the
// block: the embedding (token + learned positions; vocabulary-parallel under tp or cp, summed over tp
// by g), the final norm, the LM head GEMM and the cross-entropy loss (vocabulary-parallel: each tp
// rank's statistics of its slice all-gathered, Megatron-LM's VocabParallelCrossEntropy). The policies
// are the CPU's (model/model_policy.h) and the CUDA backend's (cuda_backend/cuda_model_policy.h); each
// extends its block policy with the ends' kernels and names an `Ends` (EndsBuffers: the model's buffers
// and its batch). Leaves out the blocks (block_sequence.h) and the module order (module_driver.h).
//
// The ends' policy functions besides the block policy's (whose `timed` scope pauses around a collective:
// pause, resume): embedding_forward/backward (the fused lookup and its gradient), vocab_embedding_forward/
// backward, add_positions, positions_backward (learned positions by global index), loss_forward,
// loss_backward (the fused softmax cross-entropy), vocab_ce_stats, gather_ce_stats, vocab_ce_loss,
// vocab_loss_backward.
#pragma once

#include <cstdint>
#include <span>

#include "core/errors.h"
#include "executor/model/block_sequence.h"
#include "executor/model/module_driver.h"

namespace fsdpx {

// The ends' buffers inside a model (E: activations, S: statistics and the loss, Keep: the policy's slot
// for a split backward's final-norm gradient, Batch: what the backend's kernels read of the micro-batch).
template <class E, class S, class Scratch, class Keep, class Batch>
struct EndsBuffers {
  E* x0 = nullptr;              // [N_local, C] the embedding's output (the first block's input)
  E* emb = nullptr;             // [N, C] under sequence parallelism: the embedding's partial output, gathered grad
  const E* x_last = nullptr;    // [N_local, C] the last block's output (the final norm's input)
  E* lnf = nullptr;             // [N, C] the final norm's output (the rank's rows at local_row under SP)
  S *lnf_mean = nullptr, *lnf_rstd = nullptr;  // [N_local] each (mean: LayerNorm only)
  E* logits = nullptr;          // [N, V_local] logits, then (CPU) probabilities, then dlogits
  S* ce_stats = nullptr;        // [tp, N, 3] every tp rank's cross-entropy statistics (tp or cp > 1)
  E* dres = nullptr;            // [N_local, C] the residual stream's gradient
  E* dlnf = nullptr;            // [N, C] the final norm's output gradient
  E* embedding_dout = nullptr;  // [N_local, C] where a split backward keeps dres for the embedding; null: dres stays
  Keep norm_keep{};             // the final norm's slot for a split backward (the policy's norm_backward)
  Scratch* scratch = nullptr;   // the block scratch (the norms' backward)
  std::int64_t v_local = 0, v_first = 0;  // the rank's vocabulary slice
  std::int64_t batch_tokens = 0;          // B · whole sequence: the loss is the mean over them
  S dloss = S(1);
  Batch batch{};
};

namespace ends_sequence {

// x0 = wte[tokens] (+ wpe[positions]); under tp or cp the rank's vocabulary slice's lookup, summed over tp.
template <class Dev, class E>
void embedding_forward(const typename Dev::Ctx& ctx, typename Dev::Ends& e, const E* wte, const E* wpe) {
  auto op = Dev::timed(ctx, "embed");
  if (!ctx.par.any()) return Dev::embedding_forward(ctx, e, wte, wpe);
  E* partial = ctx.par.sp() ? e.emb : e.x0;
  Dev::vocab_embedding_forward(ctx, e, partial, wte);
  op.pause();
  block_sequence::region(ctx).exit(partial, e.x0);
  op.resume();
  if (wpe) Dev::add_positions(ctx, e, wpe);
}

// The embedding has no input gradient: its input pass keeps the output's gradient (where the policy
// says) for the weight pass, which writes dwte, dwpe +=.
template <class Dev, class G>
void embedding_backward(const typename Dev::Ctx& ctx, typename Dev::Ends& e, G* dwte, G* dwpe, GradPass pass) {
  const std::int64_t nc = ctx.dims.n_local * ctx.dims.c;
  if (pass == GradPass::input) {
    if (e.embedding_dout) Dev::copy(ctx, e.embedding_dout, e.dres, nc);
    return;
  }
  const auto* dout = pass == GradPass::weight && e.embedding_dout ? e.embedding_dout : e.dres;
  if (!ctx.par.any()) {
    const auto t = Dev::timed(ctx, "embed_dw");
    return Dev::embedding_backward(ctx, e, dwte, dwpe, dout);
  }
  const auto* dfull = block_sequence::region(ctx).exit_backward(dout, e.emb);
  const auto t = Dev::timed(ctx, "embed_dw");
  Dev::vocab_embedding_backward(ctx, e, dwte, dfull);
  if (dwpe) Dev::positions_backward(ctx, e, dwpe, dout);
}

template <class Dev, class E>
void final_norm_forward(const typename Dev::Ctx& ctx, typename Dev::Ends& e, const E* w, const E* b) {
  const auto t = Dev::timed(ctx, "final_norm");
  Dev::norm_forward(ctx, e.lnf + block_sequence::region(ctx).local_row() * ctx.dims.c, e.lnf_mean, e.lnf_rstd,
                    e.x_last, w, b);
}

// dres = d x_last (written), dw, db += (null: frozen or the input pass).
template <class Dev, class E, class G>
void final_norm_backward(const typename Dev::Ctx& ctx, typename Dev::Ends& e, const E* w, const E* b, G* dw, G* db,
                         GradPass pass) {
  if (pass != GradPass::weight) Dev::zero(ctx, e.dres, ctx.dims.n_local * ctx.dims.c);  // the norm accumulates
  Dev::norm_backward(ctx, pass == GradPass::weight ? "final_norm_dw" : "final_norm_bwd", pass, e.norm_keep, e.dres,
                     dw, db, *e.scratch, e.dlnf, e.x_last, w, b, e.lnf_mean, e.lnf_rstd);
}

// logits [N, V_local] = lnf · Wᵀ (f first: the tokens gathered under SP), then the mean cross-entropy.
template <class Dev, class E>
void head_forward(const typename Dev::Ctx& ctx, typename Dev::Ends& e, const E* w) {
  const std::int64_t n = ctx.dims.n;
  block_sequence::region(ctx).enter(e.lnf);
  { const auto t = Dev::timed(ctx, "lm_head");
    Dev::linear_forward(ctx, e.logits, e.lnf, w, static_cast<const E*>(nullptr), ctx.dims.c, e.v_local); }
  auto op = Dev::timed(ctx, "loss");
  if (!ctx.par.any()) return Dev::loss_forward(ctx, e);
  auto* mine = e.ce_stats + std::int64_t(ctx.par.tp_rank) * n * 3;
  Dev::vocab_ce_stats(ctx, e, mine);
  op.pause();
  if (ctx.par.tp > 1) Dev::gather_ce_stats(ctx, mine, e.ce_stats, n * 3);
  op.resume();
  Dev::vocab_ce_loss(ctx, e);  // with cp > 1 the rank's share of the micro-batch's mean
}

// logits -> dlogits in place, dlnf = dlogits · W (f's backward: summed over tp), dW += dlogitsᵀ lnf. The
// dlogits and lnf stay in the model until its next forward, so the weight pass reads them there.
template <class Dev, class E, class G>
void head_backward(const typename Dev::Ctx& ctx, typename Dev::Ends& e, const E* w, G* dw, GradPass pass) {
  const BlockDims& d = ctx.dims;
  if (pass != GradPass::weight) {
    { const auto t = Dev::timed(ctx, "loss_bwd");
      if (ctx.par.any()) Dev::vocab_loss_backward(ctx, e, e.dloss / decltype(e.dloss)(e.batch_tokens));
      else Dev::loss_backward(ctx, e); }
    Dev::clear_dx(ctx, e.dlnf, d.n * d.c);
    { const auto t = Dev::timed(ctx, "lm_head_dx");
      Dev::linear_dx(ctx, e.dlnf, e.logits, w, d.c, e.v_local); }
    block_sequence::region(ctx).enter_backward(e.dlnf);
  }
  if (pass == GradPass::input || !dw) return;
  const auto t = Dev::timed(ctx, "lm_head_dw");
  Dev::linear_dw(ctx, *e.scratch, dw, static_cast<G*>(nullptr), e.logits, e.lnf, d.c, e.v_local);
}

// The forward of end module m (the embedding, the final norm or the head) from the modules' parameters.
template <class Dev, class P, class G>
void forward(const typename Dev::Ctx& ctx, typename Dev::Ends& e, const ModuleDriver<P, G>& drv, int m,
             std::span<const P* const> params) {
  switch (drv.part(m)) {
    case ModulePart::embedding:
      return embedding_forward<Dev>(ctx, e, drv.tensor(params, m, "tok.weight"), drv.tensor(params, m, "pos.weight"));
    case ModulePart::final_norm:
      return final_norm_forward<Dev>(ctx, e, drv.tensor(params, m, "final_norm.weight"),
                                     drv.tensor(params, m, "final_norm.bias"));
    case ModulePart::head:  // the tied head reads the embedding's token table
      return ctx.spec->tied_embeddings ? head_forward<Dev>(ctx, e, drv.tensor(params, 0, "tok.weight"))
                                       : head_forward<Dev>(ctx, e, drv.tensor(params, m, "head.weight"));
    case ModulePart::block: break;
  }
  FSDP_CHECK(false, "ends_sequence::forward: a block is not an end");
}

// The backward (pass) of end module m; params are read by the input pass, grads written by the weight
// pass (GradPass::all: both). A frozen base (LoRA) computes input gradients only.
template <class Dev, class P, class G>
void backward(const typename Dev::Ctx& ctx, typename Dev::Ends& e, const ModuleDriver<P, G>& drv, int m,
              std::span<const P* const> params, std::span<G* const> grads, GradPass pass, bool frozen) {
  const bool input = pass != GradPass::weight, weight = pass != GradPass::input && !frozen;
  const auto param = [&](int k, const char* name) { return input ? drv.tensor(params, k, name) : nullptr; };
  const auto grad = [&](int k, const char* name) { return weight ? drv.tensor(grads, k, name) : nullptr; };
  switch (drv.part(m)) {
    case ModulePart::embedding:
      if (!frozen) embedding_backward<Dev>(ctx, e, grad(m, "tok.weight"), grad(m, "pos.weight"), pass);
      return;
    case ModulePart::final_norm:
      return final_norm_backward<Dev>(ctx, e, param(m, "final_norm.weight"), param(m, "final_norm.bias"),
                                      grad(m, "final_norm.weight"), grad(m, "final_norm.bias"), pass);
    case ModulePart::head: {
      const int k = ctx.spec->tied_embeddings ? 0 : m;
      const char* name = ctx.spec->tied_embeddings ? "tok.weight" : "head.weight";
      return head_backward<Dev>(ctx, e, param(k, name), grad(k, name), pass);
    }
    case ModulePart::block: break;
  }
  FSDP_CHECK(false, "ends_sequence::backward: a block is not an end");
}

}  // namespace ends_sequence
}  // namespace fsdpx
