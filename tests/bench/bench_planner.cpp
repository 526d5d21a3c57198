// tests/bench/bench_planner.cpp — speed of `fsdpx plan`'s search on the two targets: a full
// search for Llama-3.1-405B on 2,048 nodes x 8 H100 (budget 10 s on a 2-core CI machine) and
// Llama-3.1-8B on one node (budget 0.5 s). Counters report how many plans were simulated.
#include <benchmark/benchmark.h>

#include "core/config_paths.h"
#include "planner/planner.h"

namespace {

fsdpx::PlanRequest request(const char* model, int nodes, std::int64_t seq, std::int64_t global_batch) {
  fsdpx::PlanRequest r;
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
}

void BM_Plan405B_2048Nodes(benchmark::State& state) { run(state, request("llama3.1-405b", 2048, 8192, 16384)); }
BENCHMARK(BM_Plan405B_2048Nodes)->Unit(benchmark::kMillisecond);

void BM_Plan8B_1Node(benchmark::State& state) { run(state, request("llama3.1-8b", 1, 8192, 32)); }
BENCHMARK(BM_Plan8B_1Node)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
