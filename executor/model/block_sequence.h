// executor/model/block_sequence.h — the kernel-call sequence of one pre-norm transformer block, forward
// and backward (whole, or zero bubble's input / weight pass), written once over a device policy `Dev`:
// the CPU's (block_policy.h: host kernels on std::vector activations) and the CUDA backend's
// (cuda_backend/cuda_block_policy.h: device launches on DeviceBuffer activations; the emulated runtime runs
// its host implementations). The sequence decides what runs in which order, which buffers it zeroes, when
// the tensor-parallel region is entered and left (tp_region.h) and what a split backward keeps; the policy
// names the kernels. The formulas are block.h's (llm.c's per-layer step, Megatron's f and g). Leaves out
// the MoE MLP's own steps (a policy call, moe_block_mlp.h), latent attention's (a policy call,
// mla_attention.h) and the attention core's (a policy call).
//
// A policy is a struct with the member types of BlockPolicyTypes and static functions: timed (a scope timing one kernel group under the simulator's
// kernel name), zero (a buffer a kernel accumulates into), clear_dx (a buffer a dx GEMM or the attention
// core's backward then fills: zeroed where those accumulate), copy, norm_forward, qkv_forward, linear_forward, adapter_forward, has_rope,
// rope_forward/backward, attention_forward/backward, mlp_act_forward/backward, residual_forward,
// add_bias, is_moe, moe_forward/backward, is_mla, mla_forward/backward, linear_dx (written: dinp zeroed by
// the sequence first), linear_dw (+=), bias_backward (+=), adapter_backward, qkv_grad_out, norm_keep (where a
// split backward keeps one half's norm gradient) and norm_backward (one norm's backward from its output
// gradient, including what a split backward keeps of it; the final norm's too, ends_sequence.h). zero and
// clear_dx also take a pointer and a count (the ends' buffers).
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "core/errors.h"
#include "core/lora.h"
#include "executor/model/block_dims.h"
#include "executor/model/tp_region.h"

namespace fsdpx {

// Which part of a backward runs: all of it, or one half of zero-bubble pipelining's split (Qi et al.
// 2023, "Zero Bubble Pipeline Parallelism", §2): the input pass B computes the gradient w.r.t. the
// block's input and keeps the output gradients of its layers; the weight pass W computes the
// parameter gradients from them and the saved activations, reading no parameters.
enum class GradPass { all, input, weight };

// The types a device policy names: activation and parameter-gradient elements, the block's context,
// saved activations, backward scratch and what a split backward keeps from its input pass.
template <class ElemT, class GradT, class CtxT, class ActsT, class ScratchT, class KeptT>
struct BlockPolicyTypes {
  using Elem = ElemT;
  using Grad = GradT;
  using Ctx = CtxT;
  using Acts = ActsT;
  using Scratch = ScratchT;
  using Kept = KeptT;
};

namespace block_sequence {

// The tensor-parallel region of a half (nothing with tp = 1), over the context's model communicator.
template <class Ctx>
auto region(const Ctx& ctx) {
  using Comm = std::remove_pointer_t<decltype(ctx.comm)>;
  return TpRegionT<Comm>{ctx.par, ctx.comm, ctx.dims.n, ctx.dims.n_local, ctx.dims.c};
}

// A norm of the rank's N_local rows into its rows of ln [N, C], gathered over tp under sequence
// parallelism (f).
template <class Dev, class E, class S>
void norm_and_enter(const typename Dev::Ctx& ctx, std::string_view op, E* ln, S* mean, S* rstd, const E* x,
                    const E* w, const E* b) {
  const auto tp = region(ctx);
  { const auto t = Dev::timed(ctx, op);
    Dev::norm_forward(ctx, ln + tp.local_row() * ctx.dims.c, mean, rstd, x, w, b); }
  tp.enter(ln);
}

// A row-parallel GEMM's output leaves the region: out [N_local, C] = Σ_tp partial + bias (the bias added
// once, after the reduction), then the residual add res_out = res_in + out (res_out may be out).
template <class Dev, class E>
void exit_and_add(const typename Dev::Ctx& ctx, E* partial, E* out, const E* bias, const E* res_in, E* res_out,
                  std::string_view op) {
  const BlockDims& d = ctx.dims;
  region(ctx).exit(partial, out);
  const auto t = Dev::timed(ctx, op);
  if (ctx.par.tp > 1) Dev::add_bias(ctx, out, bias, d.n_local, d.c);
  Dev::residual_forward(ctx, res_out, res_in, out, d.n_local * d.c);
}

// The dense MLP: wide [N, C] = mlp_down(act(mlp_up(ln2))) (+ adapters), before the region's exit.
template <class Dev, class E>
void mlp_forward(const typename Dev::Ctx& ctx, const BlockTensors<const E*>& p, typename Dev::Acts& a, E* wide) {
  const BlockDims& d = ctx.dims;
  { const auto t = Dev::timed(ctx, "mlp_up");
    Dev::linear_forward(ctx, a.fc.data(), a.ln2.data(), p.mlp_up_w, p.mlp_up_b, d.c, d.fu); }
  for (LoraTarget t : {LoraTarget::gate, LoraTarget::up}) Dev::adapter_forward(ctx, t, a.ln2.data(), a.fc.data(), d.fu, a);
  { const auto t = Dev::timed(ctx, "mlp_act");
    Dev::mlp_act_forward(ctx, a.fc_act.data(), a.fc.data()); }
  { const auto t = Dev::timed(ctx, "mlp_down");
    Dev::linear_forward(ctx, wide, a.fc_act.data(), p.mlp_down_w, ctx.par.tp > 1 ? nullptr : p.mlp_down_b, d.f, d.c); }
  Dev::adapter_forward(ctx, LoraTarget::down, a.fc_act.data(), wide, d.c, a);
}

// x_in [N_local, C] -> x_out [N_local, C]; fills `a`. x_out serves as the row-parallel partial output
// [N, C] without sequence parallelism (ctx.scratch->wide with it).
template <class Dev, class E>
void block_forward(const typename Dev::Ctx& ctx, const BlockTensors<const E*>& p, const E* x_in, E* x_out,
                   typename Dev::Acts& a) {
  const BlockDims& d = ctx.dims;
  E* wide = ctx.par.sp() ? ctx.scratch->wide.data() : x_out;
  norm_and_enter<Dev>(ctx, "attn_norm", a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x_in, p.attn_norm_w,
                      p.attn_norm_b);
  if (Dev::is_mla(ctx)) {
    Dev::mla_forward(ctx, p, a);
  } else {
    Dev::qkv_forward(ctx, p, a);
    for (LoraTarget t : {LoraTarget::q, LoraTarget::k, LoraTarget::v})
      Dev::adapter_forward(ctx, t, a.ln1.data(), a.qkv.data(), d.qkv, a);
    if (Dev::has_rope(ctx)) {
      const auto t = Dev::timed(ctx, "rope");
      Dev::rope_forward(ctx, a.qkv.data());
    }
    Dev::attention_forward(ctx, a);
  }
  { const auto t = Dev::timed(ctx, "attn_out");
    Dev::linear_forward(ctx, wide, a.atty.data(), p.attn_out_w, ctx.par.tp > 1 ? nullptr : p.attn_out_b, d.q, d.c); }
  Dev::adapter_forward(ctx, LoraTarget::o, a.atty.data(), wide, d.c, a);
  exit_and_add<Dev>(ctx, wide, x_out, p.attn_out_b, x_in, a.x_mid.data(), "attn_residual");
  norm_and_enter<Dev>(ctx, "mlp_norm", a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.x_mid.data(),
                      p.mlp_norm_w, p.mlp_norm_b);
  if (Dev::is_moe(ctx))
    Dev::moe_forward(ctx, p, a, wide);
  else
    mlp_forward<Dev>(ctx, p, a, wide);
  exit_and_add<Dev>(ctx, wide, x_out, p.mlp_down_b, a.x_mid.data(), x_out, "mlp_residual");
}

// A row-parallel output projection (attn_out, mlp_down) y [N, C] = x [N, in] · Wᵀ (+ bias) and its adapter:
// W [C, in] and its gradients (unused with LoRA), the saved input x, dx [N, in] (zeroed by the caller), and
// where a split backward keeps d y [N, C] (null for GradPass::all).
template <class E, class G>
struct OutProjection {
  std::string_view dx_op, dw_op;  // kernel names
  LoraTarget target;
  const E* w;
  G *dw, *db;
  const E* x;
  E* dx;
  std::int64_t in;
  E* kept_dy;
};

// dx = dy W (+ the adapter's), dW += dyᵀ x and dbias += Σ dy, from dy = d y over all N tokens (through the
// region's exit; under a split backward the input pass keeps dy and the weight pass reads it back). With
// tp > 1 the bias, added once after the reduction, gets its gradient from the rank's N_local rows.
template <class Dev, class E, class G>
void out_projection_backward(const typename Dev::Ctx& ctx, const OutProjection<E, G>& o, const typename Dev::Acts& a,
                             E* dres, typename Dev::Scratch& s, GradPass pass) {
  const BlockDims& d = ctx.dims;
  const bool split = ctx.par.tp > 1;
  const bool input = pass != GradPass::weight, weight = pass != GradPass::input && !ctx.lora.layout;
  const E* dy = pass == GradPass::weight ? o.kept_dy : region(ctx).exit_backward(static_cast<const E*>(dres), s.wide.data());
  if (pass == GradPass::input) Dev::copy(ctx, o.kept_dy, dy, d.n * d.c);
  if (input) {
    { const auto t = Dev::timed(ctx, o.dx_op);
      Dev::linear_dx(ctx, o.dx, dy, o.w, o.in, d.c); }
    Dev::adapter_backward(ctx, o.target, o.x, dy, d.c, o.dx, a, s);
  }
  if (weight) {
    const auto t = Dev::timed(ctx, o.dw_op);
    Dev::linear_dw(ctx, s, o.dw, split ? nullptr : o.db, dy, o.x, o.in, d.c);
    if (split) Dev::bias_backward(ctx, s, o.db, dres, d.n_local, d.c);
  }
}

// The MLP half: dres is d x_out on entry and d x_mid on exit.
template <class Dev, class E, class G>
void mlp_backward(const typename Dev::Ctx& ctx, const BlockTensors<const E*>& p, const BlockTensors<G*>& g,
                  const typename Dev::Acts& a, E* dres, typename Dev::Scratch& s, GradPass pass,
                  typename Dev::Kept* kept) {
  const BlockDims& d = ctx.dims;
  const bool input = pass != GradPass::weight, weight = pass != GradPass::input && !ctx.lora.layout;
  const bool moe = Dev::is_moe(ctx);  // the whole backward only
  if (input) Dev::clear_dx(ctx, s.dfc_act), Dev::zero(ctx, s.dfc), Dev::clear_dx(ctx, s.dln);
  if (moe) Dev::moe_backward(ctx, p, g, a, dres, s);
  if (!moe)
    out_projection_backward<Dev>(ctx, OutProjection<E, G>{"mlp_down_dx", "mlp_down_dw", LoraTarget::down, p.mlp_down_w,
                                                          g.mlp_down_w, g.mlp_down_b, a.fc_act.data(), s.dfc_act.data(),
                                                          d.f, kept ? kept->d_out.data() : nullptr},
                                 a, dres, s, pass);
  if (input && !moe) {
    { const auto t = Dev::timed(ctx, "mlp_act_bwd");
      Dev::mlp_act_backward(ctx, s.dfc.data(), s.dfc_act.data(), a.fc.data()); }
    { const auto t = Dev::timed(ctx, "mlp_up_dx");
      Dev::linear_dx(ctx, s.dln.data(), s.dfc.data(), p.mlp_up_w, d.c, d.fu); }
    for (LoraTarget t : {LoraTarget::gate, LoraTarget::up})
      Dev::adapter_backward(ctx, t, a.ln2.data(), s.dfc.data(), d.fu, s.dln.data(), a, s);
  }
  if (weight && !moe) {
    const auto t = Dev::timed(ctx, "mlp_up_dw");
    Dev::linear_dw(ctx, s, g.mlp_up_w, g.mlp_up_b, pass == GradPass::weight ? kept->dfc.data() : s.dfc.data(),
                   a.ln2.data(), d.c, d.fu);
  }
  if (input) region(ctx).enter_backward(s.dln.data());  // f's backward: the input gradients summed over tp
  if (pass == GradPass::input) Dev::copy(ctx, kept->dfc.data(), s.dfc.data(), d.n * d.fu);
  Dev::norm_backward(ctx, pass == GradPass::weight ? "mlp_norm_dw" : "mlp_norm_bwd", pass, Dev::norm_keep(ctx, kept, 1),
                     dres, g.mlp_norm_w, g.mlp_norm_b, s, s.dln.data(), a.x_mid.data(), p.mlp_norm_w, p.mlp_norm_b,
                     a.ln2_mean.data(), a.ln2_rstd.data());
}

// The attention half: dres is d x_mid on entry and d x_in on exit.
template <class Dev, class E, class G>
void attention_backward(const typename Dev::Ctx& ctx, const BlockTensors<const E*>& p, const BlockTensors<G*>& g,
                        const E* x_in, const typename Dev::Acts& a, E* dres, typename Dev::Scratch& s, GradPass pass,
                        typename Dev::Kept* kept) {
  const BlockDims& d = ctx.dims;
  const bool input = pass != GradPass::weight, weight = pass != GradPass::input && !ctx.lora.layout;
  if (input) Dev::clear_dx(ctx, s.datty), Dev::clear_dx(ctx, s.dqkv), Dev::clear_dx(ctx, s.dln);
  out_projection_backward<Dev>(ctx, OutProjection<E, G>{"attn_out_dx", "attn_out_dw", LoraTarget::o, p.attn_out_w,
                                                        g.attn_out_w, g.attn_out_b, a.atty.data(), s.datty.data(), d.q,
                                                        kept ? kept->d_mid.data() : nullptr},
                               a, dres, s, pass);
  const E* dqkv = pass == GradPass::weight ? kept->dqkv.data() : nullptr;
  const bool mla = Dev::is_mla(ctx);  // the whole backward only
  if (mla) Dev::mla_backward(ctx, p, g, a, s);
  if (input && !mla) {
    Dev::attention_backward(ctx, a, s);  // into s.dqkv
    if (Dev::has_rope(ctx)) {
      const auto t = Dev::timed(ctx, "rope_bwd");
      Dev::rope_backward(ctx, s.dqkv.data());
    }
    dqkv = Dev::qkv_grad_out(ctx, s);
    { const auto t = Dev::timed(ctx, "qkv_dx");
      Dev::linear_dx(ctx, s.dln.data(), dqkv, p.qkv_w, d.c, d.qkv_rows); }
    for (LoraTarget t : {LoraTarget::q, LoraTarget::k, LoraTarget::v})
      Dev::adapter_backward(ctx, t, a.ln1.data(), dqkv, d.qkv_rows, s.dln.data(), a, s);
  }
  if (weight && !mla) {
    const auto t = Dev::timed(ctx, "qkv_dw");
    Dev::linear_dw(ctx, s, g.qkv_w, g.qkv_b, dqkv, a.ln1.data(), d.c, d.qkv_rows);
  }
  if (input) region(ctx).enter_backward(s.dln.data());
  if (pass == GradPass::input) Dev::copy(ctx, kept->dqkv.data(), s.dqkv.data(), d.n * d.qkv);
  Dev::norm_backward(ctx, pass == GradPass::weight ? "attn_norm_dw" : "attn_norm_bwd", pass,
                     Dev::norm_keep(ctx, kept, 0), dres, g.attn_norm_w, g.attn_norm_b, s, s.dln.data(), x_in,
                     p.attn_norm_w, p.attn_norm_b, a.ln1_mean.data(), a.ln1_rstd.data());
}

// dres [N_local, C]: gradient w.r.t. x_out on entry, w.r.t. x_in on exit; parameter gradients +=.
// GradPass::input updates dres and fills `kept` (g unused); GradPass::weight reads `kept` and writes g
// only (p and dres unused). The split runs with tp = cp = 1 only.
template <class Dev, class E, class G>
void block_backward(const typename Dev::Ctx& ctx, const BlockTensors<const E*>& p, const BlockTensors<G*>& g,
                    const E* x_in, const typename Dev::Acts& a, E* dres, typename Dev::Scratch& s, GradPass pass,
                    typename Dev::Kept* kept) {
  FSDP_CHECK(pass == GradPass::all || kept != nullptr, "block_backward: a split pass needs the kept gradients");
  FSDP_CHECK(pass == GradPass::all || (ctx.par.tp == 1 && ctx.par.cp == 1),
             "block_backward: the split backward runs without tensor or context parallelism");
  FSDP_CHECK(!ctx.lora.layout || (pass == GradPass::all && ctx.par.tp == 1),
             "block_backward: LoRA runs the whole backward without tensor parallelism");
  FSDP_CHECK(!Dev::is_moe(ctx) || (pass == GradPass::all && !ctx.lora.layout),
             "block_backward: an MoE block runs the whole backward, without LoRA");
  FSDP_CHECK(!Dev::is_mla(ctx) || (pass == GradPass::all && !ctx.lora.layout && ctx.par.tp == 1 && ctx.par.cp == 1),
             "block_backward: latent attention runs the whole backward, without LoRA, tp or cp");
  mlp_backward<Dev>(ctx, p, g, a, dres, s, pass, kept);
  attention_backward<Dev>(ctx, p, g, x_in, a, dres, s, pass, kept);
}

}  // namespace block_sequence
}  // namespace fsdpx
