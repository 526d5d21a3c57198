// planner/evaluate.cpp — one candidate through the simulator: step time, throughput, MFU, exposed
// communication (step time minus the compute stream's busy time), peak memory by category, and whether
// it fits the memory limit. Simulates the steady state once and extrapolates the repeated micro-batches
// (simulator/steady_state.h), so its cost does not grow with gradient accumulation. A pipelined plan
// simulated whole records per-op times only when asked for its stages' bubble (StageBubbles::computed:
// the search proper, whose choice's pipeline report reads them, search.cpp report_pipeline).
#include <fmt/format.h>

#include "planner/candidates.h"
#include "planner/planner.h"
#include "simulator/steady_state.h"

namespace fsdpx {

PipelineReport pipeline_report(const StepTotals& sim) {
  PipelineReport p;
  p.bubble_fraction = sim.bubble_fraction;
  for (const StageSummary& st : sim.stages) {
    p.stage_peak_memory_bytes.push_back(st.peak_memory_bytes);
    p.stage_idle_fraction.push_back(st.idle_fraction);
  }
  return p;
}

Candidate evaluate_plan(Plan plan, double memory_limit_bytes, WrapPolicy wrapping, std::string label) {
  ProbeStart unused;
  return evaluate_plan(std::move(plan), memory_limit_bytes, wrapping, std::move(label), StageBubbles::skipped, {},
                       unused);
}

Candidate evaluate_plan(Plan plan, double memory_limit_bytes, WrapPolicy wrapping, std::string label,
                        StageBubbles bubbles, const ProbeStart& start, ProbeStart& like_plan_start) {
  const StepTotals sim = simulate_step_totals(plan, {}, bubbles, start);
  like_plan_start = sim.like_plan_start;
  Candidate c;
  c.wrapping = wrapping;
  c.label = std::move(label);
  CandidateMetrics& m = c.metrics;
  m.step_time_s = sim.step_time_s;
  m.tokens_per_s_per_gpu = sim.tokens_per_s_per_gpu;
  m.mfu = sim.mfu;
  // The compute stream's idle time is what the GPU spent waiting for communication (simulator/simulate.cpp
  // phase_split, summed over phases).
  m.compute_s = sim.compute_busy_s;
  m.compute_floor_s = sim.compute_floor_s;
  m.exposed_comm_s = std::max(0.0, sim.step_time_s - sim.compute_busy_s);
  // The capacity check uses the device total (core/memory_metric.h "device": allocated, the allocator's
  // headroom standing for reserved less allocated, the CUDA context and NCCL's buffers), since reserved
  // bytes plus what the allocator does not own are what must fit under the GPU's memory.
  m.peak_memory_bytes = sim.peak_memory_total_bytes;
  for (std::size_t i = 0; i < m.peak_memory_by_category_bytes.size(); ++i)
    m.peak_memory_by_category_bytes[i] = sim.peak_memory_bytes[i];
  c.fits = m.peak_memory_bytes <= memory_limit_bytes;
  if (plan.parallelism.pp > 1 && bubbles == StageBubbles::computed) c.pipeline = pipeline_report(sim);
  plan.predicted = PredictedMetrics{m.step_time_s, m.tokens_per_s_per_gpu, m.mfu, m.exposed_comm_s, m.peak_memory_bytes};
  c.plan = std::move(plan);
  return c;
}

}  // namespace fsdpx
