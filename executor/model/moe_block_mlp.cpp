// executor/model/moe_block_mlp.cpp — the MoE MLP inside a CPU block (see moe_block_mlp.h).
#include "executor/model/moe_block_mlp.h"

#include "executor/model/moe_sequence.h"  // moe_tensors, moe_block_dims

namespace fsdpx {

template <class Real>
void moe_mlp_forward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, BlockActs<Real>& a,
                     Real* out) {
  moe_forward(moe_block_dims(ctx), moe_tensors(p), a.ln2.data(), out, a.moe, ctx.profiler, ctx.module, ctx.comm);
}

template <class Real>
void moe_mlp_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                      const BlockActs<Real>& a, const Real* dout, BlockScratch<Real>& s) {
  moe_backward(moe_block_dims(ctx), moe_tensors(p), moe_tensors(g), a.ln2.data(), dout, a.moe, ctx.moe_aux,
               s.dln.data(), s.moe, ctx.profiler, ctx.module, ctx.comm);
}

#define FSDPX_INSTANTIATE(Real)                                                                                 \
  template void moe_mlp_forward<Real>(const BlockContext<Real>&, const BlockTensors<const Real*>&,              \
                                      BlockActs<Real>&, Real*);                                                 \
  template void moe_mlp_backward<Real>(const BlockContext<Real>&, const BlockTensors<const Real*>&,             \
                                       const BlockTensors<Real*>&, const BlockActs<Real>&, const Real*,         \
                                       BlockScratch<Real>&);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
