// program/lower.h — lowering: plan -> step program. Turns FSDP units, prefetch depths, the all-gather
// in-flight cap, reshard_after_forward, recompute, gradient accumulation, the data-parallel placements
// (core/data_placement.h: FSDP full shard, shard-grad-op, HSDP, DDP, ZeRO-1) and TP/CP into explicit ops
// with dependencies, memory effects and state effects, following FSDP2's schedule (pytorch/pytorch,
// torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py and _fsdp_collectives.py): forward
// all-gathers run ahead of use on their own stream, backward prefetches in reverse order,
// reduce-scatters run on their own stream after each unit's backward. Pipeline parallelism (pp > 1) is
// rejected until the pipeline issue adds stages and point-to-point sends.
#pragma once

#include <cstdint>

#include "core/plan.h"
#include "program/segment_work.h"
#include "program/step_program.h"

namespace fsdpx {

// The program holds every micro-batch's ops, so its size grows with gradient accumulation: beyond this
// many micro-batches per step (docs/input-ranges.md) lowering refuses rather than running for minutes.
inline constexpr std::int64_t kMaxLoweredMicroBatches = 4096;

// Builds the program of one step (untimed: durations are filled by time_program). Throws ConfigError
// "plan: <path>: ..." for plans it cannot lower (pp > 1, more than kMaxLoweredMicroBatches).
StepProgram lower(const Plan& plan);

}  // namespace fsdpx
