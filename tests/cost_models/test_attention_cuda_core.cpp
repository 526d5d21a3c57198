// tests/cost_models/test_attention_cuda_core.cpp — the CUDA-core attention cost (cost_models/
// attention_cuda_core.h): its tile count against the kernels' own loops enumerated here, its time against
// the shared-memory bound worked by hand, and the block's time changing with the plan's kernel
// (cuda_core vs FlashAttention-2's curves).
#include <doctest/doctest.h>

#include <algorithm>

#include "cost_models/attention_cuda_core.h"
#include "cost_models/compute.h"
#include "tests/support/specs.h"

namespace fsdpx {
namespace {

using compute_detail::rank_dims;

const KernelWork& attn(const std::vector<KernelWork>& ks, const char* name) {
  const auto it = std::find_if(ks.begin(), ks.end(), [&](const KernelWork& k) { return k.name == name; });
  REQUIRE(it != ks.end());
  return *it;
}

TEST_CASE("cuda_core attention: row-tiles are the kernels' causal loops (ragged last tile)") {
  const ModelSpec m = test::llama31_8b();
  for (const std::int64_t seq : {32, 45, 64, 1000}) {
    LayerShape s;
    s.micro_batch = 2, s.seq = seq;
    // attention.cu: one block per 32-query tile q, key tiles k0 = 0, 32, ... up to min(T - 1, q0 + 31).
    double loops = 0;
    for (std::int64_t q0 = 0; q0 < seq; q0 += 32)
      for (std::int64_t k0 = 0; k0 <= std::min(seq - 1, q0 + 31); k0 += 32) loops += 32;
    CHECK(compute_detail::cuda_core_row_tiles(rank_dims(m, s)) == doctest::Approx(loops * 2 * m.heads));
  }
}

TEST_CASE("cuda_core attention: shared memory binds, at one 128-byte wavefront per SM per clock") {
  const ModelSpec m = test::llama31_8b();  // 32 heads of 128
  LayerShape s;
  s.micro_batch = 1, s.seq = 8192;
  s.attention_kernel = AttentionKernel::cuda_core;
  const GpuSpec g = test::h100_sxm();
  const KernelWork& fwd = attn(block_kernels(m, s, Pass::forward), "attn_core");
  CHECK_FALSE(fwd.matmul);  // CUDA cores: never at the tensor-core peak
  // By hand, per query row and 32-key tile at HD 128: Q·K 2·128 loads, 2 warp reductions of 5 shuffles,
  // 32 shuffles of p, P·V 128 loads, K/V tile stores 2·32·128/32/32 = 8: 434 wavefronts.
  CHECK(compute_detail::cuda_core_forward_wavefronts_per_row_tile(128) == doctest::Approx(434));
  const double row_tiles = 32.0 * 256 * 257 / 2 * 32;  // 256 tiles of 32 rows, causal, 32 heads
  const double clock_hz = 66.9e12 / (132 * 128 * 2);    // 1.98 GHz
  const double expect_s = row_tiles * 434 / (132 * clock_hz);
  CHECK(kernel_time_s(fwd, g, DType::bf16) == doctest::Approx(expect_s).epsilon(1e-9));
  CHECK(expect_s > fwd.flops / g.vector_flops_per_s);        // above the FP32 FMA bound
  CHECK(expect_s > fwd.bytes / g.hbm_bw_bytes_per_s);         // and the HBM bound
  const KernelWork& bwd = attn(block_kernels(m, s, Pass::input_grad), "attn_core_bwd");
  CHECK(bwd.shared_memory_wavefronts > 3 * fwd.shared_memory_wavefronts);  // dQ and dK/dV each recompute S, dP
}

TEST_CASE("the block's attention time follows the plan's kernel: cuda_core vs FlashAttention-2") {
  const ModelSpec m = test::llama31_8b();
  const GpuSpec g = test::h100_sxm();
  LayerShape flash;
  flash.micro_batch = 1, flash.seq = 8192;
  LayerShape core = flash;
  core.attention_kernel = AttentionKernel::cuda_core;
  for (const Pass p : {Pass::forward, Pass::input_grad}) {
    const char* name = p == Pass::forward ? "attn_core" : "attn_core_bwd";
    const double t_flash = kernel_time_s(attn(block_kernels(m, flash, p), name), g, DType::bf16);
    const double t_core = kernel_time_s(attn(block_kernels(m, core, p), name), g, DType::bf16);
    // FA2 runs at ~37% (forward) / ~32% (backward) of 989 TFLOP/s; the CUDA-core kernel at ~10 TFLOP/s.
    CHECK(t_core > 20 * t_flash);
    CHECK(t_core < 100 * t_flash);
  }
  // Everything else in the block is the same kernel for kernel.
  const auto a = block_kernels(m, flash, Pass::forward), b = block_kernels(m, core, Pass::forward);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].name != "attn_core") CHECK(kernel_time_s(a[i], g, DType::bf16) == kernel_time_s(b[i], g, DType::bf16));
}

}  // namespace
}  // namespace fsdpx
