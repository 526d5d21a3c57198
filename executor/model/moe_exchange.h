// executor/model/moe_exchange.h — expert parallelism's token exchange around the experts of an MoE MLP
// over a backend's ExpertExchange (expert_exchange.h): the CPU's (moe_mlp.h) moves host rows here; the
// CUDA backend plans here (moe_plan_dispatch) and moves its rows on the device. The routed rows, in
// expert-major order, go to the ep rank holding their expert (dispatch) and the experts' outputs come back
// to the token's rank in the order they left (combine); in backward
// the combine's gradient dispatches and the dispatch's gradient combines, as torchtitan's
// all_to_all_single pair (torchtitan/distributed/expert_parallel.py) and Megatron-Core's
// MoEAlltoAllTokenDispatcher. Each is a variable-count all-to-all on the ep group after an exchange of
// the per-expert row counts. At ep 1 nothing moves: the experts read the rank's own rows. Leaves out
// capacity (dropless) and overlapping the exchange with compute.
#pragma once

#include "executor/model/expert_exchange.h"
#include "executor/model/moe_dims.h"

namespace fsdpx {

// Fills r.send_rows, r.recv_rows and r.chunks from the routing (r.first_row), at ep > 1 after exchanging
// the per-expert row counts over the ep group: the dispatch's plan, which every backend shares.
template <class Real>
void moe_plan_dispatch(const MoeDims& d, MoeRoutes<Real>& r, ExpertExchange* comm);

// moe_plan_dispatch, then at ep > 1 moves a.xr [N·k, C] to the experts' side a.ex_x [R, C] (sized here),
// received rows grouped by source rank, then by local expert.
template <class Real>
void moe_dispatch(const MoeDims& d, MoeActs<Real>& a, ExpertExchange* comm);

// ep > 1: the experts' outputs a.ex_y [R, C] back to their tokens' ranks, as a.y [N·k, C].
template <class Real>
void moe_combine(const MoeDims& d, MoeActs<Real>& a, ExpertExchange* comm);

// Backward, ep > 1: the routed rows' output gradients dy [N·k, C] to the experts' side ex_dy [R, C] (the
// forward dispatch's counts), and the experts' input gradients ex_dx [R, C] back as dxr [N·k, C].
template <class Real>
void moe_dispatch_grads(const MoeDims& d, const MoeActs<Real>& a, const Real* dy, Real* ex_dy, ExpertExchange* comm);
template <class Real>
void moe_combine_grads(const MoeDims& d, const MoeActs<Real>& a, const Real* ex_dx, Real* dxr, ExpertExchange* comm);

}  // namespace fsdpx
