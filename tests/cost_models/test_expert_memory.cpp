// tests/cost_models/test_expert_memory.cpp — expert state under ep x FSDP and routed activation bytes
// (cost_models/expert_memory.h): experts / ep per rank, sharded over dp_shard x cp / ep, so the per-GPU
// state of the experts does not change with ep at fixed dp_shard x cp (FSDP already spreads them).
#include <doctest/doctest.h>

#include <string>

#include "core/config_paths.h"
#include "tests/support/ep_parallelism.h"
#include "cost_models/expert_memory.h"

namespace fsdpx {
namespace {

const std::string kData = FSDPX_TEST_DATA_DIR;

}  // namespace

TEST_CASE("DeepSeek-V3 experts: 58 MoE layers x 256 x 3 x 7168 x 2048, 16 bytes each over dp_shard x cp") {
  const ModelSpec v3 = load_model(kData + "/hf/deepseek-v3/config.json");
  const double all = 58.0 * 256 * 3 * 7168 * 2048;
  CHECK(local_expert_params(v3, test::ep_parallelism(1024, 1)) == all);
  CHECK(local_expert_params(v3, test::ep_parallelism(1024, 64)) == all / 64);
  const PrecisionPolicy policy{DType::bf16, DType::fp32, true};
  const StateBytes s1 = expert_state_bytes(v3, test::ep_parallelism(1024, 1), policy);
  const StateBytes s64 = expert_state_bytes(v3, test::ep_parallelism(1024, 64), policy);
  CHECK(s1.total() == doctest::Approx(16 * all / 1024));
  CHECK(s64.total() == doctest::Approx(s1.total()));  // 1/64 of the experts over 16 ranks
}

TEST_CASE("routed activations grow with top_k and the slowest rank's imbalance") {
  const ModelSpec v3 = load_model(kData + "/hf/deepseek-v3/config.json");
  const RoutedLoad even = routed_load(v3, 1, 4096, test::ep_parallelism(64, 8), MoeRouting{1.0});
  const RoutedLoad skew = routed_load(v3, 1, 4096, test::ep_parallelism(64, 8), MoeRouting{1.5});
  const RoutedActivationBytes a = routed_activation_bytes(v3, even, 1, DType::bf16);
  CHECK(a.dispatch_buffers == doctest::Approx(2 * 4096.0 * 8 * 7168 * 2));
  CHECK(a.saved == doctest::Approx(4096.0 * 8 * (2 * 7168 + 3 * 2048) * 2 + 4096.0 * 256 * 4));
  const RoutedActivationBytes b = routed_activation_bytes(v3, skew, 1, DType::bf16);
  CHECK(b.dispatch_buffers == doctest::Approx(2.5 * 4096.0 * 8 * 7168 * 2));
  CHECK(b.saved > 1.4 * a.saved);
}

}  // namespace fsdpx
