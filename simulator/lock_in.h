// simulator/lock_in.h — where the transient of a pipelined probe that did not repeat should end, read
// from the probe's own timeline: the micro-batch by which every stage that still runs ahead of its
// upstream stage has used up its slack. A stage whose compute is a little faster than its upstream's
// starts each forward a little closer to the activation's arrival (its gap shrinks by a constant amount
// per micro-batch, the difference of the two periods) until it waits for the transfer; only then does the
// whole pipeline run at one period and a window can recur (70B pp 4 tp 4 1F1B with the first 3 blocks
// recomputed: the stage 1 -> 2 gap falls by 274,569 ns a micro-batch from 24.3 ms to the 0.72 ms transfer,
// lock-in near micro-batch 90). Only chooses the next probe's size (steady_state_pipeline.cpp); acceptance
// stays the exact window check. Leaves out gaps that grow or vary; not for interleaved schedules (a
// micro-batch visits a stage several times, so its first start and last end bound no single transfer).
#pragma once

#include <cstdint>
#include <optional>

#include "program/step_program.h"
#include "simulator/engine.h"

namespace fsdpx {

// The micro-batch index at which the last shrinking gap between adjacent stages (forward: next stage's
// first forward start minus this stage's last forward end; backward likewise) reaches the smallest gap
// of its direction in the probe (the transfer alone), extrapolated from the last four micro-batches the
// probe's warm-up and cool-down leave alone; nothing when no gap shrinks at a constant rate there.
std::optional<std::int64_t> predict_lock_in(const StepProgram& program, const EngineResult& engine,
                                            std::int64_t micro_batches);

}  // namespace fsdpx
