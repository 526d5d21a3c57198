// executor/model/moe_mlp.h — the mixture-of-experts MLP of a CPU block, forward and hand-written backward,
// as Hugging Face's MixtralSparseMoeBlock (transformers, models/mixtral/modeling_mixtral.py): router logits
// x·Wrᵀ, softmax over all experts, the top_k experts per token (weights renormalised to sum to 1 when
// norm_topk_prob), each routed token through its expert's bias-free SwiGLU (w2(silu(w1 x) * w3 x)), the
// weighted outputs summed; dropless. Under expert parallelism (ep > 1) the rank holds experts / ep of
// them and the routed rows travel to their expert's rank and back (moe_exchange.h). Leaves out capacity
// factors, sigmoid scoring and shared experts; the load-balancing loss's statistics are recorded here and
// the loss itself is moe_aux_loss.h's.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/op_profiler.h"

namespace fsdpx {
class ModelComm;
}

namespace fsdpx {

// One MoE MLP's sizes on one rank: n tokens of width c, e experts of ffn f each, top k per token; under
// expert parallelism rank ep_rank of ep holds the local experts [ep_rank·e/ep, (ep_rank+1)·e/ep).
struct MoeDims {
  std::int64_t n = 0, c = 0, e = 0, k = 0, f = 0;
  bool norm_topk = false;
  int ep = 1, ep_rank = 0;
  std::int64_t rows() const { return n * k; }  // routed (token, expert) pairs
  std::int64_t local_experts() const { return e / ep; }
};
MoeDims make_moe_dims(const ModelSpec& m, std::int64_t tokens, int ep = 1, int ep_rank = 0);

// A run of routed rows on the experts' side that one local expert computes: rows [r0, r0 + rows).
struct ExpertChunk {
  std::int64_t expert = 0;  // local index
  std::int64_t r0 = 0, rows = 0;
};

// The MoE block's tensors inside its module buffer (param_layout.cpp): router [E, C]; experts' up
// projections [E·2F, C] (expert e's rows e·2F.. as [gate | up]); their down projections [E·C, F]. Under
// expert parallelism up_w and down_w hold the local experts only ([E/ep·2F, C], [E/ep·C, F]).
template <class P>
struct MoeTensors {
  P router_w = nullptr, up_w = nullptr, down_w = nullptr;
};

// What the forward keeps for backward. Routed rows are in expert-major order (expert 0's tokens in token
// order, then expert 1's, ...), as the grouped GEMMs read them.
template <class Real>
struct MoeActs {
  std::vector<Real> probs;                // [N, E] softmax of the router logits
  std::vector<std::int32_t> expert;       // [N, k] selected experts, by descending probability
  std::vector<Real> weight;               // [N, k] their combine weights (renormalised when norm_topk)
  std::vector<std::int64_t> row_of;       // [N, k] routed row of (token, slot)
  std::vector<std::int64_t> first_row;    // [E + 1] expert e's rows [first_row[e], first_row[e+1])
  std::vector<std::int64_t> token_of;     // [N·k] token of each routed row
  std::vector<std::int64_t> slot_of;      // [N·k] its slot among the token's k
  std::vector<Real> xr, y;                // [N·k, C] routed inputs and their experts' outputs
  // The experts' side: R rows (the rank's own N·k at ep 1; those the ep group dispatched to its experts
  // otherwise, moe_exchange.h), in `chunks`. ex_x and ex_y are empty at ep 1 (xr and y serve).
  std::vector<ExpertChunk> chunks;
  std::vector<std::int64_t> send_rows, recv_rows;  // [ep] rows dispatched to / received from each ep rank
  std::vector<Real> ex_x, h, act, ex_y;   // [R, C] inputs, [R, 2F] up outputs, [R, F], [R, C] outputs
  std::vector<Real> count, prob_sum;      // [E] load-balancing statistics: Σ_n,slot [expert = e], Σ_n probs
  std::int64_t expert_rows() const { return chunks.empty() ? 0 : chunks.back().r0 + chunks.back().rows; }
  void allocate(const MoeDims& d);
};

// Gradient scratch of one MoE MLP (overwritten per block).
template <class Real>
struct MoeScratch {
  std::vector<Real> dy, dxr, dprobs, dlogits;  // [N·k, C], [N·k, C], [N, E], [N, E]
  std::vector<Real> ex_dy, dact, dh, ex_dx;    // experts' side: [R, C] (ep > 1), [R, F], [R, 2F], [R, C] (ep > 1)
  void allocate(const MoeDims& d);
};

// out [N, C] = Σ_slot weight · expert(x) for x [N, C]; fills `a`. `comm` carries the ep group's
// dispatch and combine (null at ep 1).
template <class Real>
void moe_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* x, Real* out, MoeActs<Real>& a,
                 OpProfiler* prof, int module, ModelComm* comm = nullptr);

// dx [N, C] += the gradient w.r.t. x from dout [N, C] (w.r.t. out) and, when aux_dprob is set, the
// load-balancing loss's gradient w.r.t. the probabilities: d aux / d probs[n, e] = aux_dprob[e] for every n
// (moe_aux_loss.h). Parameter gradients accumulate (+=); under ep > 1 the local experts' from every row
// the ep group routed to them (the routed rows' gradients travel as in forward).
template <class Real>
void moe_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g, const Real* x,
                  const Real* dout, const MoeActs<Real>& a, const Real* aux_dprob, Real* dx, MoeScratch<Real>& s,
                  OpProfiler* prof, int module, ModelComm* comm = nullptr);

}  // namespace fsdpx
