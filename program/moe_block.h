// program/moe_block.h — what a mixture-of-experts block adds to the step program: its kernels (dense MLP
// replaced by router, permutation, grouped experts, shared experts), its dispatch/combine all-to-alls on
// the ep group (serial in the block's ops, as torchtitan's and Megatron-Core's dispatchers run them), its
// experts' gathered and sharded parameters (gathered over their own efsdp group) and routed activations.
// Leaves out DeepEP-style overlap and fp8 experts.
#pragma once

#include <vector>

#include "core/plan.h"
#include "cost_models/compute.h"
#include "cost_models/memory.h"
#include "program/step_program.h"

namespace fsdpx {

// Module i (module_names order) is a block of an MoE model past its dense_layers leading blocks.
bool is_moe_block(const Plan& plan, int module);

// The kernels of module i's block for pass p: block_kernels for a dense block; for an MoE block the
// same minus its dense MLP (mlp_up, w1, w3, the activation, mlp_down and the up-projections' gradient
// sum), plus moe_mlp_kernels on the slowest ep rank's routed load.
std::vector<KernelWork> block_kernels_of(const Plan& plan, int module, const LayerShape& s, Pass p);

// The dispatch and combine all-to-alls of one pass of an MoE block on the ep group (`ep_group`, an index
// into StepProgram::groups; none when -1, ep 1): two in forward (dispatch, combine), two in backward
// (their gradients: the combine's backward dispatches, the dispatch's backward combines). Bytes are
// nccl-tests' S of the slowest rank: tokens x top_k x hidden x the param dtype's bytes (the dispatch
// dtype) x min(imbalance, ep) (cost_models/expert_dispatch.h).
void add_moe_all_to_alls(std::vector<SerialCollective>& out, const Plan& plan, int ep_group, int module);

// Parameters of each module (module_names order) one rank gathers for an MoE model, before tp: the
// counts of cost_models/moe_params.h with each MoE block's routed experts cut to experts / ep.
std::vector<double> moe_module_params(const Plan& plan);

// Per unit, the local routed experts' parameters of its MoE blocks after tp (experts / ep each; 0 for
// dense models and ep 1): the part of unit_params the lowering all-gathers and reduce-scatters over the
// experts' own FSDP group (GroupKind::efsdp, dp_shard x cp / ep ranks) rather than dp_shard.
std::vector<double> unit_expert_params(const Plan& plan);

// Per unit, the parameters whose sharded state a rank holds x its shard ranks (dp_shard x cp, Parallelism::
// shard_ranks), after tp: unit_params with each MoE block's local routed experts x ep, so that dividing by
// dp_shard x cp gives local experts / (dp_shard x cp / ep), torchtitan's expert FSDP group
// (core/expert_parallel.h). unit_params for dense models.
std::vector<double> unit_state_params(const Plan& plan);

// Activations an MoE block saves for backward on the slowest ep rank: block_activation_bytes without the
// dense MLP's inner tensors (the block with ffn_hidden 0), plus the routed rows' saved tensors
// (cost_models/expert_memory.h) unless the block recomputes fully (then only its input is kept).
double moe_block_activation_bytes(const Plan& plan, const ActivationShape& a, Recompute r);

// Transient bytes of one MoE block's token exchange on the slowest ep rank, 0 at ep 1 (nothing moves): the
// permuted send buffer of the rank's routed rows and the rows it receives (cost_models/expert_memory.h
// dispatch_buffers), alive in forward from the dispatch until the received rows are copied into
// expert-major order (torchtitan/distributed/expert_parallel.py ExpertParallel._token_dispatch: the
// all_to_all_single_autograd output, then _permute's copy, which the grouped GEMM saves); the backward's
// two exchanges move the gradients through buffers of the same sizes (Megatron-Core's
// MoEAlltoAllTokenDispatcher likewise: permute, all-to-all, sort_chunks_by_idxs).
double moe_dispatch_buffer_bytes(const Plan& plan);

}  // namespace fsdpx
