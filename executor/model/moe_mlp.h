// executor/model/moe_mlp.h — the mixture-of-experts MLP of a CPU block, forward and hand-written backward,
// as Hugging Face's MixtralSparseMoeBlock (transformers, models/mixtral/modeling_mixtral.py): router logits
// x·Wrᵀ, softmax over all experts, the top_k experts per token (weights renormalised to sum to 1 when
// norm_topk_prob), each routed token through its expert's bias-free SwiGLU (w2(silu(w1 x) * w3 x)), the
// weighted outputs summed; dropless. Leaves out capacity factors, sigmoid scoring, shared experts and
// expert parallelism's token exchange (the experts here are all on the rank); the load-balancing loss's
// statistics are recorded here and the loss itself is moe_aux_loss.h's.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/op_profiler.h"

namespace fsdpx {

// One MoE MLP's sizes on one rank: n tokens of width c, e experts of ffn f each, top k per token.
struct MoeDims {
  std::int64_t n = 0, c = 0, e = 0, k = 0, f = 0;
  bool norm_topk = false;
  std::int64_t rows() const { return n * k; }  // routed (token, expert) pairs
};
MoeDims make_moe_dims(const ModelSpec& m, std::int64_t tokens);

// The MoE block's tensors inside its module buffer (param_layout.cpp): router [E, C]; experts' up
// projections [E·2F, C] (expert e's rows e·2F.. as [gate | up]); their down projections [E·C, F].
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
  std::vector<Real> xr, h, act, y;        // [N·k, C] inputs, [N·k, 2F] up outputs, [N·k, F], [N·k, C] outputs
  std::vector<Real> count, prob_sum;      // [E] load-balancing statistics: Σ_n,slot [expert = e], Σ_n probs
  void allocate(const MoeDims& d);
};

// Gradient scratch of one MoE MLP (overwritten per block).
template <class Real>
struct MoeScratch {
  std::vector<Real> dy, dact, dh, dxr, dprobs, dlogits;  // [N·k, C], [N·k, F], [N·k, 2F], [N·k, C], [N, E], [N, E]
  void allocate(const MoeDims& d);
};

// out [N, C] = Σ_slot weight · expert(x) for x [N, C]; fills `a`.
template <class Real>
void moe_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* x, Real* out, MoeActs<Real>& a,
                 OpProfiler* prof, int module);

// dx [N, C] += the gradient w.r.t. x from dout [N, C] (w.r.t. out) and, when aux_dprob is set, the
// load-balancing loss's gradient w.r.t. the probabilities: d aux / d probs[n, e] = aux_dprob[e] for every n
// (moe_aux_loss.h). Parameter gradients accumulate (+=).
template <class Real>
void moe_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g, const Real* x,
                  const Real* dout, const MoeActs<Real>& a, const Real* aux_dprob, Real* dx, MoeScratch<Real>& s,
                  OpProfiler* prof, int module);

}  // namespace fsdpx
