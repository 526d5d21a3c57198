// simulator/steady_state_pipeline.h — steady_state.h for pipelined plans (pp > 1). Each stage's pass
// order repeats per micro-batch (per group of pp micro-batches for interleaved 1F1B, whose schedule table
// takes micro-batches in groups of pp) between warm-up and cool-down, so the step program of A + d
// micro-batches is that of A with one period inserted in the steady phase (1F1B, interleaved, ZB-H1). A
// probe is simulated; a window of one period is accepted where every op of every stage in flight during
// it recurs one period later as the same op d micro-batches on (same work, memory effects, dependencies
// and partners shifted too), the stages' live memory recurs, and the window holds all the ops a period
// adds. The engine works on time differences only, so the inserted periods repeat exactly: step, busy
// time, floor and bubble grow by the window's per period; the peak is the probe's. A window of two
// periods is checked too (a pipeline that locks in after a long transient may alternate two periods).
// A probe that does not repeat doubles, or jumps past the lock-in its (virtual) stages' gaps predict
// (lock_in.h); the probes together simulate at most the step's micro-batches, and at most half of them once
// three probes have left the line (a probe that would take them past it is not run: the step is simulated
// whole, so a plan whose probes never repeat costs at most two steps, 1.5 off the line; the 405B pp 64 1F1B
// plan of 1,024 micro-batches ran 2,754 in probes before, then 916, now 476). Probes whose
// step times line up, with every stage at the line's pace and no lock-in ahead, end the probes: the step
// grows from the last two (linear_extrapolation.h, an approximation measured within 3e-6 and held within
// 2e-5 by test_steady_state_pipeline's corpus). GPipe, which
// repeats in two phases and whose stages drift apart when the later ones are slower (each at its own
// pace), is left to whole simulation. Leaves out per-op records (simulate() gives the trace of a whole
// step) and expanded ranks.
#pragma once

#include <optional>

#include "simulator/periodic_probe.h"
#include "simulator/simulate.h"
#include "simulator/steady_state.h"

namespace fsdpx {

// Step totals of a pipelined plan from a probe, or nothing when no probe smaller than the step is
// periodic (the caller then simulates the whole step).
std::optional<StepTotals> pipeline_step_totals(const Plan& plan, const EngineOptions& options,
                                               std::int64_t probe_limit = 0, UnrepeatedProbes* last = nullptr);
// Micro-batches one period of the schedule spans: pp for interleaved 1F1B, else 1.
int period_micro_batches(const Plan& plan);
// Micro-batches of the first probe pipeline_periodic_probe simulates (before any step-size limit).
std::int64_t first_pipeline_probe(const Plan& plan);

// Shared with steady_state.cpp: the plan with `micro_batches` per step (global batch rescaled), and the
// totals of a simulated probe of `simulated` micro-batches.
Plan with_micro_batches(const Plan& plan, std::int64_t micro_batches);
StepTotals probe_totals(const Simulation& sim, const Plan& plan, std::int64_t simulated);

}  // namespace fsdpx
