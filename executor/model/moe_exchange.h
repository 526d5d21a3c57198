// executor/model/moe_exchange.h — expert parallelism's token exchange around the experts of an MoE MLP:
// its plan, shared by the backends, over a backend's ExpertExchange (expert_exchange.h); the rows then
// move in the shared sequence's exchange steps (moe_sequence.h: host rows on the CPU, device rows on CUDA).
// The routed rows, in expert-major order, go to the ep rank holding their expert (dispatch) and the
// experts' outputs come back to the token's rank in the order they left (combine); in backward the
// combine's gradient dispatches and the dispatch's gradient combines, as torchtitan's all_to_all_single
// pair (torchtitan/distributed/expert_parallel.py) and Megatron-Core's MoEAlltoAllTokenDispatcher. Each is
// a variable-count all-to-all on the ep group after an exchange of the per-expert row counts. At ep 1
// nothing moves: the experts read the rank's own rows. Leaves out capacity (dropless) and overlapping the
// exchange with compute.
#pragma once

#include "executor/model/expert_exchange.h"
#include "executor/model/moe_dims.h"

namespace fsdpx {

// Fills r.send_rows, r.recv_rows and r.chunks from the routing (r.first_row), at ep > 1 after exchanging
// the per-expert row counts over the ep group: the dispatch's plan, which every backend shares.
template <class Real>
void moe_plan_dispatch(const MoeDims& d, MoeRoutes<Real>& r, ExpertExchange* comm);

}  // namespace fsdpx
