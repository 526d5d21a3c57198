// executor/model/moe_sequence.h — the kernel-call sequence of a mixture-of-experts MLP (moe_mlp.h's math:
// Mixtral's and DeepSeek-V3's blocks), forward and backward, written once over a device policy `Dev`: the
// CPU's (moe_mlp.cpp: host rows) and the CUDA backend's (cuda_backend/cuda_moe_mlp.cpp: device rows, host
// routing). Forward: router -> routing and dispatch plan (moe_routing.h, moe_exchange.h, on the host for
// both) -> gather the routed rows -> [ep > 1: rows to the experts' ranks] -> per expert chunk up, SwiGLU,
// down (one GEMM per chunk) -> [rows back] -> weighted combine -> shared expert; backward the reverse. The
// sequence decides the order, the timed kernel names (the simulator's, cost_models/expert_compute.cpp),
// which dx each GEMM writes or accumulates and what it zeroes; the policy names the kernels and buffers.
//
// A policy names E (activations), G (weight gradients) and Ctx, and has the static functions of
// cpu_sequence_kernels.h (timed, zero, linear, linear_backward, swiglu, swiglu_backward) and: router
// (the logits GEMM), route (routing and dispatch plan), gather (the routed rows a.xr), reserve (the experts'
// side sized for a.expert_rows()), exchange (rows across the ep group: from, its per-rank counts, to,
// theirs), combine (out [N, C] written: each token's rows weighted, in expert order), routed_grads (s.dy
// and the combine weights' gradient), reserve_grads, prepare_expert_grads (the experts' side scratch, dh
// zeroed), to_tokens (each token's routed rows' input gradients into dx) and router_backward (the logits'
// gradient, returned). Buffers are named as MoeActs / MoeScratch (moe_dims.h) with .data().
#pragma once

#include <cstdint>

#include "core/errors.h"
#include "executor/model/block_dims.h"
#include "executor/model/moe_dims.h"

namespace fsdpx {

// An MoE block's tensors (block_dims.h) as the sequence names them.
template <class P>
MoeTensors<P> moe_tensors(const BlockTensors<P>& t) {
  FSDP_CHECK(t.router_w && t.experts_up_w && t.experts_down_w, "moe_tensors: the block has no MoE tensors");
  return MoeTensors<P>{t.router_w, t.experts_up_w, t.experts_down_w, t.router_bias, t.shared_up_w, t.shared_down_w};
}

// The block at ctx.module (1 + block index) has an MoE MLP: an MoE model past its dense leading layers.
template <class Ctx>
bool is_moe_mlp(const Ctx& ctx) {
  return ctx.spec->is_moe() && ctx.module - 1 >= ctx.spec->moe.dense_layers;
}

// A block's MoE sizes (block_context.h's context): MoE blocks run without tensor or context parallelism;
// expert parallelism's exchange runs on the context's model communicator (its ep group).
template <class Ctx>
MoeDims moe_block_dims(const Ctx& ctx) {
  FSDP_CHECK(ctx.par.tp == 1 && ctx.par.cp == 1, "moe_block_dims: MoE blocks run without tensor or context parallelism");
  FSDP_CHECK(ctx.par.ep == 1 || ctx.comm != nullptr, "moe_block_dims: expert parallelism needs the model's ep group");
  return make_moe_dims(*ctx.spec, ctx.dims.n, ctx.par.ep, ctx.par.ep_rank, ctx.dims.t);
}

namespace moe_sequence {

// The experts on their side's rows: per chunk, up (gate | up), SwiGLU, down; in [R, C] -> out [R, C].
template <class Dev, class E, class Acts>
void experts_forward(const typename Dev::Ctx& ctx, const MoeDims& d, const MoeTensors<const E*>& p, const E* in,
                     E* out, Acts& a) {
  const std::int64_t c = d.c, f = d.f;
  for (const ExpertChunk& k : a.chunks) {
    E* h = a.h.data() + k.r0 * 2 * f;
    E* act = a.act.data() + k.r0 * f;
    { const auto t = Dev::timed(ctx, "moe_experts_gate_up");
      Dev::linear(ctx, k.rows, h, in + k.r0 * c, p.up_w + k.expert * 2 * f * c, c, 2 * f); }
    { const auto t = Dev::timed(ctx, "moe_swiglu");
      Dev::swiglu(ctx, act, h, k.rows, f); }
    const auto t = Dev::timed(ctx, "moe_experts_down");
    Dev::linear(ctx, k.rows, out + k.r0 * c, act, p.down_w + k.expert * c * f, f, c);
  }
}

// DeepseekV3MoE's shared experts, one SwiGLU SF wide on every token: out [N, C] += down(silu(gate x) · up x).
template <class Dev, class E, class Acts>
void shared_forward(const typename Dev::Ctx& ctx, const MoeDims& d, const MoeTensors<const E*>& p, const E* x, E* out,
                    Acts& a) {
  FSDP_CHECK(p.shared_up_w && p.shared_down_w, "moe_sequence: shared experts without their tensors");
  { const auto t = Dev::timed(ctx, "moe_shared_gate_up");
    Dev::linear(ctx, d.n, a.sh_h.data(), x, p.shared_up_w, d.c, 2 * d.sf);
    Dev::swiglu(ctx, a.sh_act.data(), a.sh_h.data(), d.n, d.sf); }
  const auto t = Dev::timed(ctx, "moe_shared_down");
  Dev::linear(ctx, d.n, out, a.sh_act.data(), p.shared_down_w, d.sf, d.c, true);
}

// out [N, C] (written) = Σ_slot weight · expert(x) (+ the shared expert) for x [N, C]; fills `a`.
template <class Dev, class E, class Acts>
void forward(const typename Dev::Ctx& ctx, const MoeDims& d, const MoeTensors<const E*>& p, const E* x, E* out,
             Acts& a) {
  { const auto t = Dev::timed(ctx, "moe_router");
    Dev::router(ctx, d, p, x, a); }
  { const auto t = Dev::timed(ctx, "moe_topk");
    Dev::route(ctx, d, p, a); }
  { const auto t = Dev::timed(ctx, "moe_permute");
    Dev::gather(ctx, d, x, a); }
  const bool ep = d.ep > 1;
  Dev::reserve(ctx, d, a);
  if (ep) Dev::exchange(ctx, d, a.xr.data(), a.send_rows, a.ex_x.data(), a.recv_rows);
  experts_forward<Dev>(ctx, d, p, ep ? a.ex_x.data() : a.xr.data(), ep ? a.ex_y.data() : a.y.data(), a);
  if (ep) Dev::exchange(ctx, d, a.ex_y.data(), a.recv_rows, a.y.data(), a.send_rows);
  { const auto t = Dev::timed(ctx, "moe_permute");
    Dev::combine(ctx, d, a, out); }
  if (d.sf > 0) shared_forward<Dev>(ctx, d, p, x, out, a);
}

// The experts' backward on their side's rows: per chunk through down, SwiGLU and up; dy [R, C] -> dx [R, C]
// (written), the local experts' gradients accumulated.
template <class Dev, class E, class G, class Acts, class Scratch>
void experts_backward(const typename Dev::Ctx& ctx, const MoeDims& d, const MoeTensors<const E*>& p,
                      const MoeTensors<G*>& g, const Acts& a, const E* xin, const E* dy, E* dx, Scratch& s) {
  const std::int64_t c = d.c, f = d.f;
  Dev::prepare_expert_grads(ctx, d, a, s);
  for (const ExpertChunk& k : a.chunks) {
    const std::int64_t r0 = k.r0, ne = k.rows, ex = k.expert;
    { const auto t = Dev::timed(ctx, "moe_experts_down_bwd");
      Dev::linear_backward(ctx, ne, s.dact.data() + r0 * f, false, g.down_w + ex * c * f, dy + r0 * c,
                           a.act.data() + r0 * f, p.down_w + ex * c * f, f, c); }
    { const auto t = Dev::timed(ctx, "moe_swiglu_bwd");
      Dev::swiglu_backward(ctx, s.dh.data() + r0 * 2 * f, s.dact.data() + r0 * f, a.h.data() + r0 * 2 * f, ne, f); }
    const auto t = Dev::timed(ctx, "moe_experts_gate_up_bwd");
    Dev::linear_backward(ctx, ne, dx + r0 * c, false, g.up_w + ex * 2 * f * c, s.dh.data() + r0 * 2 * f, xin + r0 * c,
                         p.up_w + ex * 2 * f * c, c, 2 * f);
  }
}

// The shared experts' backward: dx [N, C] += their input gradient from dout [N, C]; their gradients +=.
template <class Dev, class E, class G, class Acts, class Scratch>
void shared_backward(const typename Dev::Ctx& ctx, const MoeDims& d, const MoeTensors<const E*>& p,
                     const MoeTensors<G*>& g, const E* x, const E* dout, const Acts& a, E* dx, Scratch& s) {
  { const auto t = Dev::timed(ctx, "moe_shared_down_bwd");
    Dev::linear_backward(ctx, d.n, s.sh_dact.data(), false, g.shared_down_w, dout, a.sh_act.data(), p.shared_down_w,
                         d.sf, d.c); }
  const auto t = Dev::timed(ctx, "moe_shared_gate_up_bwd");
  Dev::zero(ctx, s.sh_dh.data(), d.n * 2 * d.sf);
  Dev::swiglu_backward(ctx, s.sh_dh.data(), s.sh_dact.data(), a.sh_h.data(), d.n, d.sf);
  Dev::linear_backward(ctx, d.n, dx, true, g.shared_up_w, s.sh_dh.data(), x, p.shared_up_w, d.c, 2 * d.sf);
}

// dx [N, C] receives the gradient w.r.t. x from dout [N, C] (w.r.t. out) and the load-balancing loss's
// (through the policy's router_backward): its first write is the policy's to_tokens. The parameter
// gradients accumulate; under ep > 1 the routed rows' gradients travel as the rows did in forward.
template <class Dev, class E, class G, class Acts, class Scratch>
void backward(const typename Dev::Ctx& ctx, const MoeDims& d, const MoeTensors<const E*>& p, const MoeTensors<G*>& g,
              const E* x, const E* dout, const Acts& a, Scratch& s, E* dx) {
  Dev::routed_grads(ctx, d, dout, a, s);
  if (d.ep > 1) {
    Dev::reserve_grads(ctx, d, a, s);
    Dev::exchange(ctx, d, s.dy.data(), a.send_rows, s.ex_dy.data(), a.recv_rows);
    experts_backward<Dev>(ctx, d, p, g, a, a.ex_x.data(), s.ex_dy.data(), s.ex_dx.data(), s);
    Dev::exchange(ctx, d, s.ex_dx.data(), a.recv_rows, s.dxr.data(), a.send_rows);
  } else {
    experts_backward<Dev>(ctx, d, p, g, a, a.xr.data(), s.dy.data(), s.dxr.data(), s);
  }
  Dev::to_tokens(ctx, d, a, s.dxr.data(), dx);
  if (d.sf > 0) shared_backward<Dev>(ctx, d, p, g, x, dout, a, dx, s);
  const auto t = Dev::timed(ctx, "moe_router_bwd");
  const E* dlogits = Dev::router_backward(ctx, d, a, s);
  Dev::linear_backward(ctx, d.n, dx, true, g.router_w, dlogits, x, p.router_w, d.c, d.e);
}

}  // namespace moe_sequence
}  // namespace fsdpx
