// executor/model/block.cpp — the CPU block: the arch's norm (shared with the final norm),
// the CPU policy's attention core and qkv steps (block_policy.h), and block_forward / block_backward as
// the shared kernel-call sequence (block_sequence.h) over that policy. Each kernel group is timed under
// the simulator's kernel name. The residual adds' backward is the identity, applied by letting `dres`
// flow through in place while each branch's input gradient is accumulated into it (llm.c style).
#include "executor/model/block.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/cpu/norm.h"
#include "executor/model/block_policy.h"
#include "executor/model/block_sequence.h"
#include "executor/model/context_parallel.h"
#include "executor/model/mla_sequence.h"  // mla_tensors
#include "executor/model/qkv_groups.h"

namespace fsdpx {

template <class Real>
void norm_forward(Arch arch, Real* out, Real* mean, Real* rstd, const Real* inp, const Real* w, const Real* b,
                  std::int64_t n, std::int64_t c, double eps) {
  if (arch == Arch::gpt)
    cpu::layernorm_forward(out, mean, rstd, inp, w, b, n, c, eps);
  else
    cpu::rmsnorm_forward(out, rstd, inp, w, n, c, eps);
}

template <class Real>
void norm_backward(Arch arch, Real* dinp, Real* dw, Real* db, const Real* dout, const Real* inp, const Real* w,
                   const Real* mean, const Real* rstd, std::int64_t n, std::int64_t c) {
  if (arch == Arch::gpt)
    cpu::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, n, c);
  else
    cpu::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, n, c);
}

template <class Real>
void CpuBlockPolicy<Real>::qkv_forward(const Ctx& ctx, const BlockTensors<const Real*>& p, Acts& a) {
  const BlockDims& d = ctx.dims;
  Real* out = d.grouped_qkv() ? ctx.scratch->qkv_part.data() : a.qkv.data();
  {
    ScopedOp op(ctx.profiler, "qkv", ctx.module);
    linear_forward(ctx, out, a.ln1.data(), p.qkv_w, p.qkv_b, d.c, d.qkv_rows);
  }
  if (d.grouped_qkv())
    gather_query_group(*ctx.comm, *ctx.group_columns, out, ctx.scratch->qkv_all.data(), a.qkv.data(), d.n,
                       d.qkv_rows);
}

template <class Real>
void CpuBlockPolicy<Real>::mla_forward(const Ctx& ctx, const BlockTensors<const Real*>& p, Acts& a) {
  FSDP_CHECK(ctx.rope != nullptr && !ctx.fp8, "block: latent attention needs its RoPE table and runs without fp8");
  const BlockDims& d = ctx.dims;
  fsdpx::mla_forward(make_mla_dims(*ctx.spec, d.b, d.t), mla_tensors(p), *ctx.rope, a.ln1.data(), a.atty.data(),
                     a.qkv.data(), a.att.data(), a.mla, ctx.profiler, ctx.module);
}

template <class Real>
void CpuBlockPolicy<Real>::mla_backward(const Ctx& ctx, const BlockTensors<const Real*>& p,
                                        const BlockTensors<Real*>& g, const Acts& a, Scratch& s) {
  const BlockDims& d = ctx.dims;
  fsdpx::mla_backward(make_mla_dims(*ctx.spec, d.b, d.t), mla_tensors(p), mla_tensors(g), *ctx.rope, a.ln1.data(),
                      s.datty.data(), a.qkv.data(), a.att.data(), a.mla, s.dqkv.data(), s.dln.data(), s.mla,
                      ctx.profiler, ctx.module);
}

// The attention core: local, or with cp > 1 against the whole sequences' K and V (context_parallel.h).
template <class Real>
void CpuBlockPolicy<Real>::attention_forward(const Ctx& ctx, Acts& a) {
  const BlockDims& d = ctx.dims;
  if (!d.context_parallel()) {
    ScopedOp op(ctx.profiler, "attn_core", ctx.module);
    cpu::attention_forward(a.atty.data(), a.att.data(), a.qkv.data(), d.attn);
    return;
  }
  gather_context_kv(ctx, a.qkv.data(), *ctx.scratch);
  ScopedOp op(ctx.profiler, "attn_core", ctx.module);
  cpu::context_attention_forward(a.atty.data(), a.att.data(), a.qkv.data(), ctx.scratch->kv_full.data(),
                                 context_shape(ctx));
}

template <class Real>
void CpuBlockPolicy<Real>::attention_backward(const Ctx& ctx, const Acts& a, Scratch& s) {
  const BlockDims& d = ctx.dims;
  if (!d.context_parallel()) {
    ScopedOp op(ctx.profiler, "attn_core_bwd", ctx.module);
    cpu::attention_backward(s.dqkv.data(), s.datty.data(), a.qkv.data(), a.att.data(), d.attn);
    return;
  }
  gather_context_kv(ctx, a.qkv.data(), s);  // K and V again rather than kept from the forward
  {
    ScopedOp op(ctx.profiler, "attn_core_bwd", ctx.module);
    zero(ctx, s.dkv_full);
    cpu::context_attention_backward(s.dqkv.data(), s.dkv_full.data(), s.datty.data(), a.qkv.data(), s.kv_full.data(),
                                    a.att.data(), context_shape(ctx));
  }
  scatter_context_kv_grads(ctx, s, s.dqkv.data());
}

// With kv_heads < tp the gradient of the rank's qkv GEMM output comes through the query-group gather.
template <class Real>
const Real* CpuBlockPolicy<Real>::qkv_grad_out(const Ctx& ctx, Scratch& s) {
  const BlockDims& d = ctx.dims;
  if (!d.grouped_qkv()) return s.dqkv.data();
  gather_query_group_backward(*ctx.comm, *ctx.group_columns, s.dqkv.data(), s.qkv_all.data(), s.qkv_part.data(), d.n,
                              d.qkv_rows, ctx.par.tp);
  return s.qkv_part.data();
}

template <class Real>
void block_forward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const Real* x_in, Real* x_out,
                   BlockActs<Real>& a) {
  block_sequence::block_forward<CpuBlockPolicy<Real>>(ctx, p, x_in, x_out, a);
}

template <class Real>
void block_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                    const Real* x_in, const BlockActs<Real>& a, Real* dres, BlockScratch<Real>& s, GradPass pass,
                    BlockWeightInputs<Real>* kept) {
  FSDP_CHECK(!is_moe_mlp(ctx) || !ctx.fp8, "block_backward: an MoE block runs without fp8");
  block_sequence::block_backward<CpuBlockPolicy<Real>>(ctx, p, g, x_in, a, dres, s, pass, kept);
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template struct CpuBlockPolicy<Real>;                                                                           \
  template void norm_forward<Real>(Arch, Real*, Real*, Real*, const Real*, const Real*, const Real*, std::int64_t, \
                                   std::int64_t, double);                                                        \
  template void norm_backward<Real>(Arch, Real*, Real*, Real*, const Real*, const Real*, const Real*, const Real*, \
                                    const Real*, std::int64_t, std::int64_t);                                    \
  template void block_forward<Real>(const BlockContext<Real>&, const BlockTensors<const Real*>&, const Real*,     \
                                    Real*, BlockActs<Real>&);                                                    \
  template void block_backward<Real>(const BlockContext<Real>&, const BlockTensors<const Real*>&,                 \
                                     const BlockTensors<Real*>&, const Real*, const BlockActs<Real>&, Real*,      \
                                     BlockScratch<Real>&, GradPass, BlockWeightInputs<Real>*);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
