// executor/model/context_parallel.h — context parallelism inside a block: every cp rank holds two
// chunks of each sequence (model_parallel.h context_positions); its attention needs the K and V of the
// whole sequences, which it all-gathers over the cp group and puts in position order, and the
// gradients of those K and V, partial on each rank, are reduce-scattered back to the ranks that own
// the tokens (the all-gather variant of context parallelism: Megatron-Core's cp_comm_type
// "all_gather", Transformer Engine AttnFuncWithCPAndKVAllGather, which also re-gathers K and V in
// backward instead of keeping them). Leaves out the ring (P2P) variant.
#pragma once

#include "executor/cpu/attention.h"
#include "executor/model/block.h"

namespace fsdpx {

// The attention kernel's shape for this block: the rank's query rows at their positions.
template <class Real>
cpu::ContextAttnShape context_shape(const BlockContext<Real>& ctx);

// qkv [N, QKV] (after RoPE) -> s.kv_full [B, T_kv, KVW]: the K and V columns of every cp rank's
// tokens at their positions (one all-gather over cp).
template <class Real>
void gather_context_kv(const BlockContext<Real>& ctx, const Real* qkv, BlockScratch<Real>& s);

// s.dkv_full [B, T_kv, KVW] (this rank's partial K, V gradients of whole sequences) -> summed over the cp
// ranks and added to the K and V columns of dqkv [N, QKV] for this rank's tokens (one reduce-scatter).
template <class Real>
void scatter_context_kv_grads(const BlockContext<Real>& ctx, BlockScratch<Real>& s, Real* dqkv);

}  // namespace fsdpx
