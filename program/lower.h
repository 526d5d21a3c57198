// program/lower.h — lowering: plan -> step program. Turns FSDP units, prefetch depths, the all-gather
// in-flight cap, reshard_after_forward, recompute, gradient accumulation, the data-parallel placements
// (core/data_placement.h: FSDP full shard, shard-grad-op, HSDP, DDP, ZeRO-1), TP/CP and pipeline
// parallelism into explicit ops with dependencies, memory effects and state effects. One role per
// pipeline rank runs its model chunks' passes in the plan's schedule (program/pipeline_schedule.h:
// GPipe, 1F1B, interleaved 1F1B, ZB-H1) with send/receive ops of activations and activation gradients
// between neighbouring virtual stages; FSDP inside each stage follows FSDP2's schedule
// (program/lower_units.cpp) with torch.distributed.pipelining's choices under PP (parameters kept
// unsharded after a backward until the last micro-batch; gradients reduced per reduce_grads). Sources
// and internals: program/lowering.h, lower*.cpp.
#pragma once

#include <cstdint>

#include "core/plan.h"
#include "program/segment_work.h"
#include "program/step_program.h"

namespace fsdpx {

// The program holds every micro-batch's ops, so its size grows with gradient accumulation: beyond this
// many micro-batches per step (docs/input-ranges.md) lowering refuses rather than running for minutes.
inline constexpr std::int64_t kMaxLoweredMicroBatches = 4096;

// What lowering writes besides the ops' structure. op_names = false leaves every Op::name empty: the
// planner's evaluations (simulator/steady_state.h simulate_step_totals, planner/backward_gather_bound.cpp)
// read no name, and formatting one per op was about 6% of a search's instructions (docs/performance.md,
// names11). Readers that may meet such a program label its ops with op_label (step_program.h).
struct LowerOptions {
  bool op_names = true;
};

// Builds the program of one step (untimed: durations are filled by time_program). The plan must be
// valid (validate_plan): stage assignments and micro-batch counts are trusted. Throws ConfigError
// "plan: /training/global_batch: ..." beyond kMaxLoweredMicroBatches.
StepProgram lower(const Plan& plan, const LowerOptions& options = {});

// How many times lower ran in this process (every thread): a diagnostic for the tests that check that
// a run lowers its plan once (`fsdpx run`: the session's program is the one every rank and tool reads).
std::int64_t lower_call_count();

}  // namespace fsdpx
