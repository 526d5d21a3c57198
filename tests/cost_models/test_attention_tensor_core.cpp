// tests/cost_models/test_attention_tensor_core.cpp — the tensor-core attention cost (cost_models/
// attention_tensor_core.h): its warp tiles against the kernels' loops enumerated here, its shared-memory
// bytes worked by hand from attention_tc.cu, the shared-memory bound binding above FlashAttention-2's curve,
// and the block's prediction changing with the plan's kernel (cuda_core vs tensor_core vs flash2).
#include <doctest/doctest.h>

#include <algorithm>

#include "cost_models/attention_tensor_core.h"
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

double attention_time_s(AttentionKernel k, Pass p) {
  LayerShape s;
  s.micro_batch = 1, s.seq = 8192;
  s.attention_kernel = k;
  const char* name = p == Pass::forward ? "attn_core" : "attn_core_bwd";
  return kernel_time_s(attn(block_kernels(test::llama31_8b(), s, p), name), test::h100_sxm(), DType::bf16);
}

TEST_CASE("tensor_core attention: warp tiles are the kernels' causal loops (ragged last tile)") {
  const ModelSpec m = test::llama31_8b();
  for (const std::int64_t seq : {64, 100, 128, 1000}) {
    LayerShape s;
    s.micro_batch = 2, s.seq = seq;
    // attention_tc.cu: one block of 4 warps per 64-query tile, key tiles k0 = 0, 64, ... to min(T - 1, q0 + 63).
    double loops = 0;
    for (std::int64_t q0 = 0; q0 < seq; q0 += 64)
      for (std::int64_t k0 = 0; k0 <= std::min(seq - 1, q0 + 63); k0 += 64) loops += 4;
    CHECK(compute_detail::tensor_core_warp_tiles(rank_dims(m, s)) == doctest::Approx(loops * 2 * m.heads));
  }
}

TEST_CASE("tensor_core attention: shared-memory bytes by hand at head size 128") {
  // Per warp and key tile: S = Q·Kᵀ 4 x (8 x 2 fragments of 512 B + a 1 KiB store) = 36864; softmax 16 rows
  // x (S 256 + P 128 + O rescale 1024) = 22528; O += P·V 8 x (load and store 2 KiB + 4 x 1 KiB) = 49152;
  // K and V tiles 2 x 64 x 128 x 2 B over 4 warps = 8192.
  CHECK(compute_detail::tensor_core_forward_shared_bytes_per_warp_tile(128) == doctest::Approx(116736));
  // dQ: 2 x 36864 + 16 x (512 + 128) + 49152 + 8192 = 141312; dK/dV: 2 x 36864 + 16 x (1024 + 256)
  // + 2 x 49152 + 8192 = 200704.
  CHECK(compute_detail::tensor_core_backward_shared_bytes_per_warp_tile(128) == doctest::Approx(342016));
}

TEST_CASE("tensor_core attention: shared memory binds below FlashAttention-2's measured speed") {
  const ModelSpec m = test::llama31_8b();
  LayerShape s;
  s.micro_batch = 1, s.seq = 8192;
  s.attention_kernel = AttentionKernel::tensor_core;
  const GpuSpec g = test::h100_sxm();
  const KernelWork& fwd = attn(block_kernels(m, s, Pass::forward), "attn_core");
  CHECK(fwd.matmul);
  const double warp_tiles = 32.0 * 128 * 129 / 2 * 4;  // 128 blocks of 64 queries, causal, 32 heads, 4 warps
  const double clock_hz = 66.9e12 / (132 * 128 * 2);
  const double smem_s = warp_tiles * 116736 / 128 / (132 * clock_hz);
  CHECK(kernel_time_s(fwd, g, DType::bf16) == doctest::Approx(smem_s).epsilon(1e-9));
  CHECK(smem_s > fwd.flops / (989.4e12 * 0.374));  // FA2's curve at 8192: not the binding bound here
  CHECK(smem_s > fwd.bytes / g.hbm_bw_bytes_per_s);
}

TEST_CASE("the block's attention time follows the plan's kernel: cuda_core > tensor_core > flash2") {
  for (const Pass p : {Pass::forward, Pass::input_grad}) {
    const double core = attention_time_s(AttentionKernel::cuda_core, p);
    const double tc = attention_time_s(AttentionKernel::tensor_core, p);
    const double flash = attention_time_s(AttentionKernel::flash2, p);
    MESSAGE("pass " << int(p) << ": cuda_core " << core << " s, tensor_core " << tc << " s, flash2 " << flash << " s");
    CHECK(tc < core / 5);   // tensor cores: far above the CUDA-core kernel's ~10 TFLOP/s
    CHECK(tc > flash);      // but below FA2, whose softmax stays in registers and whose loads are pipelined
    CHECK(tc < 5 * flash);
  }
}

}  // namespace
}  // namespace fsdpx
