// simulator/simulate.h — the simulator's front door: lower a plan, time its ops with the cost models,
// run the engine and summarise one training step: step time, tokens/s per GPU, MFU (PaLM) and HFU,
// exposed (non-overlapped) communication, and peak memory by category with the op where it happens
// (the allocator's reserve on the step's churn added on top, memory.h). Per-phase split of compute and
// exposed communication; per pipeline stage its compute time, idle (bubble) fraction and peak memory.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/plan.h"
#include "simulator/engine.h"
#include "program/step_program.h"

namespace fsdpx {

struct PhaseSummary {
  double compute_s = 0;       // compute-stream busy time
  double exposed_comm_s = 0;  // compute-stream idle time before ops of this phase
};

// One pipeline stage (role): the worst simulated rank of it.
struct StageSummary {
  double compute_s = 0;         // compute-stream busy time
  double idle_fraction = 0;     // 1 - compute_s / step time: the bubble plus exposed communication
  double peak_memory_bytes = 0;  // with allocator headroom
  double bubble_s = 0;           // compute-stream idle time spent waiting for another stage
};

struct Simulation {
  StepProgram program;
  EngineResult engine;
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;  // model FLOPs (PaLM) / peak
  double hfu = 0;  // MFU with recomputed FLOPs counted too (PaLM Appendix B)
  double exposed_comm_s = 0;
  std::array<PhaseSummary, 3> phases{};  // forward, backward, optimizer
  std::array<double, kMemCategoryCount> peak_memory_bytes{};  // at the peak, "other" includes headroom
  double peak_memory_total_bytes = 0;
  std::string peak_memory_op;  // name of the op whose allocation reached the peak
  int peak_memory_stage = 0;   // the role (pipeline stage) where it happens
  std::vector<StageSummary> stages;  // one per role
  // Pipeline bubble: the mean over stages of the compute stream's idle time not explained by exposed
  // communication of the busiest stage, as a fraction of the step; 0 without pipelining.
  double bubble_fraction = 0;
  std::int64_t ops_per_rank = 0;             // role 0's ops in the step
  std::int64_t simulated_micro_batches = 0;  // of a probe the step was extrapolated from; 0: every one simulated
  // Grown linearly from whole steps of simulated_micro_batches / 2 and simulated_micro_batches
  // (linear_extrapolation.h: an approximation) rather than from a probe that repeats exactly.
  bool linear_extrapolation = false;
};

// The idle time of one stage's compute stream before the ops that start in [from, to): the bubble and
// exposed communication per phase, with the compute per phase.
struct StageIdle {
  std::array<PhaseSummary, 3> phases{};
  double bubble_s = 0;
};

Simulation simulate(const Plan& plan, const EngineOptions& options = {});
// Bytes at a peak that the step allocates and frees (activations and transients), on which the caching
// allocator's reserve grows (cost_models/memory.h allocator_headroom_bytes).
double churn_bytes(const MemoryPeak& peak);
// The bubble part of `role`'s compute-stream idle time in [from, to) (gaps clipped to it).
double stage_bubble_s(const StepProgram& program, const EngineResult& engine, int role, TimeNs from, TimeNs to);
// All of it (the whole step by default: then the step's tail counts as exposed optimizer communication).
StageIdle stage_idle(const StepProgram& program, const EngineResult& engine, int role, TimeNs from = 0,
                     TimeNs to = std::numeric_limits<TimeNs>::max());
// Re-runs the engine on an already lowered and timed program (benchmarks, what-if sweeps).
Simulation summarise(StepProgram program, EngineResult engine);

}  // namespace fsdpx
