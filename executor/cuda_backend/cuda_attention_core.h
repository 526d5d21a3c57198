// executor/cuda_backend/cuda_attention_core.h — a device block's attention core (internal to
// cuda_block.cpp): the flash kernel on the rank's whole sequences, or under context parallelism the
// all-gather variant step for step executor/model/context_parallel.cpp (K and V of every cp rank
// gathered and put in sequence order, re-gathered in backward, their gradients reduce-scattered back to
// the ranks that own the tokens) around executor/cuda/context_attention.h's kernels. Leaves out the ring
// (P2P) variant and overlapping the collectives with the kernels.
#pragma once

#include <cstdint>

#include "executor/cuda/attention.h"
#include "executor/cuda/attention_tc.h"
#include "executor/cuda/context_attention.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda_backend/cuda_block.h"
#include "executor/cuda_backend/cuda_op_timer.h"

namespace fsdpx::cuda::block_detail {

// Context parallelism (executor/model/context_parallel.h, as the CPU block): the K and V columns of the
// rank's tokens, all-gathered over cp and put in sequence order in sc.kv_full.
template <class T>
void gather_context_kv(const CudaBlockContext<T>& ctx, const T* qkv, CudaBlockScratch<T>& sc) {
  const BlockDims& d = ctx.dims;
  const std::int64_t kvw = d.kv_width(), q = d.attn.nh * d.attn.hd;
  copy_columns(sc.kv_local.get(), kvw, qkv + q, d.qkv, d.n, kvw, false, ctx.stream);
  ctx.comm->all_gather(ModelAxis::cp, sc.kv_local.get(), sc.kv_gathered.get(), d.n * kvw);
  scatter_rows(sc.kv_full.get(), sc.kv_gathered.get(), ctx.cp_rows, ctx.par.cp * d.n, kvw, ctx.stream);
}

template <class T>
ContextAttnDims context_dims(const CudaBlockContext<T>& ctx) {
  const BlockDims& d = ctx.dims;
  return ContextAttnDims{d.b, d.t, d.t_kv, d.attn.nh, d.attn.nkv, d.attn.hd, ctx.q_pos};
}

// The attention core: flash attention (on tensor cores when the plan says `tensor_core`), or with cp > 1
// against the whole sequences' K and V.
template <class T>
void attention_forward(const CudaBlockContext<T>& ctx, CudaBlockActs<T>& a) {
  const BlockDims& d = ctx.dims;
  if (d.context_parallel()) gather_context_kv(ctx, a.qkv.get(), *ctx.scratch);
  const CudaScopedOp t(ctx.profiler, "attn_core", ctx.module, ctx.stream);
  if (!d.context_parallel() && ctx.tensor_core_attention)
    return tc_attention_forward(a.atty.get(), a.att.get(), a.qkv.get(), d.attn, ctx.stream);
  if (!d.context_parallel()) return flash_attention_forward(a.atty.get(), a.att.get(), a.qkv.get(), d.attn, ctx.stream);
  context_attention_forward(a.atty.get(), a.att.get(), a.qkv.get(), ctx.scratch->kv_full.get(), context_dims(ctx),
                            ctx.stream);
}

// dqkv [N, QKV] = the attention core's input gradient (zeroed first: the kernels accumulate); with cp > 1
// K and V are gathered again and their gradients reduce-scattered back to the ranks that own the tokens.
template <class T>
void attention_backward(const CudaBlockContext<T>& ctx, const CudaBlockActs<T>& a, CudaBlockScratch<T>& sc, T* dqkv) {
  const BlockDims& d = ctx.dims;
  if (d.context_parallel()) gather_context_kv(ctx, a.qkv.get(), sc);
  {
    const CudaScopedOp t(ctx.profiler, "attn_core_bwd", ctx.module, ctx.stream);
    CUDA_CHECK(cudaMemsetAsync(dqkv, 0, std::size_t(d.n * d.qkv) * sizeof(T), ctx.stream));
    if (!d.context_parallel() && ctx.tensor_core_attention)
      return tc_attention_backward(dqkv, sc.attn.get(), sc.datty.get(), a.atty.get(), a.qkv.get(), a.att.get(), d.attn,
                                   ctx.stream);
    if (!d.context_parallel())
      return flash_attention_backward(dqkv, sc.attn.get(), sc.datty.get(), a.atty.get(), a.qkv.get(), a.att.get(),
                                      d.attn, ctx.stream);
    zero_async(sc.dkv_full, ctx.stream);
    context_attention_backward(dqkv, sc.dkv_full.get(), sc.attn.get(), sc.datty.get(), a.atty.get(), a.qkv.get(),
                               sc.kv_full.get(), a.att.get(), context_dims(ctx), ctx.stream);
  }
  const std::int64_t kvw = d.kv_width(), q = d.attn.nh * d.attn.hd;
  gather_rows(sc.kv_gathered.get(), sc.dkv_full.get(), ctx.cp_rows, ctx.par.cp * d.n, kvw, ctx.stream);
  ctx.comm->reduce_scatter(ModelAxis::cp, sc.kv_gathered.get(), sc.kv_local.get(), d.n * kvw);
  copy_columns(dqkv + q, d.qkv, sc.kv_local.get(), kvw, d.n, kvw, true, ctx.stream);
}

}  // namespace fsdpx::cuda::block_detail
