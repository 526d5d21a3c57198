// simulator/steady_state.cpp — probe, periodicity check and extrapolation of steady_state.h. The engine
// works on time differences only (integer ns, rates recomputed at events), so a state repeated one period
// later evolves identically from then on: two consecutive periods that match op by op (and in live memory)
// carry over to every later micro-batch of the same program.
#include "simulator/steady_state.h"
#include "simulator/steady_state_pipeline.h"
#include "simulator/periodic_probe.h"
#include "simulator/linear_extrapolation.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <span>
#include <vector>

#include "cost_models/memory.h"
#include "cost_models/stack_costs.h"
#include "program/lower.h"
#include "simulator/op_timing.h"
#include "simulator/simulate.h"
#include "simulator/step_after_probe.h"

namespace fsdpx {

namespace {

// First op id of every micro-batch (ops of one micro-batch are emitted together, lower.cpp), and the
// end of the last one.
std::vector<int> micro_batch_starts(const RoleProgram& role) {
  std::vector<int> starts;
  for (int i = 0; i < int(role.ops.size()); ++i) {
    const int mb = role.ops[std::size_t(i)].micro_batch;
    if (mb >= 0 && mb == int(starts.size())) starts.push_back(i);
  }
  int end = int(role.ops.size());
  while (end > 0 && role.ops[std::size_t(end - 1)].micro_batch < 0) --end;
  starts.push_back(end);
  return starts;
}

bool same_effects(std::span<const MemEffect> a, std::span<const MemEffect> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const MemEffect& x, const MemEffect& y) { return x.category == y.category && x.bytes == y.bytes; });
}

// Op i + stride is op i one micro-batch later: same work, same memory effects, dependencies shifted too.
bool same_op(const RoleProgram& role, int i, int stride) {
  const Op& a = role.ops[std::size_t(i)];
  const Op& b = role.ops[std::size_t(i + stride)];
  if (a.kind != b.kind || a.stream != b.stream || a.unit != b.unit || a.segment != b.segment ||
      a.work_set != b.work_set || a.collective != b.collective || a.comm_bytes != b.comm_bytes || a.group != b.group ||
      a.duration_s != b.duration_s || a.latency_s != b.latency_s || a.nvlink_load != b.nvlink_load ||
      a.nic_load != b.nic_load || a.sm_share != b.sm_share ||
      a.deps.size() != b.deps.size())
    return false;
  for (std::size_t d = 0; d < a.deps.size(); ++d)
    if (b.deps[d] != a.deps[d] + stride) return false;
  return same_effects(a.alloc_at_start, b.alloc_at_start) && same_effects(a.free_at_end, b.free_at_end);
}

// Micro-batches m and m + 1 are the same program (same op count, op by op).
bool same_micro_batch(const RoleProgram& role, const std::vector<int>& starts, int m) {
  const int stride = starts[std::size_t(m + 1)] - starts[std::size_t(m)];
  if (starts[std::size_t(m + 2)] - starts[std::size_t(m + 1)] != stride) return false;
  for (int i = starts[std::size_t(m)]; i < starts[std::size_t(m + 1)]; ++i)
    if (!same_op(role, i, stride)) return false;
  return true;
}

struct Timeline {
  std::vector<TimeNs> start, end;  // per op of role 0, rank 0
};

Timeline timeline(const EngineResult& e, std::size_t ops) {
  Timeline t{std::vector<TimeNs>(ops, -1), std::vector<TimeNs>(ops, -1)};
  for (const OpTiming& o : e.ops)
    if (o.role == 0 && o.rank == 0) t.start[std::size_t(o.op)] = o.start_ns, t.end[std::size_t(o.op)] = o.end_ns;
  return t;
}

// Every op of micro-batch m + 1 runs exactly `period` after its counterpart in m.
bool shifted_ops(const Timeline& t, const std::vector<int>& starts, int m, TimeNs period) {
  const int stride = starts[std::size_t(m + 1)] - starts[std::size_t(m)];
  for (int i = starts[std::size_t(m)]; i < starts[std::size_t(m + 1)]; ++i)
    if (t.start[std::size_t(i + stride)] != t.start[std::size_t(i)] + period ||
        t.end[std::size_t(i + stride)] != t.end[std::size_t(i)] + period)
      return false;
  return true;
}

// Live memory during [from, from + period) repeats during [from + period, from + 2 period).
bool shifted_memory(const EngineResult& e, TimeNs from, TimeNs period) {
  std::vector<const MemorySample*> a, b;
  for (const MemorySample& s : e.memory_samples) {
    if (s.role != 0 || s.rank != 0) continue;
    if (s.at_ns >= from && s.at_ns < from + period) a.push_back(&s);
    if (s.at_ns >= from + period && s.at_ns < from + 2 * period) b.push_back(&s);
  }
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (b[i]->at_ns != a[i]->at_ns + period) return false;
    for (int c = 0; c < kMemCategoryCount; ++c) {
      const double x = a[i]->by_category[std::size_t(c)], y = b[i]->by_category[std::size_t(c)];
      if (std::abs(x - y) > 1e-9 * std::max({1.0, std::abs(x), std::abs(y)})) return false;
    }
  }
  return true;
}

struct Period {
  bool found = false;
  TimeNs start_ns = 0;  // of the period's first micro-batch
  int ops = 0;          // of one micro-batch
  TimeNs period_ns = 0;
  TimeNs busy_ns = 0;   // compute-stream time of one micro-batch
  double floor_s = 0;   // compute-stream durations of one micro-batch
};

// Looks for three identical consecutive micro-batches m-1, m, m+1 whose two periods match, followed by at
// least one more: the last micro-batch runs its reductions alone (nothing after it to share bandwidth with).
Period find_period(const StepProgram& p, const EngineResult& e) {
  const RoleProgram& role = p.roles[0];
  const std::vector<int> starts = micro_batch_starts(role);
  const int mbs = int(starts.size()) - 1;
  const Timeline t = timeline(e, role.ops.size());
  for (int m = mbs - 3; m >= 1; --m) {
    if (!same_micro_batch(role, starts, m - 1) || !same_micro_batch(role, starts, m)) continue;
    const TimeNs t0 = t.start[std::size_t(starts[std::size_t(m - 1)])];
    const TimeNs period = t.start[std::size_t(starts[std::size_t(m)])] - t0;
    if (period <= 0 || !shifted_ops(t, starts, m - 1, period) || !shifted_ops(t, starts, m, period) ||
        !shifted_memory(e, t0, period))
      return {};
    const TimeNs first = t.start[std::size_t(starts[std::size_t(m)])];
    Period r{true, first, starts[std::size_t(m + 1)] - starts[std::size_t(m)], period, 0, 0};
    for (int i = starts[std::size_t(m)]; i < starts[std::size_t(m + 1)]; ++i)
      if (role.ops[std::size_t(i)].stream == StreamKind::compute) {
        r.busy_ns += t.end[std::size_t(i)] - t.start[std::size_t(i)];
        r.floor_s += role.ops[std::size_t(i)].duration_s;
      }
    return r;
  }
  return {};
}

// The busiest role's compute-stream durations (pipeline stages differ: embedding, head, balance).
double compute_floor_s(const StepProgram& p) {
  double most = 0;
  for (const RoleProgram& role : p.roles) {
    double s = 0;
    for (const Op& op : role.ops)
      if (op.stream == StreamKind::compute) s += op.duration_s;
    most = std::max(most, s);
  }
  return most;
}

// A flat plan's first probe: the warm-up, three identical micro-batches (two periods to compare) and the
// last one. Under FSDP2 reducing every micro-batch, the first micro-batch's reduce-scatters allocate the
// units' sharded gradients (lower_units.cpp reduce_scatter_memory, `first`; the other stacks hold them
// from the start) and its last ones run while the second computes: the warm-up is then two micro-batches.
// With one, the probe of 5's only window pair (micro-batches 1 and 2) differed in live gradient bytes
// (70B fsdp 256 tp 2, torchtitan: 536.3 against 551.2 MB) though op timings repeat from micro-batch 1 on,
// and every such plan ran a second probe of 10 (issue 36, flat12). Either way find_period checks the
// window; the warm-up only decides which probe comes first.
std::int64_t first_flat_probe(const Plan& plan) {
  const bool grads_at_first_reduction = !plan.lora && plan.reduce_grads == ReduceGrads::every_micro_batch &&
                                        sharded_grads_from_reduction(stack_costs(plan.framework, plan.compiled).fsdp);
  return kSteadyStateProbeMicroBatches + (grads_at_first_reduction ? 1 : 0);
}

}  // namespace

Plan with_micro_batches(const Plan& plan, std::int64_t micro_batches) {
  Plan p = plan;
  p.training.global_batch = plan.training.micro_batch * plan.parallelism.data_parallel_ranks() * micro_batches;
  return p;
}

StepTotals probe_totals(const Simulation& sim, const Plan& plan, std::int64_t simulated) {
  StepTotals t;
  t.step_time_s = sim.step_time_s;
  t.tokens_per_s_per_gpu = sim.tokens_per_s_per_gpu;
  t.mfu = sim.mfu;
  t.compute_busy_s =
      double(*std::max_element(sim.engine.compute_busy_ns.begin(), sim.engine.compute_busy_ns.end())) * 1e-9;
  t.compute_floor_s = compute_floor_s(sim.program);
  t.peak_memory_bytes = sim.peak_memory_bytes;
  t.peak_memory_total_bytes = sim.peak_memory_total_bytes;
  t.stages = sim.stages;
  t.bubble_fraction = sim.bubble_fraction;
  t.micro_batches = plan.grad_accum();
  t.simulated_micro_batches = simulated;
  t.linear_extrapolation = sim.linear_extrapolation;
  return t;
}

std::optional<PeriodicProbe> flat_periodic_probe(const Plan& plan, const EngineOptions& options,
                                                 std::int64_t probe_limit) {
  const std::int64_t micro_batches = plan.grad_accum();
  const std::int64_t limit = probe_limit > 0 ? std::min(probe_limit, micro_batches) : micro_batches;
  if (plan.parallelism.pp > 1) return std::nullopt;
  EngineOptions probe_options = options;
  probe_options.record_ops = true;
  for (std::int64_t probe = first_flat_probe(plan); probe < limit; probe *= 2) {
    StepProgram program = lower(with_micro_batches(plan, probe), LowerOptions{.op_names = options.op_names});
    time_program(program, plan);
    EngineResult engine = run_engine(program, probe_options);
    const Period period = find_period(program, engine);
    if (!period.found) continue;
    return PeriodicProbe{std::move(program), std::move(engine), probe, micro_batches - probe, period.start_ns,
                         period.period_ns, {period.busy_ns}, {period.floor_s}, {period.ops}};
  }
  return std::nullopt;
}

namespace {

// linear_extrapolation.h's summary as totals; the busy time and floor (read from the larger step's engine
// and program) grown the same way.
StepTotals linear_step_totals(const Plan& plan, const EngineOptions& options, UnrepeatedProbes* reuse) {
  LinearSteps s = simulate_linear_steps(plan, options, reuse);
  const StepTotals a = probe_totals(s.at_n, plan, s.n);
  const double periods = s.periods;
  const Simulation sim = linear_simulation(plan, std::move(s));
  StepTotals t = probe_totals(sim, plan, sim.simulated_micro_batches);
  t.compute_busy_s = linear_grow(t.compute_busy_s, a.compute_busy_s, periods);
  t.compute_floor_s = linear_grow(t.compute_floor_s, a.compute_floor_s, periods);
  return t;
}

std::atomic<std::int64_t> g_step_totals_calls{0};  // a diagnostic count, read by tests only

// A like plan's start (periodic_probe.h ProbeStart) is taken where the step's first probe is at least
// 1 / kWholeStepProbeShare of it and lowering takes the step; otherwise the probes run as usual.
bool whole_at_once(const Plan& plan, const ProbeStart& start) {
  const std::int64_t micro_batches = plan.grad_accum();
  return start.whole_step && micro_batches <= kMaxLoweredMicroBatches &&
         kWholeStepProbeShare * first_pipeline_probe(plan) >= micro_batches;
}

// A flat probe's per-op records, once find_period has read them (issue 36, speed18). From them summarise()
// would only split each role's compute-stream idle time (simulate.cpp summarise_stages): per phase, which
// StepTotals does not carry, and into the bubble, which only a wait on a rendezvous op counts. A program
// without rendezvous ops (every pp = 1 program: lower.cpp join_rendezvous pairs pipeline sends and
// receives, and the tied-embedding and gradient-norm all-reduces across stages exist only for pp > 1) has
// a bubble of 0 with or without them, so they are dropped before the summary, which then skips the split.
void drop_unread_records(PeriodicProbe& probe) {
  if (probe.program.rendezvous.empty()) std::vector<OpTiming>().swap(probe.engine.ops);
}

}  // namespace

std::int64_t step_totals_call_count() { return g_step_totals_calls.load(std::memory_order_relaxed); }

StepTotals simulate_step_totals(const Plan& plan, const EngineOptions& requested, StageBubbles bubbles,
                                const ProbeStart& start) {
  g_step_totals_calls.fetch_add(1, std::memory_order_relaxed);
  EngineOptions options = requested;
  options.op_names = false;  // totals name no op
  const std::int64_t micro_batches = plan.grad_accum();
  // Beyond what lowering takes, probes stop below the linear extrapolation's larger step.
  const bool too_long = micro_batches > kMaxLoweredMicroBatches;
  const std::int64_t probe_limit = periodic_probe_limit(plan);
  UnrepeatedProbes last;  // a pipelined plan's last probes, for the linear extrapolation
  if (plan.parallelism.pp > 1 && !whole_at_once(plan, start)) {
    if (auto t = pipeline_step_totals(plan, options, probe_limit, &last)) return *t;
  }
  if (auto pr = flat_periodic_probe(plan, options, probe_limit)) {
    const double extra = double(pr->periods);
    const TimeNs step_ns = pr->engine.step_time_ns, busy_ns = pr->engine.compute_busy_ns.front();
    drop_unread_records(*pr);
    const Simulation sim = summarise(std::move(pr->program), std::move(pr->engine));
    StepTotals t = probe_totals(sim, plan, pr->probe_micro_batches);
    t.step_time_s = (double(step_ns) + extra * double(pr->period_ns)) * 1e-9;
    t.tokens_per_s_per_gpu = double(plan.training.global_batch) * double(plan.training.seq) / t.step_time_s /
                             double(plan.parallelism.world_size());
    t.mfu = sim.mfu * t.tokens_per_s_per_gpu / sim.tokens_per_s_per_gpu;
    t.compute_busy_s = (double(busy_ns) + extra * double(pr->busy_ns.front())) * 1e-9;
    t.compute_floor_s += extra * pr->floor_s.front();
    t.stages[0].compute_s = t.compute_busy_s;
    t.stages[0].idle_fraction = 1.0 - t.compute_busy_s / t.step_time_s;
    return t;
  }
  EngineOptions full = options;
  full.record_ops = plan.parallelism.pp > 1 && bubbles == StageBubbles::computed;  // the bubble needs the timeline
  if (too_long || last.from_probes) return linear_step_totals(plan, full, &last);
  StepTotals t = probe_totals(simulate_after_probe(plan, full, last.last), plan, micro_batches);
  // No probe repeated within the step and none lined up (steady_state_pipeline.h): a like plan's start.
  if (plan.parallelism.pp > 1) t.like_plan_start.whole_step = true;
  return t;
}

}  // namespace fsdpx
