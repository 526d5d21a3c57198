// simulator/lock_in.h — where the transient of a pipelined probe that did not repeat should end, read
// from the probe's own timeline: the micro-batch by which every stage that still runs ahead of its
// upstream stage has used up its slack. A stage whose compute is a little faster than its upstream's
// starts each forward a little closer to the activation's arrival (its gap shrinks by a constant amount
// per micro-batch, the difference of the two periods) until it waits for the transfer; only then does the
// whole pipeline run at one period and a window can recur (70B pp 4 tp 4 1F1B with the first 3 blocks
// recomputed: the stage 1 -> 2 gap falls by 274,569 ns a micro-batch from 24.3 ms to the 0.72 ms transfer,
// lock-in near micro-batch 90). Under interleaved 1F1B the gaps are between adjacent virtual stages
// (a chunk's last op of a micro-batch on one rank, the next chunk's first on the next), compared one period
// (pp micro-batches, the schedule's groups) apart: 405B pp 8 interleaved x4 on 32 nodes has stages whose
// period of 8 micro-batches is 25.3120 s against the first stage's 25.3313 s until they lock in one after
// another. Only chooses the next probe's size (steady_state_pipeline.cpp); acceptance stays the exact
// window check. Leaves out gaps that grow or vary.
#pragma once

#include <cstdint>
#include <optional>

#include "program/step_program.h"
#include "simulator/engine.h"

namespace fsdpx {

// The micro-batch index at which the last shrinking gap between adjacent virtual stages (forward: next
// stage's first forward start minus this stage's last forward end; backward likewise) reaches the smallest
// gap of its direction in the probe (the transfer alone), extrapolated from the last four periods of d
// micro-batches (1, or pp under interleaved 1F1B) the probe's warm-up and cool-down leave alone; nothing
// when no gap shrinks at a constant rate there.
std::optional<std::int64_t> predict_lock_in(const StepProgram& program, const EngineResult& engine,
                                            std::int64_t micro_batches, std::int64_t d = 1);

// The largest relative difference between `pace_ns` (a step time per micro-batch) and a virtual stage's own
// pace: the time between the first compute ops of one direction of micro-batches, per micro-batch, over the
// later half of those past the warm-up (pp) and clear of the cool-down (the last 2 pp), in pairs of periods;
// infinite where that is under two pairs or a stage lacks them. The later half, not all of them (before branch
// deep13): a stage that locked in inside the probe runs at the step's pace by its end, yet its mean from the
// warm-up on is off (405B pp 32 1F1B x512 with every unit resharded: 3.9e-4 from micro-batch 32, 7e-8 from 57,
// and the step grown from its line of 72 and 144 errs by 2.5e-11). A stage faster than the step (70B pp 4 tp 4
// 1F1B with the first 3 blocks recomputed: stages 2 and 3 by 274,569 ns a micro-batch) will lock in and change
// the step's pace.
double pace_spread(const StepProgram& program, const EngineResult& engine, std::int64_t micro_batches,
                   double pace_ns, std::int64_t d = 1);

}  // namespace fsdpx
