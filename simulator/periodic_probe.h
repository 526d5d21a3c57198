// simulator/periodic_probe.h — a probe of a few micro-batches whose steady state repeats, as the two
// extrapolations (steady_state.cpp without a pipeline, steady_state_pipeline.cpp with one) find it: the
// probe's program and engine result, and one period of the step anchored at window_start_ns (per role:
// compute-stream busy time, compute durations at full rate, ops). The whole step is the probe with
// `periods` more periods inserted. Leaves out how the summaries use it (steady_state.h,
// simulate_extrapolated.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/plan.h"
#include "simulator/engine.h"
#include "simulator/engine_resume.h"
#include "program/step_program.h"

namespace fsdpx {

struct PeriodicProbe {
  StepProgram program;  // of the probe
  EngineResult engine;  // of the probe, with per-op records and memory samples
  std::int64_t probe_micro_batches = 0;
  std::int64_t periods = 0;  // inserted into the probe to make the step
  TimeNs window_start_ns = 0;
  TimeNs period_ns = 0;
  std::vector<TimeNs> busy_ns;  // per role, one period
  std::vector<double> floor_s;  // per role, one period
  std::vector<int> ops;         // per role, one period
};

// The last probes simulated when none repeats: whole steps of `micro_batches`, which the linear
// extrapolation (linear_extrapolation.h) takes instead of simulating them again.
struct UnrepeatedProbe {
  StepProgram program;
  EngineResult engine;  // with per-op records and memory samples
  std::int64_t micro_batches = 0;  // 0: none
  // Of the engine's run: the whole step's run resumes from them (engine_resume.h, step_after_probe.h).
  EngineSnapshots snapshots;
};

struct UnrepeatedProbes {
  UnrepeatedProbe last;
  UnrepeatedProbe previous;  // the probe before `last`
  // Beyond what lowering takes, the probes stopped early: the lock-in (lock_in.h) lies past the probes'
  // limit and the last three step times are collinear (linear_extrapolation.h collinear_steps), so the
  // step grows from `previous` and `last` (twice `previous`'s micro-batches).
  bool from_probes = false;
};

// Whether a pipelined step's probes run (issue 36), from what the probes of a like plan found: the same
// configured plan with another recompute pattern (the planner's evaluator, planner/candidates.h). Where
// none of that plan's probes repeated within the step's budget, the step is simulated whole at once, up to
// what lowering takes (beyond it the probes run: the linear extrapolation grows from them). Exact up to
// "extrapolated == whole": a probe that repeats gives the whole step's figures (test_steady_state_pipeline
// holds them to the nanosecond), so where the outcome does not carry over, the figures are the same and
// only the cost differs. A window's probe is not carried over: a like plan with less recompute locks in
// sooner (70B pp 4 1F1B x8,192: windows at 8 or 16 micro-batches with one or two blocks recomputed, at
// 112 with three), so starting it at another plan's window cost more than its own probes (measured).
// The start is taken only where the step's first probe is at least 1 / kWholeStepProbeShare of the step
// (steady_state.cpp whole_at_once): where it is a small share, a like plan that recomputes less may find
// its window in a probe a fraction of the step's size, so its probes are cheaper than the whole step (70B
// pp 4 1F1B x128 at global batch 4,096: one or two blocks recomputed find it at 8 or 16 micro-batches,
// three do not, and C3 had sent the plans after those three whole; issue 36, speed13 X2). The 405B pp 32
// interleaved x2 family of 1,024 micro-batches (first probe 256) keeps its whole-step start.
struct ProbeStart {
  bool whole_step = false;  // no probe: the step is simulated whole
};
inline constexpr std::int64_t kWholeStepProbeShare = 8;

// The probe of a plan without a pipeline (steady_state.cpp) or with one (steady_state_pipeline.cpp);
// nothing when no probe smaller than the step (and than `probe_limit` micro-batches, where given)
// repeats: the caller simulates the whole step. A pipelined plan's last two unrepeated probes go to
// `last` where given.
std::optional<PeriodicProbe> flat_periodic_probe(const Plan& plan, const EngineOptions& options,
                                                 std::int64_t probe_limit = 0);
std::optional<PeriodicProbe> pipeline_periodic_probe(const Plan& plan, const EngineOptions& options,
                                                     std::int64_t probe_limit = 0, UnrepeatedProbes* last = nullptr);

}  // namespace fsdpx
