// executor/model/block.cpp — block forward/backward as a sequence of CPU kernels, each timed under the
// simulator's kernel name. The residual adds' backward is the identity, applied by letting `dres`
// flow through in place while each branch's input gradient is accumulated into it (llm.c style).
// Tensor parallelism wraps each half in a TpRegion (tp_region.h); with tp = 1 those do nothing and
// the row-parallel biases stay inside their GEMMs.
#include "executor/model/block.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/cpu/activation.h"
#include "executor/cpu/gemm.h"
#include "executor/cpu/norm.h"
#include "executor/model/block_projections.h"
#include "executor/model/context_parallel.h"
#include "executor/model/moe_block_mlp.h"
#include "executor/model/qkv_groups.h"
#include "executor/model/tp_region.h"

namespace fsdpx {
using namespace block_detail;  // region, add_bias, adapter_forward/backward, out_projection_backward

namespace {

template <class Real>
void zero(std::vector<Real>& v) {
  std::fill(v.begin(), v.end(), Real(0));
}

}  // namespace

template <class Real>
void BlockActs<Real>::allocate(const BlockDims& d) {
  const auto n = static_cast<std::size_t>(d.n), nl = static_cast<std::size_t>(d.n_local);
  const std::size_t mean_n = d.layernorm ? nl : 0;  // RMSNorm has no mean
  ln1.assign(n * d.c, 0), ln1_mean.assign(mean_n, 0), ln1_rstd.assign(nl, 0);
  qkv.assign(n * d.qkv, 0);
  const std::int64_t saved = d.context_parallel() ? d.b * d.attn.nh * d.t * d.t_kv : cpu::attention_saved_elems(d.attn);
  att.assign(static_cast<std::size_t>(saved), 0);
  atty.assign(n * d.q, 0);
  x_mid.assign(nl * d.c, 0);
  ln2.assign(n * d.c, 0), ln2_mean.assign(mean_n, 0), ln2_rstd.assign(nl, 0);
  fc.assign(n * d.fu, 0);
  fc_act.assign(n * d.f, 0);
}

template <class Real>
void BlockWeightInputs<Real>::allocate(const BlockDims& d) {
  const auto n = static_cast<std::size_t>(d.n);
  d_out.assign(n * d.c, 0), d_mid.assign(n * d.c, 0);
  dfc.assign(n * d.fu, 0), dqkv.assign(n * d.qkv, 0);
  dln2.assign(n * d.c, 0), dln1.assign(n * d.c, 0);
}

template <class Real>
void BlockScratch<Real>::allocate(const BlockDims& d, const ModelParallel& par) {
  const auto n = static_cast<std::size_t>(d.n);
  dln.assign(n * d.c, 0), datty.assign(n * d.q, 0), dqkv.assign(n * d.qkv, 0);
  dfc.assign(n * d.fu, 0), dfc_act.assign(n * d.f, 0);
  if (par.sp()) wide.assign(n * d.c, 0);
  if (d.grouped_qkv()) qkv_part.assign(n * d.qkv_rows, 0), qkv_all.assign(n * d.qkv_rows * par.tp, 0);
  if (!d.context_parallel()) return;
  const auto kvw = static_cast<std::size_t>(d.kv_width()), full = static_cast<std::size_t>(d.b * d.t_kv) * kvw;
  kv_local.assign(n * kvw, 0), kv_gathered.assign(n * kvw * static_cast<std::size_t>(par.cp), 0);
  kv_full.assign(full, 0), dkv_full.assign(full, 0);
}

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

namespace {

// qkv [N, QKV] = ln1 [N, C] · Wqkvᵀ (+ bias): with kv_heads < tp through the query-group gather.
template <class Real>
void qkv_forward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, BlockActs<Real>& a) {
  const BlockDims& d = ctx.dims;
  Real* out = d.grouped_qkv() ? ctx.scratch->qkv_part.data() : a.qkv.data();
  {
    ScopedOp op(ctx.profiler, "qkv", ctx.module);
    linear_forward(ctx.fp8, out, a.ln1.data(), p.qkv_w, p.qkv_b, d.n, d.c, d.qkv_rows);
  }
  if (d.grouped_qkv())
    gather_query_group(*ctx.comm, *ctx.group_columns, out, ctx.scratch->qkv_all.data(), a.qkv.data(), d.n,
                       d.qkv_rows);
}

// A row-parallel GEMM's output leaves the region: out [N_local, C] = Σ_tp partial + bias, then the
// residual add res_out = res_in + out (res_out may be out).
template <class Real>
void exit_and_add(const BlockContext<Real>& ctx, Real* partial, Real* out, const Real* bias, const Real* res_in,
                  Real* res_out, const char* name) {
  const BlockDims& d = ctx.dims;
  region(ctx).exit(partial, out);
  ScopedOp op(ctx.profiler, name, ctx.module);
  if (ctx.par.tp > 1) add_bias(out, bias, d.n_local, d.c);
  cpu::residual_forward(res_out, res_in, out, d.n_local * d.c);
}

// The attention core: local, or with cp > 1 against the whole sequences' K and V (context_parallel.h).
template <class Real>
void attention_forward(const BlockContext<Real>& ctx, BlockActs<Real>& a) {
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
void attention_backward(const BlockContext<Real>& ctx, const BlockActs<Real>& a, BlockScratch<Real>& s) {
  const BlockDims& d = ctx.dims;
  if (!d.context_parallel()) {
    ScopedOp op(ctx.profiler, "attn_core_bwd", ctx.module);
    cpu::attention_backward(s.dqkv.data(), s.datty.data(), a.qkv.data(), a.att.data(), d.attn);
    return;
  }
  gather_context_kv(ctx, a.qkv.data(), s);  // K and V again rather than kept from the forward
  {
    ScopedOp op(ctx.profiler, "attn_core_bwd", ctx.module);
    zero(s.dkv_full);
    cpu::context_attention_backward(s.dqkv.data(), s.dkv_full.data(), s.datty.data(), a.qkv.data(), s.kv_full.data(),
                                    a.att.data(), context_shape(ctx));
  }
  scatter_context_kv_grads(ctx, s, s.dqkv.data());
}

}  // namespace

template <class Real>
void block_forward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const Real* x_in, Real* x_out,
                   BlockActs<Real>& a) {
  const BlockDims& d = ctx.dims;
  const Arch arch = ctx.spec->arch;
  OpProfiler* prof = ctx.profiler;
  const int m = ctx.module;
  const TpRegion tp = region(ctx);
  const bool split = ctx.par.tp > 1;
  Real* wide = ctx.par.sp() ? ctx.scratch->wide.data() : x_out;  // the row-parallel partial output [N, C]
  { ScopedOp op(prof, "attn_norm", m);
    norm_forward(arch, a.ln1.data() + tp.local_row() * d.c, a.ln1_mean.data(), a.ln1_rstd.data(), x_in,
                 p.attn_norm_w, p.attn_norm_b, d.n_local, d.c, ctx.spec->norm_eps); }
  tp.enter(a.ln1.data());
  qkv_forward(ctx, p, a);
  for (LoraTarget t : {LoraTarget::q, LoraTarget::k, LoraTarget::v})
    adapter_forward(ctx, t, a.ln1.data(), a.qkv.data(), d.qkv, a);
  if (ctx.rope) {
    ScopedOp op(prof, "rope", m);
    cpu::rope_forward(a.qkv.data(), *ctx.rope, d.b, d.t, d.attn.nh, d.attn.nkv, d.attn.hd);
  }
  attention_forward(ctx, a);
  { ScopedOp op(prof, "attn_out", m);
    linear_forward(ctx.fp8, wide, a.atty.data(), p.attn_out_w, split ? nullptr : p.attn_out_b, d.n, d.q, d.c); }
  adapter_forward(ctx, LoraTarget::o, a.atty.data(), wide, d.c, a);
  exit_and_add(ctx, wide, x_out, p.attn_out_b, x_in, a.x_mid.data(), "attn_residual");
  { ScopedOp op(prof, "mlp_norm", m);
    norm_forward(arch, a.ln2.data() + tp.local_row() * d.c, a.ln2_mean.data(), a.ln2_rstd.data(), a.x_mid.data(),
                 p.mlp_norm_w, p.mlp_norm_b, d.n_local, d.c, ctx.spec->norm_eps); }
  tp.enter(a.ln2.data());
  if (is_moe_mlp(ctx)) {
    moe_mlp_forward(ctx, p, a, wide);
  } else {
    { ScopedOp op(prof, "mlp_up", m);
      linear_forward(ctx.fp8, a.fc.data(), a.ln2.data(), p.mlp_up_w, p.mlp_up_b, d.n, d.c, d.fu); }
    for (LoraTarget t : {LoraTarget::gate, LoraTarget::up}) adapter_forward(ctx, t, a.ln2.data(), a.fc.data(), d.fu, a);
    { ScopedOp op(prof, "mlp_act", m);
      cpu::mlp_act_forward(ctx.spec->ffn_kind, a.fc_act.data(), a.fc.data(), d.n, d.f); }
    { ScopedOp op(prof, "mlp_down", m);
      linear_forward(ctx.fp8, wide, a.fc_act.data(), p.mlp_down_w, split ? nullptr : p.mlp_down_b, d.n, d.f, d.c); }
    adapter_forward(ctx, LoraTarget::down, a.fc_act.data(), wide, d.c, a);
  }
  exit_and_add(ctx, wide, x_out, p.mlp_down_b, a.x_mid.data(), x_out, "mlp_residual");
}

// The MLP half: dres is d x_out on entry and d x_mid on exit. Under a split backward the input pass
// keeps the output gradients in `kept` and the weight pass reads them there (see GradPass).
template <class Real>
void mlp_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                  const BlockActs<Real>& a, Real* dres, BlockScratch<Real>& s, GradPass pass,
                  BlockWeightInputs<Real>* kept) {
  const BlockDims& d = ctx.dims;
  OpProfiler* prof = ctx.profiler;
  const int m = ctx.module;
  const TpRegion tp = region(ctx);
  const bool input = pass != GradPass::weight, weight = pass != GradPass::input && !ctx.lora.layout;
  const bool from_kept = pass == GradPass::weight;
  const bool moe = is_moe_mlp(ctx);  // the whole backward only (moe_block_mlp.h)
  if (input) zero(s.dfc_act), zero(s.dfc), zero(s.dln);
  if (moe) moe_mlp_backward(ctx, p, g, a, dres, s);
  if (!moe) out_projection_backward(ctx, OutProjection<Real>{"mlp_down_dx", "mlp_down_dw", LoraTarget::down, p.mlp_down_w,
                                                   g.mlp_down_w, g.mlp_down_b, a.fc_act.data(), s.dfc_act.data(), d.f,
                                                   kept ? &kept->d_out : nullptr},
                          a, dres, s, pass);
  if (input && !moe) {
    { ScopedOp op(prof, "mlp_act_bwd", m);
      cpu::mlp_act_backward(ctx.spec->ffn_kind, s.dfc.data(), s.dfc_act.data(), a.fc.data(), d.n, d.f); }
    ScopedOp op(prof, "mlp_up_dx", m);
    linear_backward_dx(ctx.fp8, s.dln.data(), s.dfc.data(), p.mlp_up_w, d.n, d.c, d.fu);
    for (LoraTarget t : {LoraTarget::gate, LoraTarget::up})
      adapter_backward(ctx, t, a.ln2.data(), s.dfc.data(), d.fu, s.dln.data(), a);
  }
  if (weight && !moe) {
    ScopedOp op(prof, "mlp_up_dw", m);
    linear_backward_dw(ctx.fp8, g.mlp_up_w, g.mlp_up_b, from_kept ? kept->dfc.data() : s.dfc.data(), a.ln2.data(), d.n,
                            d.c, d.fu);
  }
  if (input) tp.enter_backward(s.dln.data());
  if (pass == GradPass::input) kept->dfc = s.dfc, kept->dln2 = s.dln;
  { ScopedOp op(prof, "mlp_norm_bwd", m);
    norm_backward(ctx.spec->arch, input ? dres : nullptr, g.mlp_norm_w, g.mlp_norm_b,
                  (from_kept ? kept->dln2.data() : s.dln.data()) + tp.local_row() * d.c, a.x_mid.data(),
                  p.mlp_norm_w, a.ln2_mean.data(), a.ln2_rstd.data(), d.n_local, d.c); }
}

namespace {

// d qkv [N, QKV] -> the gradient of the rank's qkv GEMM output [N, QKV_rows]: with kv_heads < tp
// through the query-group gather.
template <class Real>
const Real* qkv_grad_out(const BlockContext<Real>& ctx, BlockScratch<Real>& s) {
  const BlockDims& d = ctx.dims;
  if (!d.grouped_qkv()) return s.dqkv.data();
  gather_query_group_backward(*ctx.comm, *ctx.group_columns, s.dqkv.data(), s.qkv_all.data(), s.qkv_part.data(), d.n,
                              d.qkv_rows, ctx.par.tp);
  return s.qkv_part.data();
}

}  // namespace

// The attention half: dres is d x_mid on entry and d x_in on exit.
template <class Real>
void attention_block_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p,
                              const BlockTensors<Real*>& g, const Real* x_in, const BlockActs<Real>& a, Real* dres,
                              BlockScratch<Real>& s, GradPass pass, BlockWeightInputs<Real>* kept) {
  const BlockDims& d = ctx.dims;
  OpProfiler* prof = ctx.profiler;
  const int m = ctx.module;
  const TpRegion tp = region(ctx);
  const bool input = pass != GradPass::weight, weight = pass != GradPass::input && !ctx.lora.layout;
  const bool from_kept = pass == GradPass::weight;
  if (input) zero(s.datty), zero(s.dqkv), zero(s.dln);
  out_projection_backward(ctx, OutProjection<Real>{"attn_out_dx", "attn_out_dw", LoraTarget::o, p.attn_out_w,
                                                   g.attn_out_w, g.attn_out_b, a.atty.data(), s.datty.data(), d.q,
                                                   kept ? &kept->d_mid : nullptr},
                          a, dres, s, pass);
  const Real* dqkv = from_kept ? kept->dqkv.data() : nullptr;
  if (input) {
    attention_backward(ctx, a, s);
    if (ctx.rope) {
      ScopedOp op(prof, "rope_bwd", m);
      cpu::rope_backward(s.dqkv.data(), *ctx.rope, d.b, d.t, d.attn.nh, d.attn.nkv, d.attn.hd);
    }
    dqkv = qkv_grad_out(ctx, s);
    ScopedOp op(prof, "qkv_dx", m);
    linear_backward_dx(ctx.fp8, s.dln.data(), dqkv, p.qkv_w, d.n, d.c, d.qkv_rows);
    for (LoraTarget t : {LoraTarget::q, LoraTarget::k, LoraTarget::v})
      adapter_backward(ctx, t, a.ln1.data(), dqkv, d.qkv_rows, s.dln.data(), a);
  }
  if (weight) {
    ScopedOp op(prof, "qkv_dw", m);
    linear_backward_dw(ctx.fp8, g.qkv_w, g.qkv_b, dqkv, a.ln1.data(), d.n, d.c, d.qkv_rows);
  }
  if (input) tp.enter_backward(s.dln.data());
  if (pass == GradPass::input) kept->dqkv = s.dqkv, kept->dln1 = s.dln;
  { ScopedOp op(prof, "attn_norm_bwd", m);
    norm_backward(ctx.spec->arch, input ? dres : nullptr, g.attn_norm_w, g.attn_norm_b,
                  (from_kept ? kept->dln1.data() : s.dln.data()) + tp.local_row() * d.c, x_in, p.attn_norm_w,
                  a.ln1_mean.data(), a.ln1_rstd.data(), d.n_local, d.c); }
}

template <class Real>
void block_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                    const Real* x_in, const BlockActs<Real>& a, Real* dres, BlockScratch<Real>& s, GradPass pass,
                    BlockWeightInputs<Real>* kept) {
  FSDP_CHECK(pass == GradPass::all || kept != nullptr, "block_backward: a split pass needs the kept gradients");
  FSDP_CHECK(pass == GradPass::all || (ctx.par.tp == 1 && ctx.par.cp == 1),
             "block_backward: the split backward runs without tensor or context parallelism");
  FSDP_CHECK(!ctx.lora.layout || (pass == GradPass::all && ctx.par.tp == 1),
             "block_backward: LoRA runs the whole backward without tensor parallelism");
  FSDP_CHECK(!is_moe_mlp(ctx) || (pass == GradPass::all && !ctx.lora.layout && !ctx.fp8),
             "block_backward: an MoE block runs the whole backward, without LoRA or fp8");
  mlp_backward(ctx, p, g, a, dres, s, pass, kept);
  attention_block_backward(ctx, p, g, x_in, a, dres, s, pass, kept);
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template struct BlockActs<Real>;                                                                                \
  template struct BlockScratch<Real>;                                                                             \
  template struct BlockWeightInputs<Real>;                                                                        \
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
