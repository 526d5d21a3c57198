// tests/simulator/test_engine_resume.cpp — simulator/engine_resume.h: a step's run resumed from the run
// of a probe of fewer micro-batches equals the step's run from the start, record for record (every op's
// start and end, every memory sample, peaks, busy times), with and without records, on every schedule
// (GPipe, 1F1B, interleaved, ZB-H1) and the 70B plan with a long transient, from a snapshot every few
// events or every event, the earlier run the shorter or the longer, along a chain of runs each resumed
// from the one before, and so do their summaries (step_after_probe.h against simulate()); no op past a
// stream's shared prefix starts before the time shared_prefix.h gives; the resumed runs do start past
// time 0, and from before the probe's end; programs that share nothing run from the start.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "program/lower.h"
#include "simulator/engine_resume.h"
#include "simulator/shared_prefix.h"
#include "simulator/op_timing.h"
#include "simulator/step_after_probe.h"
#include "simulator/steady_state_pipeline.h"
#include "tests/support/pipelined_plan.h"

namespace fsdpx {

namespace {

Parallelism shape(int pp, int dp_shard, int tp) {
  Parallelism p;
  p.pp = pp, p.dp_shard = dp_shard, p.tp = tp, p.sequence_parallel = tp > 1;
  return p;
}

StepProgram timed_program(const Plan& plan, std::int64_t micro_batches) {
  StepProgram p = lower(with_micro_batches(plan, micro_batches));
  time_program(p, plan);
  return p;
}

void check_same_run(const EngineResult& a, const EngineResult& b) {
  CHECK(a.step_time_ns == b.step_time_ns);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const OpTiming &x = a.ops[i], &y = b.ops[i];
    INFO("record " << i);
    REQUIRE((x.role == y.role && x.rank == y.rank && x.op == y.op && x.start_ns == y.start_ns && x.end_ns == y.end_ns));
  }
  REQUIRE(a.memory_samples.size() == b.memory_samples.size());
  for (std::size_t i = 0; i < a.memory_samples.size(); ++i) {
    const MemorySample &x = a.memory_samples[i], &y = b.memory_samples[i];
    INFO("sample " << i);
    REQUIRE((x.role == y.role && x.at_ns == y.at_ns && x.by_category == y.by_category));  // bitwise
  }
  REQUIRE(a.peak_by_role.size() == b.peak_by_role.size());
  for (std::size_t r = 0; r < a.peak_by_role.size(); ++r) {
    const MemoryPeak &x = a.peak_by_role[r], &y = b.peak_by_role[r];
    CHECK((x.total_bytes == y.total_bytes && x.by_category == y.by_category && x.op == y.op && x.at_ns == y.at_ns));
  }
  CHECK(a.compute_busy_ns == b.compute_busy_ns);
  CHECK(a.compute_busy_ns_by_kind == b.compute_busy_ns_by_kind);
}

// shared_prefix.h's claim on two finished runs: no op past its stream's shared prefix, in either program,
// starts before the time it gives.
void check_nothing_unshared_starts_early(const StepProgram& a, const EngineResult& a_run, const StepProgram& b,
                                         const EngineResult& b_run) {
  using namespace engine_detail;
  const SharedPrefix shared = shared_prefix(a, build_roles(a, {}), a_run, b, build_roles(b, {}));
  for (const auto& [program, run] : {std::pair{&a, &a_run}, std::pair{&b, &b_run}}) {
    std::vector<std::vector<int>> position(program->roles.size());  // per role, per op: its stream position
    for (std::size_t r = 0; r < program->roles.size(); ++r) {
      position[r].assign(program->roles[r].ops.size(), 0);
      for (const auto& order : program->roles[r].streams)
        for (std::size_t j = 0; j < order.size(); ++j) position[r][std::size_t(order[j])] = int(j);
    }
    for (const OpTiming& t : run->ops) {
      const auto stream = std::size_t(program->roles[std::size_t(t.role)].ops[std::size_t(t.op)].stream);
      if (position[std::size_t(t.role)][std::size_t(t.op)] >= shared.stream_ops[std::size_t(t.role)][stream])
        REQUIRE(t.start_ns >= shared.until_ns);
    }
  }
}

struct Counts {
  int steps = 0;
  double reused = 0;  // of the step's records, summed over steps
};

// The probe of `probe` micro-batches, then the step of `step` resumed from it and from the start.
void check_resumed(const Plan& plan, std::int64_t probe, std::int64_t step, Counts& counts) {
  INFO(plan.model.name << " " << std::string(pipeline_schedule_name(plan.parallelism.pp_schedule)) << " probe " << probe
                       << " step " << step);
  const StepProgram a = timed_program(plan, probe);
  EngineSnapshots snapshots;
  const EngineResult a_run = run_engine_keeping_snapshots(a, EngineOptions{}, snapshots);
  CHECK(a_run.step_time_ns == run_engine(a, EngineOptions{}).step_time_ns);  // snapshots change nothing
  const StepProgram b = timed_program(plan, step);
  ResumeInfo info;
  const EngineResult resumed = run_engine_resumed(b, EngineOptions{}, a, a_run, snapshots, &info);
  const EngineResult whole = run_engine(b, EngineOptions{});
  check_same_run(resumed, whole);
  check_nothing_unshared_starts_early(a, a_run, b, whole);
  // From the last event time before the runs can differ (a snapshot at every event).
  EngineSnapshots every_event;
  run_engine_keeping_snapshots(a, EngineOptions{}, every_event, a_run.ops.size());
  ResumeInfo latest;
  check_same_run(run_engine_resumed(b, EngineOptions{}, a, a_run, every_event, &latest), whole);
  CHECK(latest.resumed_at_ns >= info.resumed_at_ns);
  if (plan.parallelism.pp_schedule == PipelineSchedule::gpipe) {
    // GPipe's first backward follows the last forward, so its ops (and a stage's first receive of a
    // gradient, posted at time 0) sit at other ids in the two programs: nothing is shared at time 0.
    CHECK(info.resumed_at_ns == -1);
    CHECK(info.shared_until_ns == 0);
    return;
  }
  CHECK(info.resumed_at_ns > 0);  // the reuse took place
  CHECK(info.resumed_at_ns < info.shared_until_ns);
  CHECK(info.shared_until_ns < a_run.step_time_ns);  // the probe's end differs from the step's
  ++counts.steps;
  counts.reused += double(info.records_reused) / double(whole.ops.size());
  // Without records (the planner's whole steps): the same times, peaks and busy times.
  EngineOptions quiet;
  quiet.record_ops = false;
  check_same_run(run_engine_resumed(b, quiet, a, a_run, snapshots), run_engine(b, quiet));
}

}  // namespace

TEST_CASE("a step resumed from its probe's run is the step's run, record for record, on every schedule") {
  Counts counts;
  for (PipelineSchedule s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                             PipelineSchedule::interleaved_1f1b, PipelineSchedule::zero_bubble}) {
    const int vpp = s == PipelineSchedule::interleaved_1f1b ? 2 : 1;
    const Plan tiny = test::pipelined_plan("llama-tiny", "cpu", shape(4, 2, 1), s, vpp, 64, 8, RecomputeMode::none);
    check_resumed(tiny, 8, 16, counts);
    check_resumed(tiny, 16, 40, counts);
    const Plan big = test::pipelined_plan("llama3.1-8b", "dgx-h100", shape(4, 1, 2), s, vpp, 4096, 8,
                                          RecomputeMode::full);
    check_resumed(big, 8, 16, counts);
    check_resumed(big, 32, 64, counts);
    // The other way round: the earlier run the longer (the shorter program's cool-down is then the first
    // op past a shared prefix, on the resumed program's side).
    check_resumed(tiny, 40, 16, counts);
    check_resumed(big, 64, 32, counts);
  }
  // A long transient (lock-in near micro-batch 90): the probe of 56 ends inside it.
  check_resumed(load_plan(FSDPX_TEST_DATA_DIR "/plans/llama3.1-70b-dgx-h100x512-pp4-tp4-1f1b.json"), 56, 112,
                counts);
  MESSAGE(counts.steps << " steps resumed, on average " << counts.reused / counts.steps
                       << " of their records taken from the probe");
  CHECK(counts.reused / counts.steps > 0.2);
}

TEST_CASE("a run resumed from a run of the same program, or of one that shares nothing, is the run") {
  const Plan plan = test::pipelined_plan("llama-tiny", "cpu", shape(4, 2, 1), PipelineSchedule::one_f_one_b, 1, 64, 8,
                                         RecomputeMode::none);
  const StepProgram a = timed_program(plan, 12);
  EngineSnapshots snapshots;
  const EngineResult a_run = run_engine_keeping_snapshots(a, EngineOptions{}, snapshots);
  ResumeInfo same;
  check_same_run(run_engine_resumed(a, EngineOptions{}, a, a_run, snapshots, &same), a_run);
  CHECK(same.resumed_at_ns > 0);  // from the last snapshot: nothing differs
  const Plan other = test::pipelined_plan("llama3.1-8b", "dgx-h100", shape(4, 1, 2), PipelineSchedule::one_f_one_b, 1,
                                          4096, 8, RecomputeMode::full);
  const StepProgram b = timed_program(other, 12);
  ResumeInfo none;
  check_same_run(run_engine_resumed(b, EngineOptions{}, a, a_run, snapshots, &none), run_engine(b, EngineOptions{}));
  CHECK(none.resumed_at_ns == -1);
  CHECK(none.shared_until_ns == 0);
}

// Probes that grow one after another (steady_state_pipeline.cpp): each resumed from the one before, keeping
// its own snapshots (the earlier run's up to its start, then its own), and the step from the last.
TEST_CASE("a chain of runs, each resumed from the one before, is each run from the start") {
  for (PipelineSchedule s : {PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved_1f1b,
                             PipelineSchedule::zero_bubble}) {
    const int vpp = s == PipelineSchedule::interleaved_1f1b ? 2 : 1;
    const Plan plan = test::pipelined_plan("llama3.1-8b", "dgx-h100", shape(4, 1, 2), s, vpp, 4096, 8,
                                           RecomputeMode::full);
    INFO(std::string(pipeline_schedule_name(s)));
    StepProgram earlier = timed_program(plan, 8);
    EngineSnapshots snapshots;
    EngineResult earlier_run = run_engine_keeping_snapshots(earlier, EngineOptions{}, snapshots);
    for (const std::int64_t micro_batches : {16, 32, 64}) {
      StepProgram program = timed_program(plan, micro_batches);
      EngineSnapshots kept;
      ResumeInfo info;
      EngineResult run = run_engine_resumed(program, EngineOptions{}, earlier, earlier_run, snapshots, &info, &kept);
      check_same_run(run, run_engine(program, EngineOptions{}));
      CHECK(info.resumed_at_ns > 0);
      REQUIRE(kept.run);
      earlier = std::move(program);
      earlier_run = std::move(run);
      snapshots = std::move(kept);
    }
  }
}

// The whole step after probes that found no window (steady_state.cpp simulate_step_totals, simulate_fast):
// the summary of the resumed run is simulate()'s, figure for figure. The probes end unrepeated under a limit
// (ZB-H1 8B: its first probe of 8; the 70B plan: 8, 16 and 32, inside its transient; interleaved 8B without
// recompute: its first probe of 32).
TEST_CASE("a pipelined step simulated after its unrepeated probes sums up as simulate() does") {
  struct Case {
    Plan plan;
    std::int64_t limit;
  };
  const Plan plan_70b = load_plan(FSDPX_TEST_DATA_DIR "/plans/llama3.1-70b-dgx-h100x512-pp4-tp4-1f1b.json");
  std::vector<Case> cases;
  for (PipelineSchedule s : {PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved_1f1b,
                             PipelineSchedule::zero_bubble})
    for (RecomputeMode rc : {RecomputeMode::full, RecomputeMode::none}) {
      const int vpp = s == PipelineSchedule::interleaved_1f1b ? 2 : 1;
      const Plan p = test::pipelined_plan("llama3.1-8b", "dgx-h100", shape(4, 1, 2), s, vpp, 4096, 64, rc);
      cases.push_back({p, first_pipeline_probe(p) + 1});
    }
  cases.push_back({with_micro_batches(plan_70b, 64), 33});
  int checked = 0;
  for (const Case& c : cases) {
    const Plan& plan = c.plan;
    UnrepeatedProbes last;
    const auto pr = pipeline_periodic_probe(plan, EngineOptions{}, c.limit, &last);
    const std::string name = plan.model.name + " " + pipeline_schedule_name(plan.parallelism.pp_schedule) + " " +
                             recompute_mode_name(plan.recompute.front());
    MESSAGE(name << ": the probes " << std::string(pr ? "repeat" : "do not repeat"));
    if (pr) continue;
    INFO(name);
    ++checked;
    REQUIRE(last.last.micro_batches > 0);
    ResumeInfo info;
    const Simulation resumed = simulate_after_probe(plan, EngineOptions{}, last.last, &info);
    const Simulation whole = simulate(plan, EngineOptions{});
    CHECK(info.resumed_at_ns > 0);
    check_same_run(resumed.engine, whole.engine);
    CHECK(resumed.step_time_s == whole.step_time_s);
    CHECK(resumed.bubble_fraction == whole.bubble_fraction);
    CHECK(resumed.exposed_comm_s == whole.exposed_comm_s);
    CHECK(resumed.peak_memory_total_bytes == whole.peak_memory_total_bytes);
    REQUIRE(resumed.stages.size() == whole.stages.size());
    for (std::size_t r = 0; r < whole.stages.size(); ++r) {
      CHECK(resumed.stages[r].bubble_s == whole.stages[r].bubble_s);
      CHECK(resumed.stages[r].compute_s == whole.stages[r].compute_s);
      CHECK(resumed.stages[r].peak_memory_bytes == whole.stages[r].peak_memory_bytes);
    }
  }
  CHECK(checked >= 3);
}

}  // namespace fsdpx
