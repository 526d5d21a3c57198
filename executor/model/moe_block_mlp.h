// executor/model/moe_block_mlp.h — a CPU block's MLP half when the block is a mixture-of-experts block:
// the bridge from the block's context and tensors (block.h) to moe_mlp.h. Leaves out tensor, context and
// pipeline splits of the MoE MLP (tp = cp = 1, the whole backward; FSDP_CHECKs). Under expert parallelism
// (ctx.par.ep > 1) the block's expert tensors are the rank's local experts and the token exchange runs on
// ctx.comm's ep group (moe_exchange.h).
#pragma once

#include "executor/model/block.h"
#include "executor/model/moe_sequence.h"  // is_moe_mlp

namespace fsdpx {

// out [N, C] = the MoE MLP of a.ln2 (fills a.moe).
template <class Real>
void moe_mlp_forward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, BlockActs<Real>& a,
                     Real* out);

// s.dln [N, C] += the gradient w.r.t. a.ln2 from dout [N, C] (the MLP output's gradient) and the
// load-balancing loss (ctx.moe_aux); the experts' and router's gradients accumulate into g.
template <class Real>
void moe_mlp_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                      const BlockActs<Real>& a, const Real* dout, BlockScratch<Real>& s);

}  // namespace fsdpx
