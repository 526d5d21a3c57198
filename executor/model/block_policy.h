// executor/model/block_policy.h — the CPU device policy of the block's kernel-call sequence
// (block_sequence.h): host kernels (executor/cpu/) on std::vector activations, GEMMs through fp8_linear.h
// (fp32 or fp8-rounded operands), the MoE MLP (moe_block_mlp.h), the query-group gather of kv_heads < tp
// and the attention core with or without context parallelism. A split backward keeps each half's norm
// input gradient and re-runs the norm backward without dinp in the weight pass (bit for bit the
// gradients of the whole backward). Internal to block.cpp; leaves out every device concern.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "executor/cpu/activation.h"
#include "executor/model/block.h"
#include "executor/model/moe_block_mlp.h"

namespace fsdpx {

template <class Real>
struct CpuBlockPolicy
    : BlockPolicyTypes<Real, Real, BlockContext<Real>, BlockActs<Real>, BlockScratch<Real>, BlockWeightInputs<Real>> {
  using Types = typename CpuBlockPolicy::BlockPolicyTypes;
  using typename Types::Ctx, typename Types::Acts, typename Types::Scratch, typename Types::Kept;

  static PausableOp timed(const Ctx& ctx, std::string_view op) { return PausableOp(ctx.profiler, op, ctx.module); }
  static void zero(const Ctx&, std::vector<Real>& v) { std::fill(v.begin(), v.end(), Real(0)); }
  static void zero(const Ctx&, Real* p, std::int64_t n) { std::fill(p, p + n, Real(0)); }
  static void clear_dx(const Ctx& ctx, std::vector<Real>& v) { zero(ctx, v); }  // the CPU's GEMMs accumulate
  static void clear_dx(const Ctx& ctx, Real* p, std::int64_t n) { zero(ctx, p, n); }
  static void copy(const Ctx&, Real* dst, const Real* src, std::int64_t n) { std::copy(src, src + n, dst); }

  static void norm_forward(const Ctx& ctx, Real* out, Real* mean, Real* rstd, const Real* x, const Real* w,
                           const Real* b) {
    fsdpx::norm_forward(ctx.spec->arch, out, mean, rstd, x, w, b, ctx.dims.n_local, ctx.dims.c, ctx.spec->norm_eps);
  }
  // qkv [N, QKV] = ln1 · Wqkvᵀ (+ bias), timed "qkv": with kv_heads < tp through the query-group gather.
  static void qkv_forward(const Ctx& ctx, const BlockTensors<const Real*>& p, Acts& a);
  // out [N, oc] = x [N, k] · Wᵀ (+ b).
  static void linear_forward(const Ctx& ctx, Real* out, const Real* x, const Real* w, const Real* b, std::int64_t k,
                             std::int64_t oc) {
    fsdpx::linear_forward(ctx.fp8, out, x, w, b, ctx.dims.n, k, oc);
  }
  static void adapter_forward(const Ctx& ctx, LoraTarget t, const Real* x, Real* y, std::int64_t width, Acts& a) {
    if (!ctx.lora.layout) return;
    ScopedOp op(ctx.profiler, "lora", ctx.module);
    lora_forward(ctx.lora, t, x, y, width, ctx.dims.n, a.lora_u);
  }
  static bool has_rope(const Ctx& ctx) { return ctx.rope != nullptr; }
  static void rope_forward(const Ctx& ctx, Real* qkv) {
    const BlockDims& d = ctx.dims;
    cpu::rope_forward(qkv, *ctx.rope, d.b, d.t, d.attn.nh, d.attn.nkv, d.attn.hd);
  }
  static void rope_backward(const Ctx& ctx, Real* dqkv) {
    const BlockDims& d = ctx.dims;
    cpu::rope_backward(dqkv, *ctx.rope, d.b, d.t, d.attn.nh, d.attn.nkv, d.attn.hd);
  }
  // Latent attention in place of qkv, RoPE and the core (mla_attention.h): ln1 -> atty, qkv and att kept.
  static bool is_mla(const Ctx& ctx) { return ctx.spec->is_mla(); }
  static void mla_forward(const Ctx& ctx, const BlockTensors<const Real*>& p, Acts& a);
  // s.dln (written) = the gradient w.r.t. ln1 from s.datty; the latent projections' gradients accumulate into g.
  static void mla_backward(const Ctx& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                           const Acts& a, Scratch& s);
  static void attention_forward(const Ctx& ctx, Acts& a);                   // timed "attn_core"
  static void attention_backward(const Ctx& ctx, const Acts& a, Scratch& s);  // s.dqkv +=, timed "attn_core_bwd"
  static void mlp_act_forward(const Ctx& ctx, Real* out, const Real* in) {
    cpu::mlp_act_forward(ctx.spec->ffn_kind, out, in, ctx.dims.n, ctx.dims.f);
  }
  static void mlp_act_backward(const Ctx& ctx, Real* dinp, const Real* dout, const Real* inp) {
    cpu::mlp_act_backward(ctx.spec->ffn_kind, dinp, dout, inp, ctx.dims.n, ctx.dims.f);
  }
  static void residual_forward(const Ctx&, Real* out, const Real* a, const Real* b, std::int64_t n) {
    cpu::residual_forward(out, a, b, n);
  }
  // A row-parallel GEMM's bias, added once after the reduction: out [n, c] += bias [c].
  static void add_bias(const Ctx&, Real* out, const Real* bias, std::int64_t n, std::int64_t c) {
    if (!bias) return;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < c; ++j) out[i * c + j] += bias[j];
  }
  static bool is_moe(const Ctx& ctx) { return is_moe_mlp(ctx); }
  static void moe_forward(const Ctx& ctx, const BlockTensors<const Real*>& p, Acts& a, Real* out) {
    moe_mlp_forward(ctx, p, a, out);
  }
  static void moe_backward(const Ctx& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                           const Acts& a, const Real* dout, Scratch& s) {
    moe_mlp_backward(ctx, p, g, a, dout, s);
  }

  // dinp [N, c] (zeroed by the sequence) += dout [N, oc] · W.
  static void linear_dx(const Ctx& ctx, Real* dinp, const Real* dout, const Real* w, std::int64_t c, std::int64_t oc) {
    linear_backward_dx(ctx.fp8, dinp, dout, w, ctx.dims.n, c, oc);
  }
  static void linear_dw(const Ctx& ctx, Scratch&, Real* dw, Real* db, const Real* dout, const Real* inp, std::int64_t c,
                        std::int64_t oc) {
    linear_backward_dw(ctx.fp8, dw, db, dout, inp, ctx.dims.n, c, oc);
  }
  // dbias [c] += Σ_n dout [n, c].
  static void bias_backward(const Ctx&, Scratch&, Real* dbias, const Real* dout, std::int64_t n, std::int64_t c) {
    if (!dbias) return;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < c; ++j) dbias[j] += dout[i * c + j];
  }
  static void adapter_backward(const Ctx& ctx, LoraTarget t, const Real* x, const Real* dy, std::int64_t width,
                               Real* dx, const Acts& a, Scratch&) {
    if (!ctx.lora.layout) return;
    ScopedOp op(ctx.profiler, "lora_bwd", ctx.module);
    lora_backward(ctx.lora, t, x, dy, width, dx, ctx.dims.n, a.lora_u);
  }
  // d qkv [N, QKV] -> the gradient of the rank's qkv GEMM output [N, QKV_rows] (query-group gather).
  static const Real* qkv_grad_out(const Ctx& ctx, Scratch& s);

  // Where a split backward keeps one half's norm output gradient (half 0: attention, 1: MLP).
  static std::vector<Real>* norm_keep(const Ctx&, Kept* kept, int half) {
    return kept ? (half == 0 ? &kept->dln1 : &kept->dln2) : nullptr;
  }
  // A norm's backward from dln [N, C] (the rank's rows at the region's local row): dinp += into dres, dw,
  // db +=. A split backward's input pass copies dln to `keep` (null: dln stays until the weight pass, as
  // the final norm's); its weight pass re-runs the norm's backward from it without dinp.
  static void norm_backward(const Ctx& ctx, std::string_view op, GradPass pass, std::vector<Real>* keep, Real* dres,
                            Real* dw, Real* db, Scratch&, const Real* dln, const Real* x, const Real* w, const Real*,
                            const Real* mean, const Real* rstd) {
    if (pass == GradPass::input && keep) keep->assign(dln, dln + ctx.dims.n * ctx.dims.c);
    if (pass == GradPass::weight && keep) dln = keep->data();
    ScopedOp timer(ctx.profiler, op, ctx.module);
    fsdpx::norm_backward(ctx.spec->arch, pass != GradPass::weight ? dres : nullptr, dw, db,
                         dln + block_sequence::region(ctx).local_row() * ctx.dims.c, x, w, mean, rstd,
                         ctx.dims.n_local, ctx.dims.c);
  }
};

}  // namespace fsdpx
