// executor/model/moe_mlp.h — the mixture-of-experts MLP of a CPU block, forward and hand-written backward,
// as Hugging Face's MixtralSparseMoeBlock (transformers, models/mixtral/modeling_mixtral.py): router logits
// x·Wrᵀ, softmax over all experts, the top_k experts per token (weights renormalised to sum to 1 when
// norm_topk_prob), each routed token through its expert's bias-free SwiGLU (w2(silu(w1 x) * w3 x)), the
// weighted outputs summed; dropless. DeepSeek-V3's block (transformers, models/deepseek_v3/
// modeling_deepseek_v3.py, DeepseekV3TopkRouter and DeepseekV3MoE) differs only in routing and in a shared
// expert: sigmoid scores; selection by score + e_score_correction_bias (the bias selects, it never weights),
// restricted to the topk_groups groups of experts whose two best biased scores sum highest (masked
// scores set to 0, as get_topk_indices); the selected scores renormalised (+1e-20) when norm_topk, times
// routed_scaling_factor; the shared experts (one SwiGLU moe_intermediate_size x n_shared_experts wide)
// added on every token. The bias is an input here: how DeepSeek-V3 updates it (§2.1.2, auxiliary-loss-free
// balancing) is left out (moe_aux_loss.h). Under expert parallelism (ep > 1) the rank holds experts / ep of
// them and the routed rows travel to their expert's rank and back (moe_exchange.h); the shared expert is
// whole on every rank. Leaves out capacity factors and Qwen2-MoE's shared-expert gate; the load-balancing
// loss's statistics are recorded here and the loss itself is moe_aux_loss.h's.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/expert_exchange.h"
#include "executor/model/moe_dims.h"
#include "executor/model/op_profiler.h"

namespace fsdpx {

// out [N, C] = Σ_slot weight · expert(x) for x [N, C]; fills `a`. `comm` carries the ep group's
// dispatch and combine (null at ep 1).
template <class Real>
void moe_forward(const MoeDims& d, const MoeTensors<const Real*>& p, const Real* x, Real* out, MoeActs<Real>& a,
                 OpProfiler* prof, int module, ExpertExchange* comm = nullptr);

// dx [N, C] += the gradient w.r.t. x from dout [N, C] (w.r.t. out) and the load-balancing loss's
// gradient w.r.t. the probabilities (`aux`). Parameter gradients accumulate (+=); under ep > 1 the local
// experts' from every row the ep group routed to them (the routed rows' gradients travel as in forward).
template <class Real>
void moe_backward(const MoeDims& d, const MoeTensors<const Real*>& p, const MoeTensors<Real*>& g, const Real* x,
                  const Real* dout, const MoeActs<Real>& a, const MoeAuxGrad<Real>& aux, Real* dx, MoeScratch<Real>& s,
                  OpProfiler* prof, int module, ExpertExchange* comm = nullptr);

}  // namespace fsdpx
