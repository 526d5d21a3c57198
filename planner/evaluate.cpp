// planner/evaluate.cpp — one candidate through the simulator: step time, throughput, MFU, exposed
// communication (step time minus the compute stream's busy time), peak memory by category, and whether
// it fits the memory limit. Runs the engine without per-op records (the planner needs totals only).
#include <fmt/format.h>

#include "planner/planner.h"
#include "simulator/simulate.h"

namespace fsdpx {

Candidate evaluate_plan(Plan plan, double memory_limit_bytes, WrapPolicy wrapping, std::string label) {
  EngineOptions options;
  options.record_ops = false;
  const Simulation sim = simulate(plan, options);
  Candidate c;
  c.wrapping = wrapping;
  c.label = std::move(label);
  CandidateMetrics& m = c.metrics;
  m.step_time_s = sim.step_time_s;
  m.tokens_per_s_per_gpu = sim.tokens_per_s_per_gpu;
  m.mfu = sim.mfu;
  // Without per-op records the phase split is empty: the compute stream's idle time is what the GPU
  // spent waiting for communication (simulator/simulate.cpp phase_split, summed over phases).
  double busy_s = 0;
  for (auto ns : sim.engine.compute_busy_ns) busy_s = std::max(busy_s, double(ns) * 1e-9);
  m.compute_s = busy_s;
  m.exposed_comm_s = std::max(0.0, sim.step_time_s - busy_s);
  m.peak_memory_bytes = sim.peak_memory_total_bytes;
  for (std::size_t i = 0; i < m.peak_memory_by_category_bytes.size(); ++i)
    m.peak_memory_by_category_bytes[i] = sim.peak_memory_bytes[i];
  c.fits = m.peak_memory_bytes <= memory_limit_bytes;
  plan.predicted = PredictedMetrics{m.step_time_s, m.tokens_per_s_per_gpu, m.mfu, m.exposed_comm_s, m.peak_memory_bytes};
  c.plan = std::move(plan);
  return c;
}

}  // namespace fsdpx
