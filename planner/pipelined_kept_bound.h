// planner/pipelined_kept_bound.h — a memory lower bound for a configured pipelined plan that keeps every
// unit gathered (reshard_after_forward 0 on every unit) and reduces its gradients once per step: such a
// stage gathers each unit once per step and reduces each unit's gradient after its last backward
// (program/lower_units.cpp; PyTorch's pipeline stage keeps FSDP2's parameters unsharded and its gradients
// unreduced until the last backward, torch/distributed/pipelining/stage.py backward_maybe_with_nosync),
// so when a rank's last unit to start a backward starts it (chunk 0's first unit, micro-batch 0), the
// rank holds every unit gathered, every block unit's unsharded gradient, and the saved activations of
// every block of the micro-batches its schedule has forwarded but not yet backwarded
// (program/pipeline_schedule.h pipeline_actions; the compute stream runs them in that order). The worst
// rank's state (rank_state.h) and the fixed overheads of its two pipeline communicators are added. The
// shape bound (memory_bound.h) counts one gathered block per chunk, a tenth of this on Llama-3.1-405B's
// pp 4 interleaved stages. Leaves out (bound 0): ZB's split backward, interleaved steps of pp
// micro-batches or fewer (the last chunk's last backward and its reduction come before chunk 0's first),
// one micro-batch, MoE models, LoRA, unsharded parameters, any unit resharded; and, where it applies, the
// embedding's and head's activations, the working bytes and the allocator's headroom, which only add.
#pragma once

#include <vector>

#include "core/plan.h"

namespace fsdpx {

// Per pipeline rank what the bound holds; empty where it does not apply. Built once per configured plan
// (backward_gather_bound.h holds one), read per recompute pattern.
struct PipelinedKeptBound {
  std::vector<double> held_bytes;           // per rank: state, overheads, gathers, gradients
  std::vector<std::vector<int>> in_flight;  // per rank, per block: its micro-batches held (0: not on it)
  std::vector<double> saved_bytes;          // per RecomputeMode: one block's saved activations
};

PipelinedKeptBound pipelined_kept_bound(const Plan& plan);

// The bound's bytes for `recompute` (one mode per block): the worst rank's; 0 where it does not apply.
double pipelined_kept_bytes(const PipelinedKeptBound& b, const std::vector<RecomputeMode>& recompute);

}  // namespace fsdpx
