// executor/model/moe_dims.h — a mixture-of-experts MLP's sizes, tensor places and buffers, the
// device-neutral part of the MoE block (executor/model/moe_mlp.h) that the CPU and CUDA backends both
// take: the routing configuration (Mixtral's softmax top-k; DeepSeek-V3's sigmoid scores, correction bias,
// groups, routed scale and shared expert), the experts' chunks of routed rows, what forward keeps and the
// backward scratch, and the load-balancing gradient's form. Leaves out the math (moe_mlp.h, the routing).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"

namespace fsdpx {

// One MoE MLP's sizes on one rank: n tokens of width c, e experts of ffn f each, top k per token; under
// expert parallelism rank ep_rank of ep holds the local experts [ep_rank·e/ep, (ep_rank+1)·e/ep).
// DeepSeek-V3's routing: sigmoid scoring, the correction bias, g groups of which topk_groups are eligible,
// the routed scale, a shared expert sf wide (0: none), and the sequence-wise balance loss over sequences
// of t tokens (n = B·t).
struct MoeDims {
  std::int64_t n = 0, c = 0, e = 0, k = 0, f = 0;
  bool norm_topk = false;
  int ep = 1, ep_rank = 0;
  RouterScoring scoring = RouterScoring::softmax;
  bool score_bias = false;  // MoeTensors::score_bias is read (selection only)
  std::int64_t groups = 1, topk_groups = 1;
  double routed_scaling = 1.0;
  std::int64_t sf = 0;  // shared experts' width: shared_experts x shared_ffn_hidden
  std::int64_t t = 0;   // tokens per sequence (0: all n are one sequence)
  std::int64_t rows() const { return n * k; }  // routed (token, expert) pairs
  std::int64_t local_experts() const { return e / ep; }
  std::int64_t seq_len() const { return t > 0 ? t : n; }
  std::int64_t sequences() const { return n / seq_len(); }
  bool sigmoid() const { return scoring == RouterScoring::sigmoid; }
};
// seq: tokens per sequence of the micro-batch (0: one sequence of `tokens`).
MoeDims make_moe_dims(const ModelSpec& m, std::int64_t tokens, int ep = 1, int ep_rank = 0, std::int64_t seq = 0);

// A run of routed rows on the experts' side that one local expert computes: rows [r0, r0 + rows).
struct ExpertChunk {
  std::int64_t expert = 0;  // local index
  std::int64_t r0 = 0, rows = 0;
};

// The MoE block's tensors inside its module buffer (param_layout.cpp): router [E, C]; experts' up
// projections [E·2F, C] (expert e's rows e·2F.. as [gate | up]); their down projections [E·C, F]. Under
// expert parallelism up_w and down_w hold the local experts only ([E/ep·2F, C], [E/ep·C, F]).
// DeepSeek-V3: the correction bias [E] (gets no gradient), the shared expert's up [2·SF, C] and down [C, SF].
template <class P>
struct MoeTensors {
  P router_w = nullptr, up_w = nullptr, down_w = nullptr;
  P score_bias = nullptr, shared_up_w = nullptr, shared_down_w = nullptr;
};

// The routing of one forward, which every backend computes on the host (moe_routing.h) and keeps for
// backward and the load-balancing loss. Routed rows are in expert-major order (expert 0's tokens in token
// order, then expert 1's, ...), as the grouped GEMMs read them.
template <class Real>
struct MoeRoutes {
  std::vector<Real> probs;                // [N, E] softmax (sigmoid) of the router logits
  std::vector<std::int32_t> expert;       // [N, k] selected experts, by descending probability
  std::vector<Real> weight;               // [N, k] their combine weights (renormalised when norm_topk, scaled)
  std::vector<std::int64_t> row_of;       // [N, k] routed row of (token, slot)
  std::vector<std::int64_t> first_row;    // [E + 1] expert e's rows [first_row[e], first_row[e+1])
  std::vector<std::int64_t> token_of;     // [N·k] token of each routed row
  std::vector<std::int64_t> slot_of;      // [N·k] its slot among the token's k
  // The experts' side: R rows (the rank's own N·k at ep 1; those the ep group dispatched to its experts
  // otherwise, moe_exchange.h), in `chunks`.
  std::vector<ExpertChunk> chunks;
  std::vector<std::int64_t> send_rows, recv_rows;  // [ep] rows dispatched to / received from each ep rank
  std::vector<Real> count, prob_sum;      // [E] load-balancing statistics: Σ_n,slot [expert = e], Σ_n probs
  std::vector<Real> seq_count;            // [B, E] sigmoid scoring: picks of e per sequence
  Real seq_balance = 0;                   // sigmoid scoring: (1/B) Σ_seq Σ_e f_e P_e (moe_aux_loss.h)
  std::int64_t expert_rows() const { return chunks.empty() ? 0 : chunks.back().r0 + chunks.back().rows; }
  void allocate(const MoeDims& d);
};

// What the CPU's forward keeps for backward: the routing and the rows on the host. (The CUDA backend keeps
// its rows on the device: cuda_backend/cuda_moe_buffers.h.)
template <class Real>
struct MoeActs : MoeRoutes<Real> {
  std::vector<Real> xr, y;                // [N·k, C] routed inputs and their experts' outputs
  std::vector<Real> ex_x, h, act, ex_y;   // [R, C] inputs, [R, 2F] up outputs, [R, F], [R, C] outputs (ex_*: ep > 1)
  std::vector<Real> sh_h, sh_act;         // [N, 2·SF], [N, SF] the shared expert's up output and SwiGLU
  void allocate(const MoeDims& d);
};

// Gradient scratch of one MoE MLP (overwritten per block).
template <class Real>
struct MoeScratch {
  std::vector<Real> dy, dxr, dprobs, dlogits;  // [N·k, C], [N·k, C], [N, E], [N, E]
  std::vector<Real> dweight;                    // [N·k] d loss / d combine weight per (token, slot)
  std::vector<Real> ex_dy, dact, dh, ex_dx;    // experts' side: [R, C] (ep > 1), [R, F], [R, 2F], [R, C] (ep > 1)
  std::vector<Real> sh_dact, sh_dh;            // [N, SF], [N, 2·SF] the shared expert's
  void allocate(const MoeDims& d);
};

// The load-balancing loss's gradient reaching one MoE block's router (moe_aux_loss.h): under softmax
// scoring d aux / d probs[n, e] = dprob[e] for every token (null: none); under sigmoid scoring the
// sequence-wise loss's dloss · alpha, the block computing its own per-token gradient from its statistics.
template <class Real>
struct MoeAuxGrad {
  const Real* dprob = nullptr;
  Real seq_scale = 0;
};

}  // namespace fsdpx
