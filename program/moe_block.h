// program/moe_block.h — what a mixture-of-experts block adds to the step program: its kernels (the
// block's attention and norms as block_kernels has them, its dense MLP replaced by the router, the
// permutation, the grouped expert GEMMs and the shared experts of cost_models/expert_compute.h) and its
// dispatch and combine all-to-alls on the ep group, serial inside the block's forward and backward ops
// as torchtitan's and Megatron-Core's all-to-all dispatchers run them on the compute stream. Leaves out
// DeepEP-style overlap of the all-to-alls with compute, and fp8 expert GEMMs.
#pragma once

#include <vector>

#include "core/plan.h"
#include "cost_models/compute.h"
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
// counts of cost_models/moe_params.h with each MoE block's routed experts cut to experts / ep. Leaves
// out that FSDP shards those experts over dp_shard x cp / ep ranks rather than dp_shard: the lowering
// all-gathers a unit over dp_shard, so plans with MoE models stay refused until it splits the gather.
std::vector<double> moe_module_params(const Plan& plan);

}  // namespace fsdpx
