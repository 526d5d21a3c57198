// simulator/steady_state_pipeline.cpp — probe, period windows and extrapolation of
// steady_state_pipeline.h. A window [t, t + P) is anchored on the first stage (role 0): P is the time
// between the first forward op of micro-batch k and of k + d, and must repeat for k + 2d. The window's
// ops (those starting in it or running at its start) must map one to one onto the next window's ops by
// the shift "d micro-batches later", op by op in time and structure, with the same live memory.
#include "simulator/steady_state_pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

#include "program/lower.h"
#include "simulator/linear_extrapolation.h"
#include "simulator/lock_in.h"
#include "simulator/periodic_probe.h"
#include "simulator/pipeline_window.h"
#include "simulator/op_timing.h"
#include "simulator/simulate.h"

namespace fsdpx {

namespace {

// First forward op of role 0 per micro-batch (-1 where none).
std::vector<int> anchors(const StepProgram& p, std::int64_t micro_batches) {
  std::vector<int> first(std::size_t(micro_batches), -1);
  const RoleProgram& role = p.roles[0];
  for (int i = 0; i < int(role.ops.size()); ++i) {
    const Op& op = role.ops[std::size_t(i)];
    if (op.kind == OpKind::forward && op.micro_batch >= 0 && first[std::size_t(op.micro_batch)] < 0)
      first[std::size_t(op.micro_batch)] = i;
  }
  return first;
}

// The latest window anchored on micro-batches k, k + d, k + 2d that recurs.
std::optional<Window> find_window(PipelineProbe& pr, const std::vector<int>& anchor) {
  const int d = pr.d;
  const auto& start = pr.start[0];
  for (int k = int(anchor.size()) - 1 - 2 * d; k >= 0; --k) {
    const int a = anchor[std::size_t(k)], b = anchor[std::size_t(k + d)], c = anchor[std::size_t(k + 2 * d)];
    if (a < 0 || b < 0 || c < 0) continue;
    const TimeNs period = start[std::size_t(b)] - start[std::size_t(a)];
    if (period <= 0 || start[std::size_t(c)] - start[std::size_t(b)] != period) continue;
    if (auto w = check_window(pr, start[std::size_t(a)], period)) return w;
  }
  return std::nullopt;
}

// Ops per role of d consecutive micro-batches in the middle of the probe: what one inserted period adds.
std::vector<int> ops_per_period(const StepProgram& p, std::int64_t micro_batches, int d) {
  const std::int64_t first = (micro_batches / 2 / d) * d;
  std::vector<int> out;
  for (const RoleProgram& role : p.roles)
    out.push_back(int(std::count_if(role.ops.begin(), role.ops.end(), [&](const Op& op) {
      return op.micro_batch >= first && op.micro_batch < first + d;
    })));
  return out;
}

// The window of one period: it must hold all the ops d micro-batches add on every role (a schedule that
// repeats in two places, such as GPipe's forward and backward phases, has none).
std::optional<Window> period_window(PipelineProbe& pr, std::int64_t micro_batches) {
  auto w = find_window(pr, anchors(pr.program, micro_batches));
  if (!w || w->ops != ops_per_period(pr.program, micro_batches, pr.d)) return std::nullopt;
  return w;
}

// Step, busy time and compute floor (busiest role) with n more periods; per stage its busy time and the
// bubble the periods add. The peak is the probe's: every period's memory pattern is in it.
StepTotals extrapolate(const PeriodicProbe& pr) {
  const std::int64_t n = pr.periods;
  StepTotals t;
  t.stages.resize(pr.program.roles.size());
  t.step_time_s = double(pr.engine.step_time_ns + n * pr.period_ns) * 1e-9;
  for (int r = 0; r < int(pr.program.roles.size()); ++r) {
    const TimeNs busy_ns = pr.engine.compute_busy_ns[std::size_t(r)] + n * pr.busy_ns[std::size_t(r)];
    double floor_s = double(n) * pr.floor_s[std::size_t(r)];
    for (const Op& op : pr.program.roles[std::size_t(r)].ops)
      if (op.stream == StreamKind::compute) floor_s += op.duration_s;
    t.stages[std::size_t(r)].bubble_s =
        double(n) * stage_bubble_s(pr.program, pr.engine, r, pr.window_start_ns, pr.window_start_ns + pr.period_ns);
    t.stages[std::size_t(r)].compute_s = double(busy_ns) * 1e-9;
    t.compute_busy_s = std::max(t.compute_busy_s, double(busy_ns) * 1e-9);
    t.compute_floor_s = std::max(t.compute_floor_s, floor_s);
  }
  return t;
}

// Smallest probe: the pp micro-batches that fill the pipeline (the first stage's warm-up, which is also
// the last stage's delay) and room for the two periods a window compares (pp + 4: the window is checked
// on every stage, so a probe too short to hold one fails the check and doubles; 2 pp + 4 before issue 36,
// which simulated about twice the micro-batches for the same window); interleaved 1F1B's periods are pp
// micro-batches long and its warm-up reaches over more of them, so 8 pp. A multiple of d.
std::int64_t first_probe(const Plan& plan, int d) {
  const int pp = plan.parallelism.pp;
  const std::int64_t m = std::max<std::int64_t>(kSteadyStateProbeMicroBatches, d > 1 ? 8 * pp : pp + 4);
  return (m + d - 1) / d * d;
}

// Multiples of the schedule's period a window may span. After a long transient a pipeline can settle into
// a cycle of two periods, which no one-period window matches: 70B pp 4 tp 4 1F1B with the first 3 blocks
// recomputed locks in near micro-batch 90, and then stages 2 and 3 alternate 547,702,870 and 547,381,302
// ns per micro-batch around stage 0's 547,542,086 (a 2,048-micro-batch step was simulated whole before).
// Both are the exact check: the state repeats after 2d micro-batches, so every later pair repeats too.
constexpr int kWindowPeriods[] = {1, 2};

struct FoundWindow {
  Window window;
  int d = 1;  // micro-batches it spans
};

// The window of the shortest multiple of d that recurs in the probe and whose periods fill the step; a
// window of n periods is looked for in probes n times the first one's size or longer (the shortest hold
// no two such windows past the warm-up).
std::optional<FoundWindow> probe_window(const Plan& plan, const StepProgram& program, const EngineResult& engine,
                                        std::int64_t probe, std::int64_t micro_batches, int d) {
  std::optional<PipelineProbe> pr;  // built for the first span that fits, shared by the others
  for (const int periods : kWindowPeriods) {
    const int span = periods * d;
    if ((micro_batches - probe) % span != 0 || probe < periods * first_probe(plan, d)) continue;
    if (!pr) pr.emplace(make_pipeline_probe(program, engine));
    set_span(*pr, span);
    if (auto w = period_window(*pr, probe)) return FoundWindow{*w, span};
  }
  return std::nullopt;
}

// A stage's own pace may differ from the line's by this much (relative) for the line to hold: a lock-in
// ahead changes the step's pace by at most the difference.
constexpr double kLinePaceTolerance = 1e-4;

struct NextProbe {
  std::int64_t micro_batches = 0;
  bool predicted = false;        // from a lock-in prediction (else doubled)
  std::int64_t lock_in = -1;     // the micro-batch the probe predicts its stages lock in by, -1 where none
};

// The next probe after one that did not repeat: past the lock-in the probe predicts (lock_in.h), with
// room for the warm-up, the two windows of the longest span compared after it and the cool-down (under
// interleaved 1F1B the first probe's 8 pp), in step with the step's micro-batches for that span; otherwise
// twice the probe. A prediction at or below the probe (it locked in, yet nothing repeats) doubles.
NextProbe next_probe(const Plan& plan, const StepProgram& program, const EngineResult& engine, std::int64_t probe,
                     std::int64_t micro_batches, int d) {
  const auto lock_in = predict_lock_in(program, engine, probe, d);
  const NextProbe doubled{2 * probe, false, lock_in.value_or(-1)};
  if (!lock_in) return doubled;
  const std::int64_t pp = std::int64_t(program.roles.size());
  const std::int64_t span = d * kWindowPeriods[std::size(kWindowPeriods) - 1];
  std::int64_t next = d == 1 ? *lock_in + 3 * pp + 2 * span + 2 : *lock_in + first_probe(plan, d);
  next = (next + d - 1) / d * d;
  next += (micro_batches - next) % span == 0 ? 0 : d;
  return next > probe ? NextProbe{next, true, *lock_in} : doubled;
}

// Where the probes line up, the lock-in their line must not cross: the predicted one, or, where a stage's
// own pace in the last probe is off the line's by more than kLinePaceTolerance, one somewhere ahead. A
// lock-in predicted in the last probe's last quarter (branch deep13) stands only where every stage already
// keeps the line's pace: the 405B pp 64 1F1B x1,024 plan's probe of 272 predicts 241 and its stages are
// within 6.6e-5 (the step grown from 136 and 272 errs by -2.0e-6), where ZB-H1 70B pp 4 (test_steady_state_
// pipeline) predicts 27 of 32 with stages 1.5e-2 off, and grown from its line a stage's bubble was 1% off.
std::int64_t lock_in_ahead(const NextProbe& next, const std::vector<ProbeStep>& steps, const StepProgram& program,
                           const EngineResult& engine, std::int64_t micro_batches, int d) {
  if (!probes_line_up(steps, kProbeLineTolerance)) return next.lock_in;
  const auto& [n2, t2] = steps[steps.size() - 2];
  const auto& [n3, t3] = steps[steps.size() - 1];
  const bool late = next.lock_in >= 0 && next.lock_in <= n3 && 4 * (n3 - next.lock_in) < n3;
  if (next.lock_in >= 0 && !late) return next.lock_in;
  const double spread = pace_spread(program, engine, n3, double(t3 - t2) / double(n3 - n2), d);
  if (spread > kLinePaceTolerance) return micro_batches - 1;
  return late ? next.lock_in : -1;
}

// The micro-batches the probes may simulate in all: the step's, or half of it once three probes have left
// the line (issue 36, probe12 C5): a plan whose probes never repeat then costs at most 1.5 steps, not 2.
// Probes still on a line keep the whole step (a lock-in ahead: the 70B plan of test_steady_state_pipeline
// finds its window in a probe of 112 after 8, 16 and 32 on a line, 168 in all of a step of 168).
std::int64_t probe_budget(const std::vector<ProbeStep>& steps, std::int64_t micro_batches) {
  return steps.size() >= 3 && !probes_line_up(steps) ? micro_batches / 2 : micro_batches;
}

}  // namespace

std::optional<PeriodicProbe> pipeline_periodic_probe(const Plan& plan, const EngineOptions& options,
                                                     std::int64_t probe_limit, UnrepeatedProbes* last) {
  if (options.expand_ranks || plan.parallelism.pp == 1) return std::nullopt;
  const std::int64_t micro_batches = plan.grad_accum();
  const std::int64_t limit = probe_limit > 0 ? std::min(probe_limit, micro_batches) : micro_batches;
  const int d = period_micro_batches(plan);
  EngineOptions probe_options = options;
  probe_options.record_ops = true;
  UnrepeatedProbes kept;
  std::vector<ProbeStep> steps;  // of every probe
  std::int64_t probed = 0;  // micro-batches of the probes simulated so far
  for (std::int64_t probe = first_probe(plan, d);
       probe < limit && (micro_batches - probe) % d == 0 && probed + probe <= probe_budget(steps, micro_batches);) {
    StepProgram program = lower(with_micro_batches(plan, probe), LowerOptions{.op_names = options.op_names});
    time_program(program, plan);
    // Resumed from the last probe's run where it ran the same ops first (engine_resume.h): the probe of
    // k micro-batches opens as the one of 2k does, up to its cool-down.
    EngineSnapshots snapshots;
    EngineResult engine = run_engine_resumed(program, probe_options, kept.last.program, kept.last.engine,
                                             kept.last.snapshots, nullptr, &snapshots);
    probed += probe;
    if (auto w = probe_window(plan, program, engine, probe, micro_batches, d))
      return PeriodicProbe{std::move(program), std::move(engine), probe, (micro_batches - probe) / w->d,
                           w->window.start_ns, w->window.period_ns, w->window.busy_ns, w->window.floor_s,
                           w->window.ops};
    const NextProbe next = next_probe(plan, program, engine, probe, micro_batches, d);
    steps.emplace_back(probe, engine.step_time_ns);
    kept.previous = std::move(kept.last);
    kept.previous.snapshots = {};  // only the last probe's run is resumed
    kept.last = UnrepeatedProbe{std::move(program), std::move(engine), probe, std::move(snapshots)};
    // Beyond what lowering takes, a lock-in past the limit ends the probes where their step times line
    // up (the linear extrapolation grows from the last two); until they do, the probes double (up to the
    // limit, then whole steps of 256 and 512 micro-batches). At any step size, probes on a line with no
    // lock-in predicted between the middle one and the step's end end there too (linear_extrapolation.h
    // line_ends_probes; issue 36: the 405B pp 12 and pp 13 1F1B steps of 2,048 micro-batches, probed to
    // 1,024 and 544 and then simulated whole before, grow from 32 and 64, 34 and 68).
    if (micro_batches > kMaxLoweredMicroBatches && next.predicted && next.micro_batches >= limit) {
      if ((kept.from_probes = probes_line_up(steps))) break;
      probe *= 2;
    } else if ((kept.from_probes = line_ends_probes(
                    steps, lock_in_ahead(next, steps, kept.last.program, kept.last.engine, micro_batches, d),
                    micro_batches))) {
      break;
    } else {
      probe = next.micro_batches;
    }
  }
  if (last) *last = std::move(kept);
  return std::nullopt;
}

int period_micro_batches(const Plan& plan) {
  return plan.parallelism.pp_schedule == PipelineSchedule::interleaved_1f1b ? plan.parallelism.pp : 1;
}

std::int64_t first_pipeline_probe(const Plan& plan) { return first_probe(plan, period_micro_batches(plan)); }

std::optional<StepTotals> pipeline_step_totals(const Plan& plan, const EngineOptions& options,
                                               std::int64_t probe_limit, UnrepeatedProbes* last) {
  std::optional<PeriodicProbe> pr = pipeline_periodic_probe(plan, options, probe_limit, last);
  if (!pr) return std::nullopt;
  StepTotals t = extrapolate(*pr);
  const std::int64_t probe = pr->probe_micro_batches;
  const StepTotals p = probe_totals(summarise(std::move(pr->program), std::move(pr->engine)), plan, probe);
  t.peak_memory_bytes = p.peak_memory_bytes;
  t.peak_memory_total_bytes = p.peak_memory_total_bytes;
  for (std::size_t r = 0; r < t.stages.size(); ++r) {
    StageSummary& st = t.stages[r];
    st.bubble_s += p.stages[r].bubble_s;
    st.peak_memory_bytes = p.stages[r].peak_memory_bytes;
    st.idle_fraction = 1.0 - st.compute_s / t.step_time_s;
    t.bubble_fraction += st.bubble_s / double(t.stages.size()) / t.step_time_s;
  }
  t.tokens_per_s_per_gpu = double(plan.training.global_batch) * double(plan.training.seq) / t.step_time_s /
                           double(plan.parallelism.world_size());
  t.mfu = p.mfu * t.tokens_per_s_per_gpu / p.tokens_per_s_per_gpu;
  t.micro_batches = plan.grad_accum();
  t.simulated_micro_batches = probe;
  return t;
}

}  // namespace fsdpx
