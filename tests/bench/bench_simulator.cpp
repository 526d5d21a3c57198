// tests/bench/bench_simulator.cpp — speed of the simulator on the reference cases: one step of
// Llama-3.1-70B on 1,024 H100s (FSDP 128 x TP 8, 8 micro-batches, one unit per block), and one step of
// Llama-3.1-405B in the Llama 3 paper's layout on 16,384 H100s (TP 8 x PP 16 x DP 128, seq 8192,
// 2,048 sequences = 16M tokens, 16 micro-batches; 1F1B and interleaved with 2 chunks per rank; one
// role per stage, one rank per role by symmetry). Measures the engine alone on a lowered, timed
// program, and the whole path (lower + time + engine).
#include <benchmark/benchmark.h>

#include "core/config_paths.h"
#include "core/plan.h"
#include "simulator/engine.h"
#include "program/lower.h"
#include "simulator/op_timing.h"
#include "simulator/simulate.h"
#include "simulator/steady_state.h"

namespace {

fsdpx::Plan reference_plan() {
  fsdpx::ClusterSpec c = fsdpx::load_cluster("dgx-h100");
  c.nodes = 128;
  fsdpx::TrainingSettings t;
  t.seq = 8192;
  t.micro_batch = 1;
  t.global_batch = 128 * 8;  // 8 micro-batches per data-parallel rank
  fsdpx::Parallelism par;
  par.dp_shard = 128;
  par.tp = 8;
  par.sequence_parallel = true;
  return fsdpx::default_plan(fsdpx::load_model("llama3.1-70b"), c, t, par, 1, fsdpx::RecomputeMode::full);
}

void BM_Engine70B_1024GPUs(benchmark::State& state) {
  const fsdpx::Plan plan = reference_plan();
  fsdpx::StepProgram program = fsdpx::lower(plan);
  fsdpx::time_program(program, plan);
  fsdpx::EngineOptions options;
  options.record_ops = false;
  for (auto _ : state) benchmark::DoNotOptimize(fsdpx::run_engine(program, options));
  state.counters["ops"] = double(program.roles[0].ops.size());
}
BENCHMARK(BM_Engine70B_1024GPUs)->Unit(benchmark::kMicrosecond);

void BM_Simulate70B_1024GPUs(benchmark::State& state) {
  const fsdpx::Plan plan = reference_plan();
  fsdpx::EngineOptions options;
  options.record_ops = false;
  for (auto _ : state) benchmark::DoNotOptimize(fsdpx::simulate(plan, options));
}
BENCHMARK(BM_Simulate70B_1024GPUs)->Unit(benchmark::kMicrosecond);

fsdpx::Plan llama3_405b_plan(fsdpx::PipelineSchedule schedule, int vpp) {
  fsdpx::ClusterSpec c = fsdpx::load_cluster("dgx-h100");
  c.nodes = 2048;
  fsdpx::TrainingSettings t;
  t.seq = 8192;
  t.micro_batch = 1;
  t.global_batch = 2048;
  fsdpx::Parallelism par;
  par.dp_shard = 128;
  par.tp = 8;
  par.pp = 16;
  par.vpp = vpp;
  par.pp_schedule = schedule;
  par.sequence_parallel = true;
  fsdpx::Plan plan = fsdpx::default_plan(fsdpx::load_model("llama3.1-405b"), c, t, par, 1, fsdpx::RecomputeMode::none);
  fsdpx::validate_plan(plan, "bench");
  return plan;
}

void engine_405b(benchmark::State& state, fsdpx::PipelineSchedule schedule, int vpp) {
  const fsdpx::Plan plan = llama3_405b_plan(schedule, vpp);
  fsdpx::StepProgram program = fsdpx::lower(plan);
  fsdpx::time_program(program, plan);
  fsdpx::EngineOptions options;
  options.record_ops = false;
  for (auto _ : state) benchmark::DoNotOptimize(fsdpx::run_engine(program, options));
  double ops = 0;
  for (const auto& role : program.roles) ops += double(role.ops.size());
  state.counters["ops"] = ops;
  state.counters["step_s_simulated"] = double(fsdpx::run_engine(program, options).step_time_ns) * 1e-9;
}

void BM_Engine405B_PP16_1F1B(benchmark::State& state) { engine_405b(state, fsdpx::PipelineSchedule::one_f_one_b, 1); }
BENCHMARK(BM_Engine405B_PP16_1F1B)->Unit(benchmark::kMicrosecond);

void BM_Engine405B_PP16_Interleaved2(benchmark::State& state) {
  engine_405b(state, fsdpx::PipelineSchedule::interleaved_1f1b, 2);
}
BENCHMARK(BM_Engine405B_PP16_Interleaved2)->Unit(benchmark::kMicrosecond);

void BM_Simulate405B_PP16_1F1B(benchmark::State& state) {
  const fsdpx::Plan plan = llama3_405b_plan(fsdpx::PipelineSchedule::one_f_one_b, 1);
  fsdpx::EngineOptions options;
  options.record_ops = false;
  for (auto _ : state) benchmark::DoNotOptimize(fsdpx::simulate(plan, options));
}
BENCHMARK(BM_Simulate405B_PP16_1F1B)->Unit(benchmark::kMicrosecond);

// Megatron-Turing NLG 530B on 2,240 A100s (Smith et al. 2022, arXiv 2201.11990, section 3: TP 8 x PP 35 x DP 8,
// global batch 1,920, seq 2,048), the configuration Calculon times (issue 36): 1F1B, 240 micro-batches.
fsdpx::Plan mtnlg_530b_plan() {
  return fsdpx::load_plan(FSDPX_TEST_DATA_DIR "/plans/gpt-530b-a100x2240-pp35-1f1b.json");
}

void BM_Simulate530B_2240GPUs(benchmark::State& state) {
  const fsdpx::Plan plan = mtnlg_530b_plan();
  fsdpx::EngineOptions options;
  options.record_ops = false;
  for (auto _ : state) benchmark::DoNotOptimize(fsdpx::simulate(plan, options));
}
BENCHMARK(BM_Simulate530B_2240GPUs)->Unit(benchmark::kMillisecond);

void BM_StepTotals530B_2240GPUs(benchmark::State& state) {
  const fsdpx::Plan plan = mtnlg_530b_plan();
  for (auto _ : state) benchmark::DoNotOptimize(fsdpx::simulate_step_totals(plan));
  const fsdpx::StepTotals t = fsdpx::simulate_step_totals(plan);
  state.counters["probe_micro_batches"] = double(t.simulated_micro_batches);
  state.counters["step_s"] = t.step_time_s;
}
BENCHMARK(BM_StepTotals530B_2240GPUs)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
