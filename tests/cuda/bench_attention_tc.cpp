// tests/cuda/bench_attention_tc.cpp — Google Benchmark of the causal attention kernels on one GPU: the
// tensor-core kernel (attention_tc.h) and the CUDA-core one (attention.h), forward and backward, bf16,
// at Llama-3-8B's head layout (32 query heads, 8 KV heads, head dim 128) and head dim 64. Each iteration
// is timed with CUDA events (manual time); the TFLOP/s counter counts the causal FLOPs as FlashAttention-2
// does (forward 4·B·NH·T²·HD/2, backward 2.5x: Dao 2023 §4.1), so it compares with
// tests/cuda/bench_sdpa.py's PyTorch SDPA figures. Without a GPU every case is skipped with a message.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "executor/cuda/attention.h"
#include "executor/cuda/attention_tc.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/device.h"

namespace fsdpx::cuda {
namespace {

// A device buffer of n 16-bit values drawn uniformly from [-1, 1] (never zeros).
bf16* random_device_bf16(std::int64_t n) {
  std::vector<bf16> host(static_cast<std::size_t>(n));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (bf16& v : host) v = __float2bfloat16(u(rng));
  bf16* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, sizeof(bf16) * n));
  CUDA_CHECK(cudaMemcpy(d, host.data(), sizeof(bf16) * n, cudaMemcpyHostToDevice));
  return d;
}

// Args: T, head dim, tensor cores (1) or CUDA cores (0), backward (1) or forward (0); B = 1, 32/8 heads.
void BM_attention(benchmark::State& state) {
  if (device_count() == 0) {
    state.SkipWithError("no CUDA device found");
    return;
  }
  AttnShape s;
  s.b = 1, s.t = state.range(0), s.nh = 32, s.nkv = 8, s.hd = state.range(1);
  const bool tc = state.range(2) != 0, backward = state.range(3) != 0;
  const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
  bf16 *qkv = random_device_bf16(n_qkv), *dout = random_device_bf16(n_out), *dqkv = random_device_bf16(n_qkv);
  bf16* out = random_device_bf16(n_out);
  float *lse = nullptr, *scratch = nullptr;
  CUDA_CHECK(cudaMalloc(&lse, sizeof(float) * flash_attention_lse_elems(s)));
  CUDA_CHECK(cudaMalloc(&scratch, sizeof(float) * flash_attention_scratch_elems(s)));
  auto fwd = [&] { tc ? tc_attention_forward(out, lse, qkv, s, nullptr) : flash_attention_forward(out, lse, qkv, s, nullptr); };
  auto bwd = [&] {
    tc ? tc_attention_backward(dqkv, scratch, dout, out, qkv, lse, s, nullptr)
       : flash_attention_backward(dqkv, scratch, dout, out, qkv, lse, s, nullptr);
  };
  fwd();  // warm-up, and the lse the backward reads
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (auto _ : state) {
    CUDA_CHECK(cudaEventRecord(start));
    backward ? bwd() : fwd();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms / 1e3);
  }
  const double flops = 4.0 * s.b * s.nh * double(s.t) * double(s.t) * s.hd / 2 * (backward ? 2.5 : 1.0);
  state.counters["TFLOP/s"] = benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
  for (void* p : {static_cast<void*>(qkv), static_cast<void*>(dout), static_cast<void*>(dqkv), static_cast<void*>(out),
                  static_cast<void*>(lse), static_cast<void*>(scratch)})
    CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
}

BENCHMARK(BM_attention)
    ->ArgNames({"T", "HD", "tc", "bwd"})
    ->ArgsProduct({{2048, 8192}, {64, 128}, {1, 0}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fsdpx::cuda

BENCHMARK_MAIN();
