// simulator/simulate.cpp — lower, time, run, summarise. Idle time of a stage's compute stream is
// charged to the op that waited: to the pipeline bubble when the dependency that released it last is a
// rendezvous op (a receive from another stage, or an all-reduce across stages), else to exposed
// communication of the op's phase.
#include "simulator/simulate.h"

#include <algorithm>
#include <limits>

#include "cost_models/memory.h"
#include "program/lower.h"
#include "simulator/op_timing.h"

namespace fsdpx {

namespace {

int phase_of(OpKind k) {
  switch (k) {
    case OpKind::forward: return 0;
    case OpKind::backward:
    case OpKind::backward_input:
    case OpKind::backward_weight: return 1;
    default: return 2;
  }
}

// Walks the compute-stream ops of `role`, instance 0, in start order; counts the idle time in [from, to)
// (the whole step by default), each gap charged to the op that ends it, and the compute of the ops that
// start in [from, to). A gap is clipped to [from, to), so windows that tile the step split its idle time
// exactly: a gap that straddles a window's start depends on the op before the window (issue 36's
// steady-state windows, simulator/steady_state_pipeline.cpp, check only the ops in or running into a
// window; a gap counted whole from the op before the window read the transient's last op into the window).
// `records` are the role's instance-0 records in the engine's order.
StageIdle split_idle(const StepProgram& program, const EngineResult& engine, int role,
                     const std::vector<const OpTiming*>& records, TimeNs from, TimeNs to) {
  const RoleProgram& rp = program.roles[std::size_t(role)];
  std::vector<TimeNs> end_ns(rp.ops.size(), 0);
  std::vector<const OpTiming*> compute;
  for (const OpTiming* record : records) {
    const OpTiming& t = *record;
    end_ns[std::size_t(t.op)] = t.end_ns;
    const Op& op = rp.ops[std::size_t(t.op)];
    if (op.stream == StreamKind::compute && op.kind != OpKind::free) compute.push_back(&t);
  }
  std::sort(compute.begin(), compute.end(), [](const OpTiming* a, const OpTiming* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->op < b->op;
  });
  StageIdle out;
  TimeNs cursor = 0;
  for (const OpTiming* t : compute) {
    const Op& op = rp.ops[std::size_t(t->op)];
    const TimeNs gap_ns = std::max<TimeNs>(0, std::min(t->start_ns, to) - std::max(cursor, from));
    const bool starts_in = t->start_ns >= from && t->start_ns < to;
    if (gap_ns == 0 && !starts_in) {
      cursor = std::max(cursor, t->end_ns);
      continue;
    }
    const int ph = phase_of(op.kind);
    const double gap_s = double(gap_ns) * 1e-9;
    int last_dep = -1;
    for (int d : op.deps)
      if (last_dep < 0 || end_ns[std::size_t(d)] > end_ns[std::size_t(last_dep)]) last_dep = d;
    const bool pipeline_wait = last_dep >= 0 && rp.ops[std::size_t(last_dep)].rendezvous >= 0;
    (pipeline_wait ? out.bubble_s : out.phases[std::size_t(ph)].exposed_comm_s) += gap_s;
    if (starts_in) out.phases[std::size_t(ph)].compute_s += double(t->end_ns - t->start_ns) * 1e-9;
    cursor = std::max(cursor, t->end_ns);
  }
  if (to > engine.step_time_ns) out.phases[2].exposed_comm_s += double(std::max<TimeNs>(0, engine.step_time_ns - cursor)) * 1e-9;
  return out;
}

// Instance 0's records of every role, each role's in the engine's order: one pass over the records instead
// of one per role (a pipeline of 64 stages walked them 64 times).
std::vector<std::vector<const OpTiming*>> records_by_role(const EngineResult& engine, std::size_t roles) {
  std::vector<std::vector<const OpTiming*>> out(roles);
  for (const OpTiming& t : engine.ops)
    if (t.rank == 0) out[std::size_t(t.role)].push_back(&t);
  return out;
}

StageIdle split_idle(const StepProgram& program, const EngineResult& engine, int role, TimeNs from, TimeNs to) {
  std::vector<const OpTiming*> records;
  for (const OpTiming& t : engine.ops)
    if (t.role == role && t.rank == 0) records.push_back(&t);
  return split_idle(program, engine, role, records, from, to);
}

// Per stage: compute time, idle fraction and peak memory; the phases and exposed communication of
// the busiest stage (the critical one); the mean bubble over stages.
void summarise_stages(Simulation& sim) {
  const StepProgram& p = sim.program;
  int busiest = 0;
  for (std::size_t r = 0; r < p.roles.size(); ++r) {
    StageSummary st;
    st.compute_s = double(sim.engine.compute_busy_ns[r]) * 1e-9;
    st.idle_fraction = sim.step_time_s > 0 ? 1.0 - st.compute_s / sim.step_time_s : 0.0;
    const double peak = sim.engine.peak_by_role[r].total_bytes;
    st.peak_memory_bytes = peak + overhead_bytes(0, peak).allocator_headroom;
    sim.stages.push_back(st);
    if (sim.engine.compute_busy_ns[r] > sim.engine.compute_busy_ns[std::size_t(busiest)]) busiest = int(r);
  }
  if (sim.engine.ops.empty()) return;
  double bubble_s = 0;
  const std::vector<std::vector<const OpTiming*>> records = records_by_role(sim.engine, p.roles.size());
  for (int r = 0; r < int(p.roles.size()); ++r) {
    const StageIdle split =
        split_idle(p, sim.engine, r, records[std::size_t(r)], 0, std::numeric_limits<TimeNs>::max());
    bubble_s += split.bubble_s;
    sim.stages[std::size_t(r)].bubble_s = split.bubble_s;
    if (r == busiest) sim.phases = split.phases;
  }
  sim.bubble_fraction = sim.step_time_s > 0 ? bubble_s / double(p.roles.size()) / sim.step_time_s : 0.0;
}

// Fraction of executed FLOPs that recompute forward work, over every stage (stages have equal ranks).
// Each work set's FLOPs are counted once, then added per op in op order (the same sums).
double recompute_share(const StepProgram& p) {
  std::vector<double> set_flops(p.work_sets.size());
  for (std::size_t w = 0; w < p.work_sets.size(); ++w) set_flops[w] = p.work_sets[w].flops();
  double flops = 0, recompute = 0;
  for (const auto& role : p.roles)
    for (const auto& op : role.ops)
      if (op.work_set >= 0) {
        flops += set_flops[std::size_t(op.work_set)];
        recompute += p.work_sets[std::size_t(op.work_set)].recompute_flops;
      }
  return flops > 0 ? recompute / flops : 0.0;
}

}  // namespace

double stage_bubble_s(const StepProgram& program, const EngineResult& engine, int role, TimeNs from, TimeNs to) {
  return split_idle(program, engine, role, from, to).bubble_s;
}

StageIdle stage_idle(const StepProgram& program, const EngineResult& engine, int role, TimeNs from, TimeNs to) {
  return split_idle(program, engine, role, from, to);
}

double churn_bytes(const MemoryPeak& peak) {
  return peak.by_category[std::size_t(MemCategory::activations)] + peak.by_category[std::size_t(MemCategory::transient)];
}

Simulation summarise(StepProgram program, EngineResult engine) {
  Simulation sim;
  sim.program = std::move(program);
  sim.engine = std::move(engine);
  const StepProgram& p = sim.program;
  sim.step_time_s = double(sim.engine.step_time_ns) * 1e-9;
  sim.ops_per_rank = p.roles.empty() ? 0 : std::int64_t(p.roles[0].ops.size());
  sim.tokens_per_s_per_gpu = p.tokens_per_step / sim.step_time_s / p.world_size;
  sim.mfu = sim.tokens_per_s_per_gpu * p.model_flops_per_token / p.peak_flops_per_s;
  // HFU counts recomputed work on top of MFU's model FLOPs (PaLM Appendix B), in the same convention.
  sim.hfu = sim.mfu / (1.0 - recompute_share(p));
  summarise_stages(sim);
  sim.exposed_comm_s = 0;
  for (const auto& ph : sim.phases) sim.exposed_comm_s += ph.exposed_comm_s;

  const auto peak_it = std::max_element(
      sim.engine.peak_by_role.begin(), sim.engine.peak_by_role.end(),
      [](const MemoryPeak& a, const MemoryPeak& b) { return a.total_bytes < b.total_bytes; });
  const MemoryPeak& peak = *peak_it;
  sim.peak_memory_stage = int(peak_it - sim.engine.peak_by_role.begin());
  sim.peak_memory_bytes = peak.by_category;
  const double headroom = allocator_headroom_bytes(churn_bytes(peak));
  sim.peak_memory_bytes[std::size_t(MemCategory::other)] += headroom;
  sim.peak_memory_total_bytes = peak.total_bytes + headroom;
  sim.peak_memory_op = peak.op >= 0 ? op_label(p.roles[std::size_t(sim.peak_memory_stage)].ops[std::size_t(peak.op)], peak.op)
                                     : "resident state";
  return sim;
}

Simulation simulate(const Plan& plan, const EngineOptions& options) {
  StepProgram program = lower(plan, LowerOptions{.op_names = options.op_names});
  time_program(program, plan);
  EngineResult engine = run_engine(program, options);
  return summarise(std::move(program), std::move(engine));
}

}  // namespace fsdpx
