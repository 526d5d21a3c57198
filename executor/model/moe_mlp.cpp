// executor/model/moe_mlp.cpp — the MoE MLP on the CPU (see moe_mlp.h): the shared kernel-call sequence
// (moe_sequence.h, timed under the simulator's MoE kernel names, cost_models/expert_compute.cpp) over the
// CPU policy below, host rows. Each expert's routed rows form one GEMM (the grouped GEMM, one group at a
// time); the outputs are summed per token in expert order, as MixtralSparseMoeBlock's index_add_ loop over
// experts. Under ep > 1 the rows cross the ep group through the ExpertExchange (moe_exchange.h), one chunk
// per (source rank, local expert) on the experts' side. The routing (scores, top-k, row order, statistics
// and their backward) is moe_routing.h's, shared with the CUDA backend.
#include "executor/model/moe_mlp.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/model/cpu_sequence_kernels.h"
#include "executor/model/moe_exchange.h"
#include "executor/model/moe_routing.h"
#include "executor/model/moe_sequence.h"
#include "executor/model/vector_index.h"

namespace fsdpx {
namespace {

template <class Real>
struct CpuMoeCtx {
  OpProfiler* prof;
  int module;
  ExpertExchange* comm;         // the ep group's (null at ep 1)
  const MoeAuxGrad<Real>* aux;  // the load-balancing loss's gradient (backward)
};

// The CPU policy of moe_sequence.h: the shared host kernels and the rows on host vectors. dx's contract is
// the CPU's: += (to_tokens adds into it).
template <class Real>
struct CpuMoePolicy : CpuSequenceKernels<Real> {
  using Ctx = CpuMoeCtx<Real>;
  using K = CpuSequenceKernels<Real>;

  static void router(const Ctx& ctx, const MoeDims& d, const MoeTensors<const Real*>& p, const Real* x,
                     MoeActs<Real>& a) {
    K::linear(ctx, d.n, a.probs.data(), x, p.router_w, d.c, d.e);
  }
  static void route(const Ctx& ctx, const MoeDims& d, const MoeTensors<const Real*>& p, MoeActs<Real>& a) {
    moe_route(d, p.score_bias, a);
    moe_plan_dispatch(d, a, ctx.comm);
  }
  static void gather(const Ctx&, const MoeDims& d, const Real* x, MoeActs<Real>& a) {
    for (std::int64_t r = 0; r < d.rows(); ++r) std::copy_n(x + a.token_of[at(r)] * d.c, d.c, a.xr.begin() + r * d.c);
  }
  static void reserve(const Ctx&, const MoeDims& d, MoeActs<Real>& a) {
    const std::int64_t rows = a.expert_rows();
    if (std::int64_t(a.h.size()) < rows * 2 * d.f) a.h.resize(at(rows * 2 * d.f)), a.act.resize(at(rows * d.f));
    if (d.ep > 1) a.ex_x.resize(at(rows * d.c)), a.ex_y.resize(at(rows * d.c));
  }
  static void exchange(const Ctx& ctx, const MoeDims& d, const Real* from, const std::vector<std::int64_t>& from_rows,
                       Real* to, const std::vector<std::int64_t>& to_rows) {
    FSDP_CHECK(ctx.comm != nullptr, "moe_mlp: expert parallelism without its ep group");
    ctx.comm->all_to_allv(from, from_rows, to, to_rows, d.c);
  }
  static void combine(const Ctx&, const MoeDims& d, const MoeActs<Real>& a, Real* out) {
    std::fill(out, out + d.n * d.c, Real(0));
    for (std::int64_t r = 0; r < d.rows(); ++r) {  // expert-major: each token's sum in expert order
      const std::int64_t i = a.token_of[at(r)];
      const Real w = a.weight[at(i * d.k + a.slot_of[at(r)])];
      for (std::int64_t j = 0; j < d.c; ++j) out[i * d.c + j] += w * a.y[at(r * d.c + j)];
    }
  }
  // The routed rows' output gradients dy = weight · dout [N·k, C] and d weight [N, k] = dout · y per
  // (token, slot).
  static void routed_grads(const Ctx&, const MoeDims& d, const Real* dout, const MoeActs<Real>& a,
                           MoeScratch<Real>& s) {
    for (std::int64_t r = 0; r < d.rows(); ++r) {
      const std::int64_t i = a.token_of[at(r)], slot = i * d.k + a.slot_of[at(r)];
      Real dot = 0;
      for (std::int64_t j = 0; j < d.c; ++j)
        s.dy[at(r * d.c + j)] = a.weight[at(slot)] * dout[i * d.c + j], dot += dout[i * d.c + j] * a.y[at(r * d.c + j)];
      s.dweight[at(slot)] = dot;
    }
  }
  static void reserve_grads(const Ctx&, const MoeDims& d, const MoeActs<Real>& a, MoeScratch<Real>& s) {
    s.ex_dy.resize(at(a.expert_rows() * d.c)), s.ex_dx.resize(at(a.expert_rows() * d.c));
  }
  static void prepare_expert_grads(const Ctx&, const MoeDims& d, const MoeActs<Real>& a, MoeScratch<Real>& s) {
    s.dact.assign(at(a.expert_rows() * d.f), Real(0)), s.dh.assign(at(a.expert_rows() * 2 * d.f), Real(0));
  }
  static void to_tokens(const Ctx&, const MoeDims& d, const MoeActs<Real>& a, const Real* dxr, Real* dx) {
    for (std::int64_t r = 0; r < d.rows(); ++r)
      for (std::int64_t j = 0; j < d.c; ++j) dx[a.token_of[at(r)] * d.c + j] += dxr[r * d.c + j];
  }
  static const Real* router_backward(const Ctx& ctx, const MoeDims& d, const MoeActs<Real>& a, MoeScratch<Real>& s) {
    moe_router_backward(d, a, s.dweight.data(), *ctx.aux, s.dprobs.data(), s.dlogits.data());
    return s.dlogits.data();
  }
};

}  // namespace

template <class Real>
void moe_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* x, Real* out, MoeActs<Real>& a,
                 OpProfiler* prof, int module, ExpertExchange* comm) {
  moe_sequence::forward<CpuMoePolicy<Real>>({prof, module, comm, nullptr}, d, p, x, out, a);
}

template <class Real>
void moe_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g, const Real* x,
                  const Real* dout, const MoeActs<Real>& a, const MoeAuxGrad<Real>& aux, Real* dx, MoeScratch<Real>& s,
                  OpProfiler* prof, int module, ExpertExchange* comm) {
  moe_sequence::backward<CpuMoePolicy<Real>>({prof, module, comm, &aux}, d, p, g, x, dout, a, s, dx);
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
