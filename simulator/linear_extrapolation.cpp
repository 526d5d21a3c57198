// simulator/linear_extrapolation.cpp — the two whole steps and the grown summary of linear_extrapolation.h.
#include "simulator/linear_extrapolation.h"

#include <cmath>

#include "cost_models/memory.h"

#include "program/lower.h"
#include "simulator/steady_state_pipeline.h"

namespace fsdpx {

std::int64_t periodic_probe_limit(const Plan& plan) {
  return plan.grad_accum() > kMaxLoweredMicroBatches ? 2 * kLinearProbeMicroBatches : 0;
}

bool collinear_steps(std::int64_t n1, TimeNs t1_ns, std::int64_t n2, TimeNs t2_ns, std::int64_t n3, TimeNs t3_ns,
                     double tolerance) {
  if (!(n1 < n2 && n2 < n3)) return false;
  const double slope_ns = double(t3_ns - t2_ns) / double(n3 - n2);
  const double on_line_ns = double(t2_ns) - double(n2 - n1) * slope_ns;
  return std::abs(double(t1_ns) - on_line_ns) <= tolerance * double(t3_ns);
}

bool probes_line_up(const std::vector<ProbeStep>& steps, double tolerance) {
  if (steps.size() < 3) return false;
  const auto& [n1, t1] = steps[steps.size() - 3];
  const auto& [n2, t2] = steps[steps.size() - 2];
  const auto& [n3, t3] = steps[steps.size() - 1];
  return n3 == 2 * n2 && collinear_steps(n1, t1, n2, t2, n3, t3, tolerance);
}

bool line_ends_probes(const std::vector<ProbeStep>& steps, std::int64_t lock_in, std::int64_t micro_batches) {
  if (!probes_line_up(steps, kProbeLineTolerance)) return false;
  return lock_in <= steps.back().first || lock_in >= micro_batches;
}

namespace {

// A probe's whole step as a summary; a run that does not record every op summarises without them (no
// bubble split), as a step simulated with those options would.
Simulation summarise_probe(UnrepeatedProbe& probe, const EngineOptions& options) {
  if (!options.record_ops) probe.engine.ops.clear(), probe.engine.memory_samples.clear();
  Simulation sim = summarise(std::move(probe.program), std::move(probe.engine));
  probe.micro_batches = 0;
  return sim;
}

// The step's peak as summarise() picks it: every role's peak grown by category, the largest, plus the
// allocator's headroom on what it allocates and frees. Growing the two steps' peaks instead misses a change
// of the stage at the peak: under GPipe each stage holds every micro-batch's activations at its own rate
// (8B pp 4 dp 2: the last stage's peak is the largest at 32 micro-batches, the second's at 64; grown from 16
// and 32, the step's peak was 0.13% low).
void grow_peak(Simulation& sim, const Simulation& a, double periods) {
  const auto& at_n = a.engine.peak_by_role;
  const auto& at_2n = sim.engine.peak_by_role;
  int most = -1;
  MemoryPeak peak;
  for (std::size_t r = 0; r < at_2n.size() && r < at_n.size(); ++r) {
    MemoryPeak grown = at_2n[r];
    grown.total_bytes = linear_grow(at_2n[r].total_bytes, at_n[r].total_bytes, periods);
    for (std::size_t c = 0; c < grown.by_category.size(); ++c)
      grown.by_category[c] = linear_grow(at_2n[r].by_category[c], at_n[r].by_category[c], periods);
    if (most < 0 || grown.total_bytes > peak.total_bytes) most = int(r), peak = grown;
  }
  if (most < 0) return;
  const double headroom = allocator_headroom_bytes(churn_bytes(peak));
  sim.peak_memory_bytes = peak.by_category;
  sim.peak_memory_bytes[std::size_t(MemCategory::other)] += headroom;
  sim.peak_memory_total_bytes = peak.total_bytes + headroom;
  if (most == sim.peak_memory_stage) return;
  sim.peak_memory_stage = most;
  const auto& ops = sim.program.roles[std::size_t(most)].ops;
  sim.peak_memory_op = peak.op >= 0 ? op_label(ops[std::size_t(peak.op)], peak.op) : "resident state";
}

}  // namespace

LinearSteps simulate_linear_steps(const Plan& plan, const EngineOptions& options, UnrepeatedProbes* reuse) {
  LinearSteps s;
  if (reuse && reuse->from_probes) {
    s.n = reuse->previous.micro_batches;
    s.at_n = summarise_probe(reuse->previous, options);
    s.at_2n = summarise_probe(reuse->last, options);
  } else {
    const std::int64_t d = period_micro_batches(plan);
    s.n = (kLinearProbeMicroBatches + d - 1) / d * d;
    s.at_n = reuse && reuse->last.micro_batches == s.n ? summarise_probe(reuse->last, options)
                                                       : simulate(with_micro_batches(plan, s.n), options);
    s.at_2n = simulate(with_micro_batches(plan, 2 * s.n), options);
  }
  s.periods = double(plan.grad_accum() - 2 * s.n) / double(s.n);
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
  grow_peak(sim, a, steps.periods);
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
