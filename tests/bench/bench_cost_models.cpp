// tests/bench/bench_cost_models.cpp — speed of the analytic estimate (the planner's pruning step
// calls it once per candidate).
#include <benchmark/benchmark.h>

#include "cost_models/estimate.h"

namespace {

fsdpx::ModelSpec llama_70b() {
  fsdpx::ModelSpec m;
  m.name = "llama3.1-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 28672;
  m.vocab = 128256;
  m.max_seq = 131072;
  return m;
}

fsdpx::ClusterSpec h100_cluster(int nodes) {
  fsdpx::ClusterSpec c;
  c.name = "dgx-h100";
  c.gpu.name = "h100-sxm-80gb";
  c.gpu.peak_flops_per_s[fsdpx::DType::bf16] = 989.4e12;
  c.gpu.peak_flops_per_s[fsdpx::DType::fp32] = 66.9e12;
  c.gpu.vector_flops_per_s = 66.9e12;
  c.gpu.hbm_bytes = 80.0 * (1 << 30);
  c.gpu.hbm_bw_bytes_per_s = 3.35e12;
  c.gpu.matmul_efficiency.points = {{1e8, 0.2}, {1e11, 0.8}};
  c.gpu.memory_efficiency.points = {{1e5, 0.3}, {1e8, 0.9}};
  c.gpu.attention_efficiency.points = {{512, 0.3}, {8192, 0.37}};
  c.gpu.attention_backward_efficiency.points = {{512, 0.2}, {8192, 0.32}};
  c.gpus_per_node = 8;
  c.nodes = nodes;
  c.intra = {370e9, 3.4e-6, true};
  c.inter = {8, 48e9, 14e-6};
  return c;
}

void BM_Estimate70B(benchmark::State& state) {
  const auto m = llama_70b();
  const auto c = h100_cluster(128);
  fsdpx::TrainingShape s;
  s.tp = 8;
  s.dp_shard = 128;
  s.seq = 8192;
  s.grad_accum = 8;
  for (auto _ : state) benchmark::DoNotOptimize(fsdpx::estimate(m, c, s));
}
BENCHMARK(BM_Estimate70B);

}  // namespace

BENCHMARK_MAIN();
