// cost_models/expert_memory.h — per-GPU memory of the routed experts under ep x FSDP: each rank holds
// experts / ep experts per MoE block, FSDP-sharded over the experts' own group dp_shard x cp / ep
// (torchtitan's dp_shard_in_ep, core/expert_parallel.h), their width split by tp (etp = tp); and one MoE
// block's dispatch buffers and routed activations for one micro-batch on the slowest rank. Leaves out the
// non-expert parameters (cost_models/memory.h), recompute of the experts and NCCL's all-to-all buffers.
#pragma once

#include "core/model_spec.h"
#include "cost_models/expert_dispatch.h"
#include "cost_models/memory.h"

namespace fsdpx {

// Routed-expert parameters of the whole model on one rank before FSDP sharding: moe_layers x
// (experts / ep) x 3 x hidden x expert_ffn_hidden / tp (SwiGLU gate, up, down; Shazeer 2020).
double local_expert_params(const ModelSpec& m, const Parallelism& p);

// Their sharded state per GPU: fsdp2_state_bytes over expert_fsdp_ranks(p).
StateBytes expert_state_bytes(const ModelSpec& m, const Parallelism& p, const PrecisionPolicy& policy);

// One MoE block, one micro-batch, the slowest rank, in the activation dtype:
// dispatch: the permuted send buffer and the received rows (mean_rows and slowest_rows x hidden), alive
// from dispatch to combine; saved: what the block keeps for backward (the received rows, the expert
// inputs' gate and up outputs, 2 x rows x ffn/tp, and the SwiGLU product, rows x ffn/tp, as eager
// PyTorch's grouped GEMM path saves them; the combine's input rows x hidden), plus the router's
// fp32 scores tokens x experts.
struct RoutedActivationBytes {
  double dispatch_buffers = 0;
  double saved = 0;
};
RoutedActivationBytes routed_activation_bytes(const ModelSpec& m, const RoutedLoad& l, int tp, DType act);

}  // namespace fsdpx
