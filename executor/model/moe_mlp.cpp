// executor/model/moe_mlp.cpp — the MoE MLP as CPU kernels timed under the simulator's MoE kernel names
// (cost_models/expert_compute.cpp): moe_router, moe_topk, moe_permute, moe_experts_gate_up, moe_swiglu,
// moe_experts_down, moe_shared_gate_up, moe_shared_down. Each expert's routed rows form one GEMM (the
// grouped GEMM, one group at a time); the outputs are summed per token in expert order, as
// MixtralSparseMoeBlock's index_add_ loop over experts.
// Under ep > 1 the experts' GEMMs run on the rows the ep group dispatched (moe_exchange.h), one chunk per
// (source rank, local expert). The routing (scores, top-k, row order, statistics and their backward) is
// moe_routing.h's, shared with the CUDA backend.
#include "executor/model/moe_mlp.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/cpu/activation.h"
#include "executor/cpu/gemm.h"
#include "executor/model/moe_exchange.h"
#include "executor/model/moe_routing.h"

namespace fsdpx {
namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// The experts' forward on their side's rows: per chunk, up (gate | up), SwiGLU, down; in [R, C] -> out [R, C].
template <class Real>
void experts_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* in, Real* out, MoeActs<Real>& a,
                     OpProfiler* prof, int module) {
  const std::int64_t c = d.c, f = d.f, rows = a.expert_rows();
  if (std::int64_t(a.h.size()) < rows * 2 * f) a.h.resize(at(rows * 2 * f)), a.act.resize(at(rows * f));
  for (const ExpertChunk& k : a.chunks) {
    { ScopedOp op(prof, "moe_experts_gate_up", module);
      cpu::matmul_forward(a.h.data() + k.r0 * 2 * f, in + k.r0 * c, p.up_w + k.expert * 2 * f * c,
                          static_cast<const Real*>(nullptr), k.rows, c, 2 * f); }
    { ScopedOp op(prof, "moe_swiglu", module);
      cpu::mlp_act_forward(FfnKind::swiglu, a.act.data() + k.r0 * f, a.h.data() + k.r0 * 2 * f, k.rows, f); }
    ScopedOp op(prof, "moe_experts_down", module);
    cpu::matmul_forward(out + k.r0 * c, a.act.data() + k.r0 * f, p.down_w + k.expert * c * f,
                        static_cast<const Real*>(nullptr), k.rows, f, c);
  }
}

// DeepseekV3MoE's shared experts, one SwiGLU SF wide on every token: out [N, C] += down(silu(gate x) · up x).
template <class Real>
void shared_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* x, Real* out, MoeActs<Real>& a,
                    OpProfiler* prof, int module) {
  FSDP_CHECK(p.shared_up_w && p.shared_down_w, "moe_forward: shared experts without their tensors");
  std::vector<Real> y(at(d.n * d.c));
  { ScopedOp op(prof, "moe_shared_gate_up", module);
    cpu::matmul_forward(a.sh_h.data(), x, p.shared_up_w, static_cast<const Real*>(nullptr), d.n, d.c, 2 * d.sf);
    cpu::mlp_act_forward(FfnKind::swiglu, a.sh_act.data(), a.sh_h.data(), d.n, d.sf); }
  ScopedOp op(prof, "moe_shared_down", module);
  cpu::matmul_forward(y.data(), a.sh_act.data(), p.shared_down_w, static_cast<const Real*>(nullptr), d.n, d.sf, d.c);
  for (std::int64_t i = 0; i < d.n * d.c; ++i) out[i] += y[at(i)];
}

}  // namespace

template <class Real>
void moe_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* x, Real* out, MoeActs<Real>& a,
                 OpProfiler* prof, int module, ExpertExchange* comm) {
  const std::int64_t c = d.c;
  { ScopedOp op(prof, "moe_router", module);
    cpu::matmul_forward(a.probs.data(), x, p.router_w, static_cast<const Real*>(nullptr), d.n, c, d.e); }
  { ScopedOp op(prof, "moe_topk", module);
    moe_route(d, p.score_bias, a); }
  { ScopedOp op(prof, "moe_permute", module);
    for (std::int64_t r = 0; r < d.rows(); ++r)
      std::copy_n(x + a.token_of[at(r)] * c, c, a.xr.begin() + r * c); }
  moe_dispatch(d, a, comm);
  const bool ep = d.ep > 1;
  if (ep) a.ex_y.resize(at(a.expert_rows() * c));
  experts_forward(d, p, ep ? a.ex_x.data() : a.xr.data(), ep ? a.ex_y.data() : a.y.data(), a, prof, module);
  if (ep) moe_combine(d, a, comm);
  { ScopedOp op(prof, "moe_permute", module);
    std::fill(out, out + d.n * c, Real(0));
    for (std::int64_t r = 0; r < d.rows(); ++r) {  // expert-major: each token's sum in expert order
      const std::int64_t i = a.token_of[at(r)];
      const Real w = a.weight[at(i * d.k + a.slot_of[at(r)])];
      for (std::int64_t j = 0; j < c; ++j) out[i * c + j] += w * a.y[at(r * c + j)];
    } }
  if (d.sf > 0) shared_forward(d, p, x, out, a, prof, module);
}

namespace {

// The routed rows' output gradients dy = weight · dout [N·k, C] and d weight [N, k] = dout · y per
// (token, slot).
template <class Real>
void routed_output_grads(const MoeDims& d, const Real* dout, const MoeActs<Real>& a, std::vector<Real>& dweight,
                         MoeScratch<Real>& s) {
  const std::int64_t c = d.c;
  for (std::int64_t r = 0; r < d.rows(); ++r) {
    const std::int64_t i = a.token_of[at(r)], slot = i * d.k + a.slot_of[at(r)];
    Real dot = 0;
    for (std::int64_t j = 0; j < c; ++j)
      s.dy[at(r * c + j)] = a.weight[at(slot)] * dout[i * c + j], dot += dout[i * c + j] * a.y[at(r * c + j)];
    dweight[at(slot)] = dot;
  }
}

// The experts' backward on their side's rows: per chunk through down, SwiGLU and up; dy [R, C] -> dx [R, C]
// (overwritten), the local experts' gradients accumulated.
template <class Real>
void experts_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g,
                      const MoeActs<Real>& a, const Real* xin, const Real* dy, Real* dx, MoeScratch<Real>& s,
                      OpProfiler* prof, int module) {
  const std::int64_t c = d.c, f = d.f, rows = a.expert_rows();
  s.dact.assign(at(rows * f), Real(0)), s.dh.assign(at(rows * 2 * f), Real(0));
  std::fill(dx, dx + rows * c, Real(0));
  for (const ExpertChunk& k : a.chunks) {
    const std::int64_t r0 = k.r0, ne = k.rows, ex = k.expert;
    { ScopedOp op(prof, "moe_experts_down_bwd", module);
      cpu::matmul_backward_dx(s.dact.data() + r0 * f, dy + r0 * c, p.down_w + ex * c * f, ne, f, c);
      cpu::matmul_backward_dw(g.down_w + ex * c * f, static_cast<Real*>(nullptr), dy + r0 * c,
                              a.act.data() + r0 * f, ne, f, c); }
    { ScopedOp op(prof, "moe_swiglu_bwd", module);
      cpu::mlp_act_backward(FfnKind::swiglu, s.dh.data() + r0 * 2 * f, s.dact.data() + r0 * f,
                            a.h.data() + r0 * 2 * f, ne, f); }
    ScopedOp op(prof, "moe_experts_gate_up_bwd", module);
    cpu::matmul_backward_dx(dx + r0 * c, s.dh.data() + r0 * 2 * f, p.up_w + ex * 2 * f * c, ne, c, 2 * f);
    cpu::matmul_backward_dw(g.up_w + ex * 2 * f * c, static_cast<Real*>(nullptr), s.dh.data() + r0 * 2 * f,
                            xin + r0 * c, ne, c, 2 * f);
  }
}

// The shared experts' backward: dx [N, C] += their input gradient from dout [N, C]; their gradients +=.
template <class Real>
void shared_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g, const Real* x,
                     const Real* dout, const MoeActs<Real>& a, Real* dx, MoeScratch<Real>& s, OpProfiler* prof,
                     int module) {
  std::fill(s.sh_dact.begin(), s.sh_dact.end(), Real(0)), std::fill(s.sh_dh.begin(), s.sh_dh.end(), Real(0));
  { ScopedOp op(prof, "moe_shared_down_bwd", module);
    cpu::matmul_backward_dx(s.sh_dact.data(), dout, p.shared_down_w, d.n, d.sf, d.c);
    cpu::matmul_backward_dw(g.shared_down_w, static_cast<Real*>(nullptr), dout, a.sh_act.data(), d.n, d.sf, d.c); }
  ScopedOp op(prof, "moe_shared_gate_up_bwd", module);
  cpu::mlp_act_backward(FfnKind::swiglu, s.sh_dh.data(), s.sh_dact.data(), a.sh_h.data(), d.n, d.sf);
  cpu::matmul_backward_dx(dx, s.sh_dh.data(), p.shared_up_w, d.n, d.c, 2 * d.sf);
  cpu::matmul_backward_dw(g.shared_up_w, static_cast<Real*>(nullptr), s.sh_dh.data(), x, d.n, d.c, 2 * d.sf);
}

}  // namespace

template <class Real>
void moe_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g, const Real* x,
                  const Real* dout, const MoeActs<Real>& a, const MoeAuxGrad<Real>& aux, Real* dx, MoeScratch<Real>& s,
                  OpProfiler* prof, int module, ExpertExchange* comm) {
  std::vector<Real> dweight(at(d.rows()), Real(0));
  routed_output_grads(d, dout, a, dweight, s);
  if (d.ep > 1) {
    const std::int64_t rows = a.expert_rows();
    s.ex_dy.resize(at(rows * d.c)), s.ex_dx.resize(at(rows * d.c));
    moe_dispatch_grads(d, a, s.dy.data(), s.ex_dy.data(), comm);
    experts_backward(d, p, g, a, a.ex_x.data(), s.ex_dy.data(), s.ex_dx.data(), s, prof, module);
    moe_combine_grads(d, a, s.ex_dx.data(), s.dxr.data(), comm);
  } else {
    experts_backward(d, p, g, a, a.xr.data(), s.dy.data(), s.dxr.data(), s, prof, module);
  }
  for (std::int64_t r = 0; r < d.rows(); ++r)
    for (std::int64_t j = 0; j < d.c; ++j) dx[a.token_of[at(r)] * d.c + j] += s.dxr[at(r * d.c + j)];
  if (d.sf > 0) shared_backward(d, p, g, x, dout, a, dx, s, prof, module);
  ScopedOp op(prof, "moe_router_bwd", module);
  moe_router_backward(d, a, dweight.data(), aux, s.dprobs.data(), s.dlogits.data());
  cpu::matmul_backward_dx(dx, s.dlogits.data(), p.router_w, d.n, d.c, d.e);
  cpu::matmul_backward_dw(g.router_w, static_cast<Real*>(nullptr), s.dlogits.data(), x, d.n, d.c, d.e);
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template void moe_forward<Real>(const MoeDims&, const MoeTensors<const Real*>&, const Real*, Real*,             \
                                  MoeActs<Real>&, OpProfiler*, int, ExpertExchange*);                                  \
  template void moe_backward<Real>(const MoeDims&, const MoeTensors<const Real*>&, const MoeTensors<Real*>&,      \
                                   const Real*, const Real*, const MoeActs<Real>&, const MoeAuxGrad<Real>&, Real*, \
                                   MoeScratch<Real>&, OpProfiler*, int, ExpertExchange*);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
