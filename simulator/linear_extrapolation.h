// simulator/linear_extrapolation.h — a step of more micro-batches than lowering takes (program/lower.h
// kMaxLoweredMicroBatches) whose periodic probes (periodic_probe.h) up to 2 x kLinearProbeMicroBatches never
// repeat exactly: stages whose relative timing drifts by some nanoseconds per micro-batch, so no window recurs
// to the nanosecond (GPipe; some interleaved reshard-to-g plans). Its figures grow linearly between whole
// steps of n and 2n micro-batches and are extrapolated from them, the peaks too (flat where the
// micro-batches in flight are bounded, as under 1F1B; GPipe's first stage holds every micro-batch's
// activations). Where the probes' lock-in (lock_in.h) lies beyond them and their step times line up, the
// two steps are the last two probes (as few as 16 and 32 micro-batches): the step then keeps the
// transient's pace throughout, an error of the stages' period difference (+0.05% on the 70B plan of
// test_steady_state_pipeline probed to 100 micro-batches; less where the lock-in lies further out, as the
// gap closes by that difference per micro-batch). An approximation, unlike the periodic probe; used only
// where the whole step cannot be simulated at all. One source for both users: the planner's totals
// (steady_state.h simulate_step_totals) and `fsdpx simulate`'s summary (simulate_extrapolated.h
// simulate_fast) read the same two simulations and grow them with the same formula, so the two print the
// same figure. Leaves out per-op records of the step (the larger step's program and engine result are kept).
#pragma once

#include <cstdint>

#include "core/plan.h"
#include "simulator/periodic_probe.h"
#include "simulator/simulate.h"

namespace fsdpx {

// n, rounded up to a whole number of the schedule's periods (steady_state_pipeline.h period_micro_batches).
inline constexpr std::int64_t kLinearProbeMicroBatches = 256;

// The largest periodic probe tried before the linear extrapolation, for a step beyond what lowering takes;
// 0 (no limit but the step) otherwise.
std::int64_t periodic_probe_limit(const Plan& plan);

// Whole steps of n and 2n micro-batches, and how far the step lies beyond the larger one.
struct LinearSteps {
  Simulation at_n;
  Simulation at_2n;
  std::int64_t n = 0;
  double periods = 0;  // periods of n micro-batches the step adds to at_2n: (micro-batches - 2n) / n
};

// The probes' own line (issue 36): three pipelined probes that did not repeat, at n1 < n2 < n3
// micro-batches, lie on a line when n1's step time is within 1e-6 of n3's off the line through the other
// two. Inside a long transient the step end is paced by one stage at its own period, so the step time
// grows linearly with the micro-batches; probes that straddle a change of pace (a lock-in) leave the line
// (70B pp 4 tp 4 1F1B, the first 3 blocks recomputed: 8, 16, 32 and 64 micro-batches on it to the ns; 32,
// 64 and 128 off it by 7e-5). Only used beyond what lowering takes, where the lock-in lies past the probes.
bool collinear_steps(std::int64_t n1, TimeNs t1_ns, std::int64_t n2, TimeNs t2_ns, std::int64_t n3, TimeNs t3_ns);

// A figure of the step from the same figure of the two whole steps.
inline double linear_grow(double at_2n, double at_n, double periods) { return at_2n + periods * (at_2n - at_n); }

// `reuse`, where it holds a whole step of n micro-batches (the last periodic probe tried, periodic_probe.h),
// stands for the smaller step instead of simulating it again (the same program, the same engine run);
// where its probes stopped early (UnrepeatedProbes::from_probes), its last two are the two steps and n is
// the smaller's micro-batches.
LinearSteps simulate_linear_steps(const Plan& plan, const EngineOptions& options, UnrepeatedProbes* reuse = nullptr);

// The summary simulate() would give for the whole step, grown from the two (step time, throughput, MFU
// and HFU, exposed communication and phases, peaks, per-stage compute, bubble and peak, op count);
// `linear_extrapolation` set and `simulated_micro_batches` = 2n.
Simulation linear_simulation(const Plan& plan, LinearSteps steps);

}  // namespace fsdpx
