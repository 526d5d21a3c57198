// executor/model/model_policy.h — the CPU device policy of the model's ends (ends_sequence.h): the block
// policy (block_policy.h) plus the host kernels of executor/cpu/ and vocab_parallel.h for the embedding,
// the learned positions and the cross-entropy loss; the loss is a host scalar (plus an MoE model's
// load-balancing loss, moe_aux_loss.h), the logits turn into probabilities in place. A split backward
// keeps the embedding's output gradient in a buffer of its own (CpuEndsBatch has none of it: the driver
// sets EndsBuffers::embedding_dout). For the model driver (model_driver.h) it also names the host's
// buffers (block.h's CpuBlockBuffers), the block's entry points (block.h) and the replicated-gradient ops; there is no stream.
// Internal to transformer.*; leaves out every device concern.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "executor/cpu/cross_entropy.h"
#include "executor/cpu/embedding.h"
#include "executor/model/block_policy.h"
#include "executor/model/ends_sequence.h"
#include "executor/model/model_options.h"
#include "executor/model/moe_aux_loss.h"
#include "executor/model/replicated_grads.h"
#include "executor/model/vocab_parallel.h"

namespace fsdpx {

// The host's ops for the sum over tp of the replicated tensors' gradients (replicated_grads.h).
template <class Real>
struct HostGradOps {
  using Elem = Real;
  using Buf = std::vector<Real>;
  using Ctx = ModelComm*;
  static void resize(Buf& b, std::int64_t n) { b.assign(std::size_t(n), Real(0)); }
  static std::int64_t bytes(const Buf& b) { return std::int64_t(b.size() * sizeof(Real)); }
  static Real* data(Buf& b) { return b.data(); }
  static void copy(Ctx, Real* dst, const Real* src, std::int64_t n) { std::copy(src, src + n, dst); }
  static void zero(Ctx, Real* p, std::int64_t n) { std::fill(p, p + n, Real(0)); }
  static void add(Ctx, Real* dst, const Real* src, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
  }
  static void sum_over_tp(Ctx comm, Real* p, std::int64_t n) { comm->all_reduce(ModelAxis::tp, p, n); }
};

struct HostStream {};  // the host runs each call to its end: no stream

// The CPU model's options (model_options.h) over its host collectives.
using ModelOptions = ModelOptionsT<ModelComm>;

// What the CPU's end kernels read of a micro-batch and where the loss goes.
template <class Real>
struct CpuEndsBatch {
  const std::int32_t* tokens = nullptr;            // [N] the rank's tokens
  const std::int32_t* targets = nullptr;           // [N]
  const std::int64_t* shard_positions = nullptr;   // [N_local] the global positions of the rank's token shard
  const MoeAuxLoss<Real>* moe_aux = nullptr;       // added to the loss (without tp or cp)
  Real* loss = nullptr;                            // the micro-batch's loss (the rank's share under cp)
};

template <class Real>
struct CpuModelPolicy : CpuBlockPolicy<Real> {
  using Ctx = typename CpuBlockPolicy<Real>::Ctx;
  using Ends = EndsBuffers<Real, Real, BlockScratch<Real>, std::vector<Real>*, CpuEndsBatch<Real>>;
  using Stream = HostStream;
  using Options = ModelOptions;
  using Buffers = CpuBlockBuffers<Real>;  // host vectors (block.h)
  using GradOps = HostGradOps<Real>;

  // The block module (block.h) and the replicated-gradient ops' context.
  static BlockTensors<const Real*> block_params(const ModuleLayout& m, const Real* base) {
    return block_tensors(m, base);
  }
  static void block_forward(const Ctx& ctx, const BlockTensors<const Real*>& p, const Real* x_in, Real* x_out,
                            BlockActs<Real>& a) {
    fsdpx::block_forward(ctx, p, x_in, x_out, a);
  }
  static void block_backward(const Ctx& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                             const Real* x_in, const BlockActs<Real>& a, Real* dres, BlockScratch<Real>& s,
                             GradPass pass, BlockWeightInputs<Real>* kept) {
    fsdpx::block_backward(ctx, p, g, x_in, a, dres, s, pass, kept);
  }
  static ModelComm* grad_ops(const Ctx& ctx) { return ctx.comm; }

  static void embedding_forward(const Ctx& ctx, Ends& e, const Real* wte, const Real* wpe) {
    const BlockDims& d = ctx.dims;
    cpu::embedding_forward(e.x0, e.batch.tokens, wte, wpe, d.b, d.t, d.c, ctx.spec->vocab);
  }
  static void embedding_backward(const Ctx& ctx, Ends& e, Real* dwte, Real* dwpe, const Real* dout) {
    const BlockDims& d = ctx.dims;
    cpu::embedding_backward(dwte, dwpe, dout, e.batch.tokens, d.b, d.t, d.c);
  }
  static void vocab_embedding_forward(const Ctx& ctx, Ends& e, Real* out, const Real* wte) {
    fsdpx::vocab_embedding_forward(out, e.batch.tokens, wte, e.v_first, e.v_local, ctx.dims.n, ctx.dims.c);
  }
  static void vocab_embedding_backward(const Ctx& ctx, Ends& e, Real* dwte, const Real* dout) {
    fsdpx::vocab_embedding_backward(dwte, dout, e.batch.tokens, e.v_first, e.v_local, ctx.dims.n, ctx.dims.c);
  }
  static void add_positions(const Ctx& ctx, Ends& e, const Real* wpe) {
    fsdpx::add_positions(e.x0, wpe, e.batch.shard_positions, ctx.dims.n_local, ctx.dims.c);
  }
  static void positions_backward(const Ctx& ctx, Ends& e, Real* dwpe, const Real* dout) {
    fsdpx::positions_backward(dwpe, dout, e.batch.shard_positions, ctx.dims.n_local, ctx.dims.c);
  }

  static void loss_forward(const Ctx& ctx, Ends& e) {
    *e.batch.loss = cpu::softmax_cross_entropy_forward(e.logits, e.batch.targets, ctx.dims.n, ctx.spec->vocab) +
                    e.batch.moe_aux->loss();
  }
  static void loss_backward(const Ctx& ctx, Ends& e) {
    cpu::softmax_cross_entropy_backward(e.logits, e.batch.targets, ctx.dims.n, ctx.spec->vocab, e.dloss);
  }
  static void vocab_ce_stats(const Ctx& ctx, Ends& e, Real* mine) {
    fsdpx::vocab_ce_stats(mine, e.logits, e.batch.targets, ctx.dims.n, e.v_local, e.v_first);
  }
  static void gather_ce_stats(const Ctx& ctx, const Real* mine, Real* all, std::int64_t count) {
    ctx.comm->all_gather(ModelAxis::tp, mine, all, count);
  }
  // Σ over the rank's tokens of the whole vocabulary's cross-entropy / (B·T); logits -> probabilities.
  static void vocab_ce_loss(const Ctx& ctx, Ends& e) {
    *e.batch.loss = vocab_ce_probs(e.logits, e.ce_stats, ctx.par.tp, ctx.dims.n, e.v_local) / Real(e.batch_tokens);
  }
  static void vocab_loss_backward(const Ctx& ctx, Ends& e, Real scale) {
    fsdpx::vocab_ce_backward(e.logits, e.batch.targets, ctx.dims.n, e.v_local, e.v_first, scale);
  }
};

}  // namespace fsdpx
