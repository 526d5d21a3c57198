// executor/model/moe_block_mlp.cpp — the MoE MLP inside a CPU block (see moe_block_mlp.h).
#include "executor/model/moe_block_mlp.h"

#include "core/errors.h"

namespace fsdpx {
namespace {

template <class P>
MoeTensors<P> moe_tensors(const BlockTensors<P>& t) {
  FSDP_CHECK(t.router_w && t.experts_up_w && t.experts_down_w, "moe_block_mlp: the block has no MoE tensors");
  return MoeTensors<P>{t.router_w, t.experts_up_w, t.experts_down_w, t.router_bias, t.shared_up_w, t.shared_down_w};
}

template <class Real>
MoeDims dims_of(const BlockContext<Real>& ctx) {
  FSDP_CHECK(ctx.par.tp == 1 && ctx.par.cp == 1, "moe_block_mlp: MoE blocks run without tensor or context parallelism");
  FSDP_CHECK(ctx.par.ep == 1 || ctx.comm != nullptr, "moe_block_mlp: expert parallelism needs the model's ep group");
  return make_moe_dims(*ctx.spec, ctx.dims.n, ctx.par.ep, ctx.par.ep_rank, ctx.dims.t);
}

}  // namespace

template <class Real>
void moe_mlp_forward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, BlockActs<Real>& a,
                     Real* out) {
  moe_forward(dims_of(ctx), moe_tensors(p), a.ln2.data(), out, a.moe, ctx.profiler, ctx.module, ctx.comm);
}

template <class Real>
void moe_mlp_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                      const BlockActs<Real>& a, const Real* dout, BlockScratch<Real>& s) {
  moe_backward(dims_of(ctx), moe_tensors(p), moe_tensors(g), a.ln2.data(), dout, a.moe, ctx.moe_aux,
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
