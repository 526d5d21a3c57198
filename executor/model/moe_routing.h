// executor/model/moe_routing.h — a mixture-of-experts MLP's routing, computed on the host by every backend
// so that the CPU and CUDA backends select the same experts (ties included) and see the same balance loss:
// the router scores from the logits (Mixtral's softmax over the experts; DeepSeek-V3's sigmoid), the top k
// per token (DeepSeek-V3: by score + correction bias within the best topk_groups groups), the combine
// weights, the expert-major row order and the load-balancing statistics; and backward, the router logits'
// gradient from the combine weights' and the balance loss's. Sources as moe_mlp.h (transformers'
// MixtralSparseMoeBlock, DeepseekV3TopkRouter; DeepSeek-V3 technical report §2.1.2). Leaves out the router
// GEMM and the experts (each backend's) and capacity limits (dropless).
#pragma once

#include "executor/model/moe_dims.h"

namespace fsdpx {

// r.probs [N, E] holds the router logits on entry and their scores on exit; fills r's selection, weights,
// row order and statistics. score_bias [E] (DeepSeek-V3's correction bias; may be null) selects only.
template <class Real>
void moe_route(const MoeDims& d, const Real* score_bias, MoeRoutes<Real>& r);

// dlogits [N, E] (written) from dweight [N·k] (d loss / d combine weight per (token, slot)) and the
// load-balancing loss's gradient; dprobs [N, E] is scratch.
template <class Real>
void moe_router_backward(const MoeDims& d, const MoeRoutes<Real>& r, const Real* dweight, const MoeAuxGrad<Real>& aux,
                         Real* dprobs, Real* dlogits);

}  // namespace fsdpx
