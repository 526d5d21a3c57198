// simulator/simulate.h — the simulator's front door: lower a plan, time its ops with the cost models,
// run the engine and summarise one training step: step time, tokens/s per GPU, MFU (PaLM) and HFU,
// exposed (non-overlapped) communication, and peak memory by category with the op where it happens
// (allocator headroom added on top, memory.h). Per-phase split of compute and exposed communication.
#pragma once

#include <array>
#include <string>

#include "core/plan.h"
#include "simulator/engine.h"
#include "program/step_program.h"

namespace fsdpx {

struct PhaseSummary {
  double compute_s = 0;       // compute-stream busy time
  double exposed_comm_s = 0;  // compute-stream idle time before ops of this phase
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
};

Simulation simulate(const Plan& plan, const EngineOptions& options = {});
// Re-runs the engine on an already lowered and timed program (benchmarks, what-if sweeps).
Simulation summarise(StepProgram program, EngineResult engine);

}  // namespace fsdpx
