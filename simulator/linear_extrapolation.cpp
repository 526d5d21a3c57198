// simulator/linear_extrapolation.cpp — the two whole steps and the grown summary of linear_extrapolation.h.
#include "simulator/linear_extrapolation.h"

#include <cmath>

#include "program/lower.h"
#include "simulator/steady_state_pipeline.h"

namespace fsdpx {

std::int64_t periodic_probe_limit(const Plan& plan) {
  return plan.grad_accum() > kMaxLoweredMicroBatches ? 2 * kLinearProbeMicroBatches : 0;
}

LinearSteps simulate_linear_steps(const Plan& plan, const EngineOptions& options, UnrepeatedProbe* reuse) {
  const std::int64_t d = period_micro_batches(plan);
  const std::int64_t n = (kLinearProbeMicroBatches + d - 1) / d * d;
  LinearSteps s;
  s.n = n;
  if (reuse && reuse->micro_batches == n) {
    // The probe recorded every op; a run that does not record them summarises without (no bubble split).
    if (!options.record_ops) reuse->engine.ops.clear(), reuse->engine.memory_samples.clear();
    s.at_n = summarise(std::move(reuse->program), std::move(reuse->engine));
    reuse->micro_batches = 0;
  } else {
    s.at_n = simulate(with_micro_batches(plan, n), options);
  }
  s.at_2n = simulate(with_micro_batches(plan, 2 * n), options);
  s.periods = double(plan.grad_accum() - 2 * n) / double(n);
  return s;
}

Simulation linear_simulation(const Plan& plan, LinearSteps steps) {
  const Simulation& a = steps.at_n;
  Simulation sim = std::move(steps.at_2n);
  const auto grow = [k = steps.periods](double at_2n, double at_n) { return linear_grow(at_2n, at_n, k); };
  const double probe_tps = sim.tokens_per_s_per_gpu;
  sim.step_time_s = grow(sim.step_time_s, a.step_time_s);
  sim.tokens_per_s_per_gpu = double(plan.training.global_batch) * double(plan.training.seq) / sim.step_time_s /
                             double(plan.parallelism.world_size());
  sim.mfu = sim.mfu * sim.tokens_per_s_per_gpu / probe_tps;
  sim.hfu = sim.hfu * sim.tokens_per_s_per_gpu / probe_tps;  // the recomputed share is the same at n and 2n
  sim.exposed_comm_s = 0;
  for (std::size_t ph = 0; ph < sim.phases.size(); ++ph) {
    sim.phases[ph].compute_s = grow(sim.phases[ph].compute_s, a.phases[ph].compute_s);
    sim.phases[ph].exposed_comm_s = grow(sim.phases[ph].exposed_comm_s, a.phases[ph].exposed_comm_s);
    sim.exposed_comm_s += sim.phases[ph].exposed_comm_s;
  }
  for (std::size_t c = 0; c < sim.peak_memory_bytes.size(); ++c)
    sim.peak_memory_bytes[c] = grow(sim.peak_memory_bytes[c], a.peak_memory_bytes[c]);
  sim.peak_memory_total_bytes = grow(sim.peak_memory_total_bytes, a.peak_memory_total_bytes);
  sim.bubble_fraction = 0;
  for (std::size_t r = 0; r < sim.stages.size(); ++r) {
    StageSummary& st = sim.stages[r];
    st.compute_s = grow(st.compute_s, a.stages[r].compute_s);
    st.bubble_s = grow(st.bubble_s, a.stages[r].bubble_s);
    st.peak_memory_bytes = grow(st.peak_memory_bytes, a.stages[r].peak_memory_bytes);
    st.idle_fraction = 1.0 - st.compute_s / sim.step_time_s;
    sim.bubble_fraction += st.bubble_s / double(sim.stages.size()) / sim.step_time_s;
  }
  sim.ops_per_rank = std::llround(grow(double(sim.ops_per_rank), double(a.ops_per_rank)));
  sim.simulated_micro_batches = 2 * steps.n;
  sim.linear_extrapolation = true;
  return sim;
}

}  // namespace fsdpx
