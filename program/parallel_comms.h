// program/parallel_comms.h — the tensor- and context-parallel collectives inside one module's forward or
// backward, exactly as the executor's CPU model issues them (executor/model/model_parallel.h; the
// runtime checks every compute op's collectives against these): Megatron-LM tensor parallelism with
// or without sequence parallelism, Megatron's all-gather of the qkv outputs when kv_heads < tp,
// vocabulary-parallel embedding and cross-entropy, the tp all-reduce of the gradients of tensors
// every tp rank holds whole, and context parallelism by all-gathering K and V (fsdpx's own: dK and dV
// reduce-scattered back; PyTorch's ring under torchtitan's stack: K and V as SDPA reads them, dK and dV
// sent on to the next rank in fp32 at every ring step). Leaves out overlapping them with compute (they are
// serial: Op::serial_comm_time_s), though PyTorch's ring issues each exchange before the SDPA it waits after.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"
#include "program/step_program.h"

namespace fsdpx {

// Module i of module_names(): 0 embedding, 1..L blocks, L+1 final norm, L+2 head.
enum class ModuleKind { embedding, block, final_norm, head };
ModuleKind module_kind(const Plan& plan, int module);

// Process groups of the step, as indices into StepProgram::groups (-1 when the axis has one rank).
struct StepGroups {
  int dp_shard = -1, dp_replicate = -1, dp_all = -1, tp = -1, cp = -1;
  int ep = -1;  // expert parallelism: the MoE blocks' all-to-alls (program/moe_block.h)
};

// The name profiles give a serial collective of the tp, cp or ep group (`axis`): "tp.all_gather.16384B".
std::string serial_collective_name(GroupKind axis, Collective kind, double bytes);

// Appends the collectives of one forward pass of `module` (a block re-running its forward under full
// recompute calls this again); an MoE block's all-to-alls come after its tp/cp collectives.
void add_forward_comms(std::vector<SerialCollective>& out, const Plan& plan, const StepGroups& g, int module);
// Appends the collectives of the backward of `module` (without its recompute).
void add_backward_comms(std::vector<SerialCollective>& out, const Plan& plan, const StepGroups& g, int module);

}  // namespace fsdpx
