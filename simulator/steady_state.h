// simulator/steady_state.h — a training step's totals at a cost independent of gradient accumulation.
// The step program repeats its micro-batches; a probe of a few of them is simulated and, where its middle
// micro-batches are exact copies of one another shifted by one period (same ops and memory effects, every
// op starting and ending one period later, the same live memory one period later), the step is
// extrapolated: step(A) = step(probe) + (A - probe) x period, busy time likewise, and the peak memory is
// the probe's (every micro-batch pattern is in it). Where the probe is not periodic (a queue that grows,
// such as reduce-scatters falling behind compute) the probe doubles, up to the whole step; a step of more
// micro-batches than lowering takes (program/lower.h kMaxLoweredMicroBatches) is instead extrapolated
// linearly from whole steps of 256 and 512 micro-batches, or from the last two pipelined probes where a
// lock-in lies beyond them and their step times line up (linear_extrapolation.h; an approximation: stages
// whose timing drifts by nanoseconds per micro-batch never repeat exactly); at any size, pipelined probes
// that line up with every stage at their pace end there too (steady_state_pipeline.h). Pipelined plans
// (pp > 1) extrapolate over all stages at once (steady_state_pipeline.h).
// Per stage: busy time, idle and bubble, peak memory. Leaves out per-op records, the per-phase split and
// the ops' names (its programs are lowered without them, program/lower.h LowerOptions): simulate() gives
// the trace of a whole step.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/plan.h"
#include "simulator/engine.h"
#include "simulator/periodic_probe.h"
#include "simulator/simulate.h"
#include "program/step_program.h"

namespace fsdpx {

struct StepTotals {
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double compute_busy_s = 0;   // compute stream busy, busiest role (interference included)
  double compute_floor_s = 0;  // compute-stream ops at full rate, summed, busiest role: no overlap beats it
  std::array<double, kMemCategoryCount> peak_memory_bytes{};  // at the peak, "other" includes headroom
  double peak_memory_total_bytes = 0;
  std::vector<StageSummary> stages;  // per pipeline stage (role): busy time, idle fraction, peak, bubble
  double bubble_fraction = 0;        // simulate.h's Simulation::bubble_fraction
  std::int64_t micro_batches = 0;            // of the step
  std::int64_t simulated_micro_batches = 0;  // of the probe (equal when not extrapolated)
  bool linear_extrapolation = false;         // grown from two whole steps (linear_extrapolation.h)
  // A pipelined step simulated whole because none of its probes repeated within the step: a like plan's
  // start (periodic_probe.h).
  ProbeStart like_plan_start;
};

// Smallest probe: the warm-up micro-batch, three identical ones (two periods to compare) and the last one.
inline constexpr std::int64_t kSteadyStateProbeMicroBatches = 5;

// Whether a pipelined plan simulated whole (no periodic probe) gets its stages' bubble, which needs every
// op's start and end recorded; the planner's evaluations read only the totals and the peak.
enum class StageBubbles { computed, skipped };

// `start`: whether a pipelined step's probes run (periodic_probe.h ProbeStart).
StepTotals simulate_step_totals(const Plan& plan, const EngineOptions& options = {},
                                StageBubbles bubbles = StageBubbles::computed, const ProbeStart& start = {});

// Calls of simulate_step_totals so far in this process: a diagnostic count, read by tests only (the
// planner's pipeline report reuses its search's simulation, tests/planner/test_search.cpp).
std::int64_t step_totals_call_count();

}  // namespace fsdpx
