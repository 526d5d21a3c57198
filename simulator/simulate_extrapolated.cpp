// simulator/simulate_extrapolated.cpp — the probe's summary with `periods` windows added (see
// simulate_extrapolated.h). The engine works on time differences only, so each inserted period repeats
// the window exactly: its busy time, bubble and per-phase idle and compute are added once per period.
#include "simulator/simulate_extrapolated.h"

#include <vector>

#include "program/lower.h"
#include "simulator/linear_extrapolation.h"
#include "simulator/periodic_probe.h"
#include "simulator/step_after_probe.h"

namespace fsdpx {

namespace {

// Per stage: the busy time, bubble and phases of one window.
std::vector<StageIdle> window_idle(const PeriodicProbe& pr) {
  std::vector<StageIdle> out;
  for (int r = 0; r < int(pr.program.roles.size()); ++r)
    out.push_back(stage_idle(pr.program, pr.engine, r, pr.window_start_ns, pr.window_start_ns + pr.period_ns));
  return out;
}

// The busiest stage of the whole step (by compute busy time with the periods added), and its phases.
int busiest_stage(const PeriodicProbe& pr) {
  int busiest = 0;
  TimeNs most = -1;
  for (std::size_t r = 0; r < pr.program.roles.size(); ++r) {
    const TimeNs busy = pr.engine.compute_busy_ns[r] + pr.periods * pr.busy_ns[r];
    if (busy > most) most = busy, busiest = int(r);
  }
  return busiest;
}

// HFU's recomputed share of executed FLOPs over the whole step: every micro-batch does the same work,
// so the probe's micro-batch ops scale to the step's micro-batches; the others (optimizer) stay.
double recompute_share(const StepProgram& p, double micro_batch_scale) {
  double flops = 0, recompute = 0;
  for (const auto& role : p.roles)
    for (const auto& op : role.ops)
      if (op.work_set >= 0) {
        const double k = op.micro_batch >= 0 ? micro_batch_scale : 1.0;
        flops += k * p.work_sets[std::size_t(op.work_set)].flops();
        recompute += k * p.work_sets[std::size_t(op.work_set)].recompute_flops;
      }
  return flops > 0 ? recompute / flops : 0.0;
}

Simulation extrapolate(const Plan& plan, PeriodicProbe pr) {
  const double n = double(pr.periods);
  const std::vector<StageIdle> window = window_idle(pr);
  const int busiest = busiest_stage(pr);
  StageIdle whole = stage_idle(pr.program, pr.engine, busiest);
  const std::int64_t ops_per_rank = std::int64_t(pr.program.roles[0].ops.size()) + pr.periods * pr.ops[0];
  const TimeNs step_ns = pr.engine.step_time_ns + pr.periods * pr.period_ns;
  std::vector<TimeNs> busy_ns;
  for (std::size_t r = 0; r < pr.program.roles.size(); ++r)
    busy_ns.push_back(pr.engine.compute_busy_ns[r] + pr.periods * pr.busy_ns[r]);
  Simulation sim = summarise(std::move(pr.program), std::move(pr.engine));
  const double probe_tps = sim.tokens_per_s_per_gpu;
  sim.step_time_s = double(step_ns) * 1e-9;
  sim.tokens_per_s_per_gpu = double(plan.training.global_batch) * double(plan.training.seq) / sim.step_time_s /
                             double(plan.parallelism.world_size());
  sim.mfu *= sim.tokens_per_s_per_gpu / probe_tps;
  sim.hfu = sim.mfu / (1.0 - recompute_share(sim.program, double(plan.grad_accum()) / double(pr.probe_micro_batches)));
  double bubble_s = 0;
  for (std::size_t r = 0; r < sim.stages.size(); ++r) {
    StageSummary& st = sim.stages[r];
    st.compute_s = double(busy_ns[r]) * 1e-9;
    st.bubble_s += n * window[r].bubble_s;
    st.idle_fraction = 1.0 - st.compute_s / sim.step_time_s;
    bubble_s += st.bubble_s;
  }
  sim.bubble_fraction = bubble_s / double(sim.stages.size()) / sim.step_time_s;
  sim.exposed_comm_s = 0;
  for (std::size_t ph = 0; ph < whole.phases.size(); ++ph) {
    whole.phases[ph].compute_s += n * window[std::size_t(busiest)].phases[ph].compute_s;
    whole.phases[ph].exposed_comm_s += n * window[std::size_t(busiest)].phases[ph].exposed_comm_s;
    sim.exposed_comm_s += whole.phases[ph].exposed_comm_s;
  }
  sim.phases = whole.phases;
  sim.ops_per_rank = ops_per_rank;
  return sim;
}

}  // namespace

namespace {

std::optional<Simulation> extrapolated(const Plan& plan, const EngineOptions& options, UnrepeatedProbes* last) {
  // Beyond what lowering takes, as the planner's totals (steady_state.cpp simulate_step_totals): probes
  // below the linear extrapolation's larger step only.
  const std::int64_t limit = periodic_probe_limit(plan);
  std::optional<PeriodicProbe> pr = plan.parallelism.pp > 1 ? pipeline_periodic_probe(plan, options, limit, last)
                                                            : flat_periodic_probe(plan, options, limit);
  if (!pr) return std::nullopt;
  const std::int64_t probe = pr->probe_micro_batches;
  Simulation sim = extrapolate(plan, std::move(*pr));
  sim.simulated_micro_batches = probe;
  return sim;
}

}  // namespace

std::optional<Simulation> simulate_extrapolated(const Plan& plan, const EngineOptions& options) {
  return extrapolated(plan, options, nullptr);
}

Simulation simulate_fast(const Plan& plan, const EngineOptions& options) {
  UnrepeatedProbes last;
  if (auto sim = extrapolated(plan, options, &last)) return std::move(*sim);
  if (plan.grad_accum() > kMaxLoweredMicroBatches || last.from_probes)
    return linear_simulation(plan, simulate_linear_steps(plan, options, &last));
  return simulate_after_probe(plan, options, last.last);
}

}  // namespace fsdpx
