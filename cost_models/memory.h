// cost_models/memory.h — analytic per-GPU memory: parameters, gradients and optimizer state for DDP,
// ZeRO-1 / distributed optimizer, ZeRO-2, ZeRO-3 (FSDP) and HSDP under a mixed-precision policy;
// activations saved per block for recompute none / selective / full (Korthikanti et al. 2022, Table 2,
// itemised per tensor) and torchtitan's op-level selective AC, with TP, SP and CP; logits and loss;
// transient unsharded units; NCCL buffers, CUDA context and allocator headroom. Leaves out
// fragmentation beyond a fixed headroom fraction and CPU offload.
#pragma once

#include <cstdint>

#include "core/data_placement.h"
#include "core/dtype.h"
#include "core/model_spec.h"

namespace fsdpx {

enum class ShardingMode { ddp, zero1, zero2, zero3, hsdp };  // zero3 = FSDP full shard
// selective: Korthikanti et al. 2022 §5; selective_op: torchtitan's op-level SAC (cost_models/op_sac.h).
enum class Recompute { none, selective, full, selective_op };

const char* sharding_mode_name(ShardingMode m);
// The ZeRO stage of a plan's placements: replicated parameters and gradients are DDP, replicated
// parameters with sharded gradients ZeRO-1, sharded parameters kept from forward to backward ZeRO-2,
// otherwise ZeRO-3 (HSDP when replicated across dp_replicate).
ShardingMode sharding_mode(const DataPlacement& p);
const char* recompute_name(Recompute r);

struct PrecisionPolicy {
  DType param = DType::bf16;   // parameters as all-gathered and used in compute
  DType reduce = DType::bf16;  // gradients as reduced and kept
  bool fp32_master = true;     // keep an fp32 master copy (in the optimizer state)
};

// Bytes per parameter of each kind of state before sharding. Adam keeps m and v in fp32.
struct StateBytesPerParam {
  double params = 0, grads = 0, optimizer = 0;
};
StateBytesPerParam state_bytes_per_param(const PrecisionPolicy& p);

struct StateBytes {
  double params = 0, grads = 0, optimizer = 0;
  double total() const { return params + grads + optimizer; }
};

// Per-GPU model state for `params` parameters (already divided by TP/PP) sharded over `shard_ranks`
// (the dp_shard degree; for DDP ignored). ZeRO paper (Rajbhandari et al. SC20) with the default policy:
// DDP 16P, ZeRO-1 4P + 12P/N, ZeRO-2 2P + 14P/N, ZeRO-3 and HSDP 16P/N.
StateBytes model_state_bytes(double params, ShardingMode mode, int shard_ranks, const PrecisionPolicy& p);

// FSDP2's accounting of the same state (MixedPrecisionPolicy, pytorch/pytorch
// torch/distributed/fsdp/_fully_shard/_fsdp_api.py, with torchtitan's defaults param bf16 and reduce
// fp32, torchtitan/config/configs.py): with fp32
// master weights the fp32 shard is the master and gradients are kept sharded in fp32, 16P/N whatever
// the reduce dtype; without a master it equals ZeRO-3.
StateBytes fsdp2_state_bytes(double params, int shard_ranks, const PrecisionPolicy& p);

struct ActivationShape {
  std::int64_t micro_batch = 1;
  std::int64_t seq = 1;
  int tp = 1;
  int cp = 1;
  bool sequence_parallel = false;
  double act_bytes = 2;          // bytes per activation element (bf16)
  bool flash_attention = true;   // no s×s score/softmax tensors saved
  bool dropout = false;          // GPT-3-style dropout masks and outputs (Korthikanti's setting)
  bool fused_loss = false;       // one-pass cross-entropy (stack_costs.h LossImpl::fused)
  bool eager_norm_fp32 = false;  // torchtitan's eager RMSNorm: saves an fp32 copy of its input
  bool attention_copies = false; // SDPA's output beside its contiguous copy
  bool repeat_kv = false;        // SDPA saves K and V expanded to every query head (repeat_kv)
  bool compiled = false;         // torch.compile: only what the backward graph reads is saved
  bool eager_swiglu = false;     // silu(w1 x) * w3 x as eager ops: silu's output is saved as well
};

// Bytes one block saves for its backward pass on one rank.
double block_activation_bytes(const ModelSpec& m, const ActivationShape& s, Recompute r);
// Bytes of the block's working set while recomputing / running backward on top of saved bytes
// (full recompute re-materialises one block's activations at a time).
double block_backward_working_bytes(const ModelSpec& m, const ActivationShape& s);
// Token ids (and the embedding dropout mask) kept for the embedding's backward; the final norm's input
// and output (the head's input) and its statistics; the eager cross-entropy's fp32 log-probs kept from
// the loss forward to its backward, and the two fp32 logits-sized gradients of its backward.
double embedding_activation_bytes(const ModelSpec& m, const ActivationShape& s);
double final_norm_activation_bytes(const ModelSpec& m, const ActivationShape& s);
double logits_bytes(const ModelSpec& m, const ActivationShape& s);
double logits_backward_working_bytes(const ModelSpec& m, const ActivationShape& s);
// The logits in the activation dtype that the eager loss upcasts to fp32 and frees before the backward
// (torchtitan's cross_entropy on pred.float(), then "del pred"): a hole below the log-probabilities that
// the fp32 gradients of the loss backward are too large to reuse (cost_models/caching_allocator.h). 0
// for a fused loss or fp32 logits.
double eager_loss_hole_bytes(const ModelSpec& m, const ActivationShape& s);

// What a weight-gradient pass needs when it runs apart from the input-gradient pass (ZB's W, Qi et al.
// 2023 §2, Table 1: a block's M_W = 32·sbh for GPT): the inputs of the module's matmuls and the
// gradients at their outputs, kept from B to W. Embedding: token ids and the output gradient; head: its
// input and the logits gradient in the activation dtype.
double block_weight_grad_bytes(const ModelSpec& m, const ActivationShape& s);
double embedding_weight_grad_bytes(const ModelSpec& m, const ActivationShape& s);
double head_weight_grad_bytes(const ModelSpec& m, const ActivationShape& s);

// Fixed overheads: CUDA context, NCCL buffers (NVIDIA/nccl issues #864, #964) and the caching
// allocator's reserve (GMLake, arXiv 2401.08156).
struct OverheadBytes {
  double cuda_context = 0;
  double nccl_buffers = 0;
  double allocator_headroom = 0;
  double total() const { return cuda_context + nccl_buffers + allocator_headroom; }
};
// `communicators`: active NCCL communicators; `churn_bytes`: what the step allocates and frees
// (allocator_headroom_bytes below).
OverheadBytes overhead_bytes(int communicators, double churn_bytes);
// The caching allocator's reserve beyond the peak of a step: the same fraction, of the bytes that are
// allocated and freed during the step (activations, unsharded parameters and gradients, working
// sets). State allocated once at start in exact sizes (sharded parameters, gradients, optimizer state)
// leaves no fragments.
double allocator_headroom_bytes(double churn_bytes);

}  // namespace fsdpx
