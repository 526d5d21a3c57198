// simulator/simulate_extrapolated.h — the summary simulate() gives (simulate.h), at a cost independent of
// gradient accumulation: a probe of a few micro-batches is simulated and, where its steady state repeats
// exactly (periodic_probe.h: every schedule whose period is found, without and with pipelines), the step
// is the probe with the missing periods inserted: step time, throughput, MFU/HFU, per-stage compute,
// bubble and idle, and the busiest stage's phases (compute and exposed communication) grow by one window
// per period; the peak memory is the probe's. Leaves out per-op records of the whole step (traces and
// program listings simulate it whole: `fsdpx simulate --full`, up to what lowering takes).
#pragma once

#include <optional>

#include "core/plan.h"
#include "simulator/simulate.h"

namespace fsdpx {

// The extrapolated summary; nothing when no probe smaller than the step repeats.
std::optional<Simulation> simulate_extrapolated(const Plan& plan, const EngineOptions& options = {});

// The extrapolated summary where a probe repeats (beyond what lowering takes, a probe of at most
// 2 x kLinearProbeMicroBatches, as the planner's), else beyond what lowering takes the linear
// extrapolation the planner uses (linear_extrapolation.h: the same figures), else simulate() of every
// micro-batch.
Simulation simulate_fast(const Plan& plan, const EngineOptions& options = {});

}  // namespace fsdpx
