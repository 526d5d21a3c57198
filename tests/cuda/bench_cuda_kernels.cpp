// tests/cuda/bench_cuda_kernels.cpp — event-timed benchmarks of the CUDA kernels at Llama-8B-like
// shapes on one GPU (run by tools/gpu_check.sh): median of 10 timed repeats after 2 warm-ups, inputs
// random (never zeros: .library/device/METHOD.md; a 2^20-value random block tiled), reported as ms and
// achieved TFLOP/s or GB/s against the FLOP and minimum-byte counts written next to each case. Leaves out
// L2 flushing between repeats (the buffers here are far larger than the 50 MB L2). Prints a markdown
// table; exit 77 without a GPU. `--gemm-search`: only llama3.2-1b's qkv GEMMs (issue 29) under cuBLASLt's
// heuristic and under FSDPX_GEMM_ALGO=search's choice (gemm_algo_choice.h; its line per shape on stderr).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "executor/cuda/activation.h"
#include "executor/cuda/adamw.h"
#include "executor/cuda/attention.h"
#include "executor/cuda/attention_tc.h"
#include "executor/cuda/cast.h"
#include "executor/cuda/cross_entropy.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/device.h"
#include "executor/cuda/gemm.h"
#include "executor/cuda/norm.h"

namespace fsdpx::cuda {
namespace {

template <class T>
T* alloc_random(std::int64_t n, float lo, float hi) {
  // A block of 2^20 random values tiled by doubling device copies: random data (never zeros) without
  // drawing billions of host numbers (seconds of the GPU call's budget).
  const std::int64_t block = std::min<std::int64_t>(n, std::int64_t(1) << 20);
  std::vector<float> host(static_cast<std::size_t>(block));
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(lo, hi);
  for (float& v : host) v = u(rng);
  float* f32 = nullptr;
  CUDA_CHECK(cudaMalloc(&f32, sizeof(float) * n));
  CUDA_CHECK(cudaMemcpy(f32, host.data(), sizeof(float) * block, cudaMemcpyHostToDevice));
  for (std::int64_t have = block; have < n; have *= 2)
    CUDA_CHECK(cudaMemcpy(f32 + have, f32, sizeof(float) * std::min(have, n - have), cudaMemcpyDeviceToDevice));
  if constexpr (std::is_same_v<T, float>) {
    return f32;
  } else {
    bf16* out = nullptr;
    CUDA_CHECK(cudaMalloc(&out, sizeof(bf16) * n));
    cast_f32_to_bf16(out, f32, n, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(f32));
    return out;
  }
}

double median_ms(const std::function<void()>& fn) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 2; ++i) fn();
  std::vector<float> ms(10);
  for (float& m : ms) {
    CUDA_CHECK(cudaEventRecord(a));
    fn();
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    CUDA_CHECK(cudaEventElapsedTime(&m, a, b));
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void row(const char* name, const std::string& shape, double ms, double flops, double bytes) {
  std::printf("| %s | %s | %.3f | %.1f | %.0f |\n", name, shape.c_str(), ms, flops / (ms * 1e-3) / 1e12,
              bytes / (ms * 1e-3) / 1e9);
  std::fflush(stdout);  // each row reaches the log even if a later case faults
}

void bench_all() {
  const std::int64_t n = 16384, c = 4096, f = 14336, v = 50304;  // tokens, model, ffn, padded vocab
  bf16* x = alloc_random<bf16>(n * c, -1, 1);
  bf16* w = alloc_random<bf16>(f * c, -0.05f, 0.05f);
  bf16* y = alloc_random<bf16>(n * 2 * f, -1, 1);
  bf16* z = alloc_random<bf16>(n * f, -1, 1);
  float* rstd = alloc_random<float>(n, 1, 2);
  std::printf("| kernel | shape | ms | TFLOP/s | GB/s |\n|---|---|---|---|---|\n");
  // RMSNorm forward: reads N·C bf16, writes N·C bf16.
  row("rmsnorm_forward", "16384x4096", median_ms([&] { rmsnorm_forward(z, rstd, x, w, n, c, 1e-5f, nullptr); }), 0,
      4.0 * n * c);
  // SwiGLU forward: reads N·2F, writes N·F bf16.
  row("swiglu_forward", "16384x14336", median_ms([&] { mlp_act_forward(FfnKind::swiglu, z, y, n, f, nullptr); }), 0,
      6.0 * n * f);
  // RMSNorm backward: reads dout, inp, dinp and writes dinp (bf16), 8·N·C; not counted: the fp32 chunk
  // partials written and read back, 2·4·min(N, 1024)·C (6% more).
  float* dweight = alloc_random<float>(c, -1, 1);
  float* norm_scratch = nullptr;
  CUDA_CHECK(cudaMalloc(&norm_scratch, sizeof(float) * norm_backward_scratch_elems(n, c)));
  row("rmsnorm_backward", "16384x4096",
      median_ms([&] { rmsnorm_backward(z, dweight, norm_scratch, y, x, w, rstd, n, c, nullptr); }), 0, 8.0 * n * c);
  // SwiGLU backward: reads gate, up (N·2F), dout (N·F) and dinp (N·2F), writes dinp (N·2F) bf16: 14·N·F.
  bf16* dfc = alloc_random<bf16>(n * 2 * f, -1, 1);
  row("swiglu_backward", "16384x14336",
      median_ms([&] { mlp_act_backward(FfnKind::swiglu, dfc, z, y, n, f, nullptr); }), 0, 14.0 * n * f);
  CUDA_CHECK(cudaFree(dfc));
  GemmContext ctx;
  // GEMM: 2·N·C·F FLOPs (mlp_up-like, bf16 out).
  row("gemm_bf16", "16384x4096x14336",
      median_ms([&] { matmul_forward(ctx, z, GemmOut::operand, x, w, nullptr, n, c, f, false, nullptr); }),
      2.0 * n * c * f, 2.0 * (n * c + c * f + n * f));
  AttnShape s;
  s.b = 2, s.t = 2048, s.nh = 32, s.nkv = 8, s.hd = 128;  // Llama-3-8B attention, 4K tokens
  AttnShape l = s;
  l.b = 1, l.t = 8192;  // one long sequence, 8,192 tokens: sized for both shapes below
  bf16* qkv = alloc_random<bf16>(l.b * l.t * l.qkv_row(), -1, 1);
  float* lse = alloc_random<float>(l.b * l.nh * l.t, 0, 1);
  float* scratch = alloc_random<float>(l.b * l.nh * l.t, 0, 1);
  // Causal attention FLOPs: 4·B·NH·T²·HD / 2 forward, 2.5× that backward (FA2 paper convention).
  const double attn_flops = 2.0 * s.b * s.nh * double(s.t) * s.t * s.hd;
  row("flash_forward", "B2 T2048 H32/8 D128", median_ms([&] { flash_attention_forward(z, lse, qkv, s, nullptr); }),
      attn_flops, 2.0 * (s.b * s.t * s.qkv_row() + s.b * s.t * s.nh * s.hd));
  row("flash_backward", "B2 T2048 H32/8 D128",
      median_ms([&] { flash_attention_backward(y, scratch, x, z, qkv, lse, s, nullptr); }), 2.5 * attn_flops,
      2.0 * 3 * (s.b * s.t * s.qkv_row()));
  // The tensor-core kernels (attention_tc.h) at the same shape and FLOP count; the T 8192 rows compare with
  // tests/cuda/bench_sdpa.py's PyTorch SDPA at B 1 (its 8 KV heads expanded to 32).
  row("tc_attention_forward", "B2 T2048 H32/8 D128",
      median_ms([&] { tc_attention_forward(z, lse, qkv, s, nullptr); }), attn_flops,
      2.0 * (s.b * s.t * s.qkv_row() + s.b * s.t * s.nh * s.hd));
  row("tc_attention_backward", "B2 T2048 H32/8 D128",
      median_ms([&] { tc_attention_backward(y, scratch, x, z, qkv, lse, s, nullptr); }), 2.5 * attn_flops,
      2.0 * 3 * (s.b * s.t * s.qkv_row()));
  // tc_attention_forward/backward run the register-resident kernels (attention_fa2.h); the WMMA ones for A/B.
  row("tc_attention_forward_wmma", "B2 T2048 H32/8 D128",
      median_ms([&] { tc_attention_forward_wmma(z, lse, qkv, s, nullptr); }), attn_flops,
      2.0 * (s.b * s.t * s.qkv_row() + s.b * s.t * s.nh * s.hd));
  row("tc_attention_backward_wmma", "B2 T2048 H32/8 D128",
      median_ms([&] { tc_attention_backward_wmma(y, scratch, x, z, qkv, lse, s, nullptr); }), 2.5 * attn_flops,
      2.0 * 3 * (s.b * s.t * s.qkv_row()));
  const double long_flops = 2.0 * l.b * l.nh * double(l.t) * l.t * l.hd;
  row("tc_attention_forward", "B1 T8192 H32/8 D128",
      median_ms([&] { tc_attention_forward(z, lse, qkv, l, nullptr); }), long_flops,
      2.0 * (l.b * l.t * l.qkv_row() + l.b * l.t * l.nh * l.hd));
  row("tc_attention_backward", "B1 T8192 H32/8 D128",
      median_ms([&] { tc_attention_backward(y, scratch, x, z, qkv, lse, l, nullptr); }), 2.5 * long_flops,
      2.0 * 3 * (l.b * l.t * l.qkv_row()));
  row("tc_attention_forward_wmma", "B1 T8192 H32/8 D128",
      median_ms([&] { tc_attention_forward_wmma(z, lse, qkv, l, nullptr); }), long_flops,
      2.0 * (l.b * l.t * l.qkv_row() + l.b * l.t * l.nh * l.hd));
  row("tc_attention_backward_wmma", "B1 T8192 H32/8 D128",
      median_ms([&] { tc_attention_backward_wmma(y, scratch, x, z, qkv, lse, l, nullptr); }), 2.5 * long_flops,
      2.0 * 3 * (l.b * l.t * l.qkv_row()));
  AttnShape d64 = s;
  d64.b = 1, d64.hd = 64;  // llama3.2-1b's head dim (its 32/8 heads), one 2,048-token sequence
  const double d64_flops = 2.0 * d64.b * d64.nh * double(d64.t) * d64.t * d64.hd;
  row("tc_attention_forward", "B1 T2048 H32/8 D64", median_ms([&] { tc_attention_forward(z, lse, qkv, d64, nullptr); }),
      d64_flops, 2.0 * (d64.b * d64.t * d64.qkv_row() + d64.b * d64.t * d64.nh * d64.hd));
  row("tc_attention_forward_wmma", "B1 T2048 H32/8 D64",
      median_ms([&] { tc_attention_forward_wmma(z, lse, qkv, d64, nullptr); }), d64_flops,
      2.0 * (d64.b * d64.t * d64.qkv_row() + d64.b * d64.t * d64.nh * d64.hd));
  row("tc_attention_backward", "B1 T2048 H32/8 D64",
      median_ms([&] { tc_attention_backward(y, scratch, x, z, qkv, lse, d64, nullptr); }), 2.5 * d64_flops,
      2.0 * 3 * (d64.b * d64.t * d64.qkv_row()));
  row("tc_attention_backward_wmma", "B1 T2048 H32/8 D64",
      median_ms([&] { tc_attention_backward_wmma(y, scratch, x, z, qkv, lse, d64, nullptr); }), 2.5 * d64_flops,
      2.0 * 3 * (d64.b * d64.t * d64.qkv_row()));
  const std::int64_t nc = 4096;  // classifier rows: 4096 × 50304 bf16 logits (412 MB)
  bf16* logits = alloc_random<bf16>(nc * v, -4, 4);
  std::vector<std::int32_t> tg(nc, 7);
  std::int32_t* targets = nullptr;
  CUDA_CHECK(cudaMalloc(&targets, sizeof(std::int32_t) * nc));
  CUDA_CHECK(cudaMemcpy(targets, tg.data(), sizeof(std::int32_t) * nc, cudaMemcpyHostToDevice));
  // Fused classifier with dlogits written in place (reads the row twice, writes it once).
  row("fused_classifier", "4096x50304",
      median_ms([&] { fused_classifier(logits, rstd, rstd + 1, targets, nc, 50257, v, 1.0f, false, nullptr); }), 0,
      2.0 * nc * v);
  const std::int64_t shard = std::int64_t(1) << 27;  // 134M fp32 elements
  float* p = alloc_random<float>(shard, -1, 1);
  float* m = alloc_random<float>(shard, -1, 1);
  float* vv = alloc_random<float>(shard, 0, 1);
  float* g = alloc_random<float>(shard, -1, 1);
  const AdamWArgs a{1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 10, 1.0f};
  // AdamW: reads p, m, v, g (fp32), writes p, m, v (fp32) and the bf16 copy: 30 bytes per element.
  row("adamw", "134M fp32", median_ms([&] { adamw_update(a, p, m, vv, g, x, std::min(shard, n * c), nullptr); }), 0,
      30.0 * std::min(shard, n * c));
}

// llama3.2-1b's qkv GEMMs (C 2048, QKV 3072 = 32 + 2·8 heads of 64) at the 1B plan's N = 8192 tokens
// (micro-batch 4 x 2048) and plan B's 16384, each pass under the heuristic's first algorithm and under the
// search's; attn_out's forward (same K and N, M 2048, full speed in the profile) beside them.
void bench_gemm_search() {
  const std::int64_t c = 2048, qkv = 3072, n_max = 16384;
  bf16* x = alloc_random<bf16>(n_max * c, -1, 1);
  bf16* w = alloc_random<bf16>(qkv * c, -0.05f, 0.05f);
  bf16* out = alloc_random<bf16>(n_max * qkv, -1, 1);
  bf16* dx = alloc_random<bf16>(n_max * c, -1, 1);
  float* dw = alloc_random<float>(qkv * c, -1, 1);
  GemmContext heuristic(GemmAlgoMode::heuristic), search(GemmAlgoMode::search);
  std::printf("| kernel | shape | ms | TFLOP/s | GB/s |\n|---|---|---|---|---|\n");
  for (const std::int64_t n : {std::int64_t(8192), n_max}) {
    const double flops = 2.0 * n * c * qkv, bytes16 = 2.0 * (n * c + c * qkv + n * qkv);
    const double bytes_dw = 2.0 * (n * c + n * qkv) + 8.0 * c * qkv;  // fp32 dW read and written
    for (GemmContext* ctx : {&heuristic, &search}) {
      const std::string mode = ctx == &heuristic ? "heuristic" : "search";
      const std::string shape = std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(qkv);
      row(("gemm_qkv_fwd_" + mode).c_str(), shape,
          median_ms([&] { matmul_forward(*ctx, out, GemmOut::operand, x, w, nullptr, n, c, qkv, false, nullptr); }),
          flops, bytes16);
      row(("gemm_qkv_dx_" + mode).c_str(), shape,
          median_ms([&] { matmul_backward_dx(*ctx, dx, GemmOut::operand, out, w, n, c, qkv, false, nullptr); }),
          flops, bytes16);
      row(("gemm_qkv_dw_" + mode).c_str(), shape,
          median_ms([&] { matmul_backward_dw(*ctx, dw, GemmOut::f32, out, x, n, c, qkv, true, nullptr); }), flops,
          bytes_dw);
    }
  }
  row("gemm_attn_out_fwd_heuristic", "8192x2048x2048",
      median_ms([&] { matmul_forward(heuristic, dx, GemmOut::operand, x, w, nullptr, 8192, c, c, false, nullptr); }),
      2.0 * 8192 * c * c, 2.0 * (2 * 8192 * c + c * c));
}

}  // namespace
}  // namespace fsdpx::cuda

int main(int argc, char** argv) {
  const bool gemm_search = argc == 2 && std::string(argv[1]) == "--gemm-search";
  if (argc > 2 || (argc == 2 && !gemm_search)) {
    std::fprintf(stderr, "usage: bench_cuda_kernels [--gemm-search]\n");
    return 2;
  }
  if (fsdpx::cuda::device_count() == 0) {
    std::printf("SKIPPED: %s\n", fsdpx::cuda::cuda_unavailable_reason().c_str());
    return 77;
  }
  std::printf("device: %s\n\n", fsdpx::cuda::describe(fsdpx::cuda::device_info(0)).c_str());
  if (gemm_search) fsdpx::cuda::bench_gemm_search();
  else fsdpx::cuda::bench_all();
  return 0;
}
