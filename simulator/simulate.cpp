// simulator/simulate.cpp — lower, time, run, summarise.
#include "simulator/simulate.h"

#include <algorithm>

#include "cost_models/memory.h"
#include "program/lower.h"
#include "simulator/op_timing.h"

namespace fsdpx {

namespace {

int phase_of(OpKind k) {
  switch (k) {
    case OpKind::forward: return 0;
    case OpKind::backward: return 1;
    default: return 2;
  }
}

// Walks the compute-stream ops of role 0, instance 0 in start order: busy time per phase, and idle
// gaps (time the GPU waits for communication) charged to the phase of the op that waited.
void phase_split(Simulation& sim) {
  std::vector<const OpTiming*> compute;
  for (const auto& t : sim.engine.ops) {
    const Op& op = sim.program.roles[std::size_t(t.role)].ops[std::size_t(t.op)];
    if (t.role == 0 && t.rank == 0 && op.stream == StreamKind::compute && op.kind != OpKind::free)
      compute.push_back(&t);
  }
  std::sort(compute.begin(), compute.end(), [](const OpTiming* a, const OpTiming* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->op < b->op;
  });
  TimeNs cursor = 0;
  for (const OpTiming* t : compute) {
    const int ph = phase_of(sim.program.roles[0].ops[std::size_t(t->op)].kind);
    sim.phases[std::size_t(ph)].exposed_comm_s += double(std::max<TimeNs>(0, t->start_ns - cursor)) * 1e-9;
    sim.phases[std::size_t(ph)].compute_s += double(t->end_ns - t->start_ns) * 1e-9;
    cursor = std::max(cursor, t->end_ns);
  }
  sim.phases[2].exposed_comm_s += double(std::max<TimeNs>(0, sim.engine.step_time_ns - cursor)) * 1e-9;
}

// Fraction of executed FLOPs that recompute forward work.
double recompute_share(const StepProgram& p) {
  double flops = 0, recompute = 0;
  for (const auto& op : p.roles[0].ops)
    if (op.work_set >= 0) {
      flops += p.work_sets[std::size_t(op.work_set)].flops();
      recompute += p.work_sets[std::size_t(op.work_set)].recompute_flops;
    }
  return flops > 0 ? recompute / flops : 0.0;
}

}  // namespace

Simulation summarise(StepProgram program, EngineResult engine) {
  Simulation sim;
  sim.program = std::move(program);
  sim.engine = std::move(engine);
  const StepProgram& p = sim.program;
  sim.step_time_s = double(sim.engine.step_time_ns) * 1e-9;
  sim.tokens_per_s_per_gpu = p.tokens_per_step / sim.step_time_s / p.world_size;
  sim.mfu = sim.tokens_per_s_per_gpu * p.model_flops_per_token / p.peak_flops_per_s;
  // HFU counts recomputed work on top of MFU's model FLOPs (PaLM Appendix B), in the same convention.
  sim.hfu = sim.mfu / (1.0 - recompute_share(p));
  if (sim.engine.ops.empty() == false) phase_split(sim);
  sim.exposed_comm_s = 0;
  for (const auto& ph : sim.phases) sim.exposed_comm_s += ph.exposed_comm_s;

  const MemoryPeak& peak = *std::max_element(
      sim.engine.peak_by_role.begin(), sim.engine.peak_by_role.end(),
      [](const MemoryPeak& a, const MemoryPeak& b) { return a.total_bytes < b.total_bytes; });
  sim.peak_memory_bytes = peak.by_category;
  const double headroom = overhead_bytes(0, peak.total_bytes).allocator_headroom;
  sim.peak_memory_bytes[std::size_t(MemCategory::other)] += headroom;
  sim.peak_memory_total_bytes = peak.total_bytes + headroom;
  sim.peak_memory_op = peak.op >= 0 ? p.roles[0].ops[std::size_t(peak.op)].name : "resident state";
  return sim;
}

Simulation simulate(const Plan& plan, const EngineOptions& options) {
  StepProgram program = lower(plan);
  time_program(program, plan.cluster, plan.precision.param);
  EngineResult engine = run_engine(program, options);
  return summarise(std::move(program), std::move(engine));
}

}  // namespace fsdpx
