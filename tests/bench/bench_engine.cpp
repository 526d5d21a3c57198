// tests/bench/bench_engine.cpp — speed of the discrete-event engine on a step program of the size the
// planner simulates per candidate: Llama-70B-like, 82 units x 8 micro-batches, ~4,000 ops per role
// (synthetic: built here without the lowering). Target: under 2 ms per simulated step on one core.
#include <benchmark/benchmark.h>

#include "simulator/engine.h"
#include "tests/simulator/synthetic_program.h"

namespace {

const fsdpx::StepProgram& llama70b_sized_program() {
  static const fsdpx::StepProgram program = fsdpx::test::synthetic_program({82, 8, true, false});
  return program;
}

void run(benchmark::State& state, bool record_ops, bool overlap) {
  const fsdpx::StepProgram& program = llama70b_sized_program();
  fsdpx::EngineOptions options;
  options.record_ops = record_ops;
  options.overlap = overlap;
  for (auto _ : state) {
    fsdpx::EngineResult r = fsdpx::run_engine(program, options);
    benchmark::DoNotOptimize(r.step_time_ns);
  }
  state.counters["ops"] = static_cast<double>(program.roles[0].ops.size());
  state.counters["step_ms_simulated"] =
      static_cast<double>(fsdpx::run_engine(program, options).step_time_ns) * 1e-6;
}

void BM_engine_llama70b_82u_8mb(benchmark::State& state) { run(state, false, true); }
void BM_engine_llama70b_82u_8mb_record(benchmark::State& state) { run(state, true, true); }
void BM_engine_llama70b_82u_8mb_serial(benchmark::State& state) { run(state, false, false); }

}  // namespace

BENCHMARK(BM_engine_llama70b_82u_8mb)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_engine_llama70b_82u_8mb_record)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_engine_llama70b_82u_8mb_serial)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
