// tests/bench/bench_simulator.cpp — speed of the simulator on the reference case: one step of
// Llama-3.1-70B on 1,024 H100s (FSDP 128 x TP 8, 8 micro-batches, one unit per block). Measures the
// engine alone on a lowered, timed program, and the whole path (lower + time + engine).
#include <benchmark/benchmark.h>

#include "core/config_paths.h"
#include "core/plan.h"
#include "simulator/engine.h"
#include "program/lower.h"
#include "simulator/op_timing.h"
#include "simulator/simulate.h"

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
  fsdpx::time_program(program, plan.cluster, plan.precision.param);
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

}  // namespace

BENCHMARK_MAIN();
