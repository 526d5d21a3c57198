// tests/bench/bench_planner.cpp — speed of `fsdpx plan`'s search: Llama-3.1-405B on 2,048 nodes x 8 H100
// for both targets (fsdpx's executor, torchtitan 0.2.2), at global batch 16,384 and at the pipeline
// issue's 2,048 (which 16,384 ranks cannot split without pipeline, tensor or context parallelism: the
// search goes through PP), and Llama-3.1-8B on one node at global batch 32 and 16,384 (gradient
// accumulation 4 vs 2,048 at micro-batch 1: the search cost must not follow it). Counters report how many
// plans were simulated. Issue 36: the search's stages one by one on the 405B request (enumerate the
// shapes, bound them, simulate one candidate, the whole search), and the growth curves (405B from 64 to
// 16,384 GPUs at global batch 2,048; 70B on 512 GPUs from global batch 512 to 262,144), both targets.
#include <benchmark/benchmark.h>

#include "core/config_paths.h"
#include "planner/planner.h"
#include "planner/shape_bound.h"
#include "planner/shapes.h"
#include "planner/space.h"
#include "simulator/steady_state.h"

namespace {

fsdpx::PlanRequest request(const char* model, int nodes, std::int64_t seq, std::int64_t global_batch,
                           const char* target = "fsdpx") {
  fsdpx::PlanRequest r;
  r.target = fsdpx::parse_target(target, "bench");
  r.model = fsdpx::load_model(model);
  r.cluster = fsdpx::load_cluster("dgx-h100");
  r.cluster.nodes = nodes;
  r.seq = seq;
  r.global_batch = global_batch;
  return r;
}

void run(benchmark::State& state, const fsdpx::PlanRequest& r) {
  fsdpx::PlanResult res;
  for (auto _ : state) {
    res = fsdpx::search_plans(r);
    benchmark::DoNotOptimize(res);
  }
  state.counters["considered"] = double(res.counts.considered);
  state.counters["simulated"] = double(res.counts.simulated);
  state.counters["fits"] = res.best ? 1 : 0;
  state.counters["pp"] = res.best ? res.best->plan.parallelism.pp : 0;
}

void BM_Plan405B_2048Nodes(benchmark::State& state) { run(state, request("llama3.1-405b", 2048, 8192, 16384)); }
BENCHMARK(BM_Plan405B_2048Nodes)->Unit(benchmark::kMillisecond);

void BM_Plan405B_2048Nodes_Torchtitan(benchmark::State& state) {
  run(state, request("llama3.1-405b", 2048, 8192, 16384, "torchtitan@0.2.2"));
}
BENCHMARK(BM_Plan405B_2048Nodes_Torchtitan)->Unit(benchmark::kMillisecond);

// The pipeline issue's request: `fsdpx plan --model llama3.1-405b --cluster dgx-h100 --nodes 2048 --seq 8192
// --global-batch 2048` (target fsdpx).
void BM_Plan405B_2048Nodes_Batch2048(benchmark::State& state) { run(state, request("llama3.1-405b", 2048, 8192, 2048)); }
BENCHMARK(BM_Plan405B_2048Nodes_Batch2048)->Unit(benchmark::kMillisecond);

void BM_Plan405B_2048Nodes_Batch2048_Torchtitan(benchmark::State& state) {
  run(state, request("llama3.1-405b", 2048, 8192, 2048, "torchtitan@0.2.2"));
}
BENCHMARK(BM_Plan405B_2048Nodes_Batch2048_Torchtitan)->Unit(benchmark::kMillisecond);

void BM_Plan8B_1Node(benchmark::State& state) { run(state, request("llama3.1-8b", 1, 8192, 32)); }
BENCHMARK(BM_Plan8B_1Node)->Unit(benchmark::kMillisecond);

void BM_Plan8B_1Node_Batch16384(benchmark::State& state) { run(state, request("llama3.1-8b", 1, 8192, 16384)); }
BENCHMARK(BM_Plan8B_1Node_Batch16384)->Unit(benchmark::kMillisecond);

void BM_Plan8B_1Node_Torchtitan(benchmark::State& state) {
  run(state, request("llama3.1-8b", 1, 8192, 32, "torchtitan@0.2.2"));
}
BENCHMARK(BM_Plan8B_1Node_Torchtitan)->Unit(benchmark::kMillisecond);

void BM_Plan8B_1Node_Batch16384_Torchtitan(benchmark::State& state) {
  run(state, request("llama3.1-8b", 1, 8192, 16384, "torchtitan@0.2.2"));
}
BENCHMARK(BM_Plan8B_1Node_Batch16384_Torchtitan)->Unit(benchmark::kMillisecond);

// Stages of the 405B request (2,048 nodes, global batch 2,048), each on its own.
fsdpx::PlanRequest stage_request(const benchmark::State& state) {
  return request("llama3.1-405b", 2048, 8192, 2048, state.range(0) ? "torchtitan@0.2.2" : "fsdpx");
}

// Enumerate: every parallel shape and micro-batch of the target's space.
void BM_Stage405B_Enumerate(benchmark::State& state) {
  fsdpx::PlanRequest r = stage_request(state);
  const fsdpx::Space s = fsdpx::effective_space(r);
  r.space = s.knobs;
  std::int64_t shapes = 0;
  for (auto _ : state) {
    shapes = 0;
    for (const fsdpx::Parallelism& par : fsdpx::parallel_shapes(r))
      shapes += std::int64_t(fsdpx::micro_batch_choices(r, par).size());
  }
  state.counters["shapes"] = double(shapes);
}
BENCHMARK(BM_Stage405B_Enumerate)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Bound: the memory and throughput bounds of every shape (no simulation).
void BM_Stage405B_Bound(benchmark::State& state) {
  const fsdpx::PlanRequest r = fsdpx::resolve_memory(stage_request(state));  // as search_plans resolves it
  const fsdpx::Space s = fsdpx::effective_space(r);
  fsdpx::PlanRequest narrowed = r;
  narrowed.space = s.knobs;
  std::vector<std::pair<fsdpx::Parallelism, std::int64_t>> shapes;
  for (const fsdpx::Parallelism& par : fsdpx::parallel_shapes(narrowed))
    for (std::int64_t mb : fsdpx::micro_batch_choices(narrowed, par)) shapes.emplace_back(par, mb);
  std::int64_t could_fit = 0;
  for (auto _ : state) {
    could_fit = 0;
    for (const auto& [par, mb] : shapes) could_fit += !fsdpx::bound_shape(r, s, par, mb).options.empty();
  }
  state.counters["shapes"] = double(shapes.size());
  state.counters["could_fit"] = double(could_fit);
}
BENCHMARK(BM_Stage405B_Bound)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Simulate: one candidate, the chosen plan of the search (steady-state extrapolation where it applies).
void BM_Stage405B_SimulateChosen(benchmark::State& state) {
  const fsdpx::PlanResult res = fsdpx::search_plans(stage_request(state));
  if (!res.best) return state.SkipWithError("nothing fits");
  for (auto _ : state) benchmark::DoNotOptimize(fsdpx::simulate_step_totals(res.best->plan));
  state.counters["pp"] = res.best->plan.parallelism.pp;
  state.counters["micro_batches"] = double(res.best->plan.grad_accum());
}
BENCHMARK(BM_Stage405B_SimulateChosen)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// The growth curves: 405B over world size (nodes x 8 GPUs) at global batch 2,048, and 70B on 64 nodes over
// the global batch; Arg 0/1 of the second range: target fsdpx / torchtitan@0.2.2.
void BM_Growth405B_Nodes(benchmark::State& state) {
  const char* target = state.range(1) ? "torchtitan@0.2.2" : "fsdpx";
  run(state, request("llama3.1-405b", int(state.range(0)), 8192, 2048, target));
}
BENCHMARK(BM_Growth405B_Nodes)
    ->ArgsProduct({{8, 32, 128, 512, 2048}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

void BM_Growth70B_GlobalBatch(benchmark::State& state) {
  run(state, request("llama3.1-70b", 64, 8192, state.range(0), state.range(1) ? "torchtitan@0.2.2" : "fsdpx"));
}
BENCHMARK(BM_Growth70B_GlobalBatch)
    ->ArgsProduct({{512, 4096, 32768, 262144}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
