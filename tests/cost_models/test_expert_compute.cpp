// tests/cost_models/test_expert_compute.cpp — MoE MLP kernels (cost_models/expert_compute.h): the routed
// expert FLOPs follow rows x 3 GEMMs, the grouped GEMM's efficiency falls with fewer rows per expert (the
// existing GEMM shape factor read at the per-expert M), the router and shared experts are there.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "core/config_paths.h"
#include "tests/support/ep_parallelism.h"
#include "core/gpu_spec.h"
#include "cost_models/expert_compute.h"

namespace fsdpx {
namespace {

const std::string kData = FSDPX_TEST_DATA_DIR;

const KernelWork& named(const std::vector<KernelWork>& ks, const std::string& name) {
  for (const auto& k : ks)
    if (k.name == name) return k;
  FAIL("no kernel " << name);
  return ks.front();
}

}  // namespace

TEST_CASE("routed expert FLOPs: 3 GEMMs of 2 x rows x hidden x expert width on the slowest rank") {
  const ModelSpec v3 = load_model(kData + "/hf/deepseek-v3/config.json");
  const RoutedLoad l = routed_load(v3, 1, 4096, test::ep_parallelism(64, 64), MoeRouting{1.25});
  const double want = 3 * 2.0 * (4096.0 * 8 * 1.25) * 7168 * 2048;
  CHECK(routed_expert_flops(v3, l, 1) == doctest::Approx(want));
  const auto fwd = moe_mlp_kernels(v3, l, 1, DType::bf16, Pass::forward);
  const double experts = named(fwd, "moe_experts_gate_up").flops + named(fwd, "moe_experts_down").flops;
  CHECK(experts == doctest::Approx(want));
  CHECK(named(fwd, "moe_router").flops == doctest::Approx(2.0 * 4096 * 7168 * 256));
  CHECK(named(fwd, "moe_shared_gate_up").flops == doctest::Approx(2.0 * 4096 * 7168 * 2 * 2048));  // 1 shared
  const auto wgrad = moe_mlp_kernels(v3, l, 1, DType::bf16, Pass::weight_grad);
  CHECK(named(wgrad, "moe_experts_down").flops == doctest::Approx(named(fwd, "moe_experts_down").flops));
}

TEST_CASE("grouped GEMM efficiency by tokens per expert: fewer rows per expert, slower per FLOP") {
  const ModelSpec v3 = load_model(kData + "/hf/deepseek-v3/config.json");
  const GpuSpec gpu = load_gpu("h100-sxm-80gb");
  REQUIRE(gpu.matmul_half_efficiency_dim > 0);
  auto s_per_flop = [&](int ep) {
    const RoutedLoad l = routed_load(v3, 1, 4096, test::ep_parallelism(256, ep), MoeRouting{1.0});
    const KernelWork k = named(moe_mlp_kernels(v3, l, 1, DType::bf16, Pass::forward), "moe_experts_down");
    CHECK(k.min_dim == doctest::Approx(std::min(l.rows_per_expert, 2048.0)));
    return kernel_time_s(k, gpu, DType::bf16) / k.flops;
  };
  // ep 1: 128 rows per expert; ep 256: 32768 rows on one expert (the expert width 2048 bounds it).
  CHECK(s_per_flop(1) > 1.2 * s_per_flop(256));
  CHECK(s_per_flop(1) > s_per_flop(16));
}

}  // namespace fsdpx
