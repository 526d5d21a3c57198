// tests/bench/bench_planner.cpp — speed of `fsdpx plan`'s search: Llama-3.1-405B on 2,048 nodes x 8 H100
// for both targets (fsdpx's executor, torchtitan 0.2.2), at global batch 16,384 and at the pipeline
// issue's 2,048 (which 16,384 ranks cannot split without pipeline, tensor or context parallelism: the
// search goes through PP), and Llama-3.1-8B on one node at global batch 32 and 16,384 (gradient
// accumulation 4 vs 2,048 at micro-batch 1: the search cost must not follow it). Counters report how many
// plans were simulated.
#include <benchmark/benchmark.h>

#include "core/config_paths.h"
#include "planner/planner.h"

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

}  // namespace

BENCHMARK_MAIN();
