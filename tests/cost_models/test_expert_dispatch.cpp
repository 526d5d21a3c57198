// tests/cost_models/test_expert_dispatch.cpp — routed rows and dispatch all-to-alls of an MoE block
// (cost_models/expert_dispatch.h): rows = tokens x top_k, the imbalance on the slowest rank capped at ep,
// bytes per peer pair, and the all-to-all time as concurrent per-peer sends on NVLink and across nodes.
#include <doctest/doctest.h>

#include <string>

#include "core/config_paths.h"
#include "tests/support/ep_parallelism.h"
#include "cost_models/expert_dispatch.h"

namespace fsdpx {
namespace {

const std::string kData = FSDPX_TEST_DATA_DIR;

ClusterSpec dgx_h100(int nodes) {
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = nodes;
  return c;
}

}  // namespace

TEST_CASE("DeepSeek-V3 at ep 64: 4096 tokens x top-8 rows, 4 local experts, imbalance on the slowest rank") {
  const ModelSpec v3 = load_model(kData + "/hf/deepseek-v3/config.json");
  const RoutedLoad l = routed_load(v3, 1, 4096, test::ep_parallelism(64, 64), MoeRouting{1.25});
  CHECK(l.tokens == 4096);
  CHECK(l.mean_rows == 4096.0 * 8);
  CHECK(l.slowest_rows == doctest::Approx(4096.0 * 8 * 1.25));
  CHECK(l.local_experts == 4);
  CHECK(l.rows_per_expert == doctest::Approx(4096.0 * 8 * 1.25 / 4));
  // ep 1: every rank runs its own rows through all 256 experts; no rank waits on another.
  const RoutedLoad one = routed_load(v3, 1, 4096, test::ep_parallelism(64, 1), MoeRouting{1.25});
  CHECK(one.slowest_rows == one.mean_rows);
  CHECK(one.local_experts == 256);
  // The imbalance is capped at ep: all rows on one rank.
  const RoutedLoad capped = routed_load(v3, 1, 4096, test::ep_parallelism(64, 2), MoeRouting{5.0});
  CHECK(capped.slowest_rows == doctest::Approx(2 * capped.mean_rows));
}

TEST_CASE("dispatch bytes: tokens x top_k x hidden x dtype bytes, S / ep to each peer") {
  const ModelSpec v3 = load_model(kData + "/hf/deepseek-v3/config.json");
  const RoutedLoad l = routed_load(v3, 1, 4096, test::ep_parallelism(64, 8), MoeRouting{1.0});
  const double s = dispatch_all_to_all_bytes(v3, l, DType::bf16);
  CHECK(s == 4096.0 * 8 * 7168 * 2);
  CHECK(dispatch_bytes_per_peer(s, 8) == s / 8);
  CHECK(dispatch_all_to_all_bytes(v3, l, DType::fp32) == 2 * s);
}

TEST_CASE("dispatch time: ep - 1 concurrent sends; NVLink inside a node, the NIC share across nodes") {
  const double s = 1e9;
  const ClusterSpec one = dgx_h100(1), many = dgx_h100(8);
  // ep 8 inside a node: 7 peers x S/8 over the GPU's NVLink (370 GB/s busbw) + base and hop latency.
  const double t8 = dispatch_time_s(s, 1.0, GroupShape{8, 8}, one);
  CHECK(t8 == doctest::Approx(8.4e-6 + 3.4e-6 + 7 * (s / 8) / 370e9));
  // ep 64 over 8 nodes: 56 of the 63 peers off-node at the GPU's 48 GB/s NIC share, bounding the time.
  const double t64 = dispatch_time_s(s, 1.0, GroupShape{64, 8}, many);
  CHECK(t64 == doctest::Approx(8.4e-6 + 14e-6 + 56 * (s / 64) / 48e9));
  CHECK(t64 > 5 * t8);
  // The slowest rank's imbalance scales the bytes it carries; ep 1 moves nothing.
  CHECK(dispatch_time_s(s, 1.5, GroupShape{8, 8}, one) ==
        doctest::Approx(8.4e-6 + 3.4e-6 + 1.5 * 7 * (s / 8) / 370e9));
  CHECK(dispatch_time_s(s, 1.0, GroupShape{1, 1}, one) == 0.0);
}

TEST_CASE("the ep group lies on dp_shard x cp coordinates tp ranks apart") {
  const ClusterSpec c = dgx_h100(16);
  CHECK(ep_group_shape(test::ep_parallelism(128, 8), c).ranks_per_node == 8);
  CHECK(ep_group_shape(test::ep_parallelism(128, 64), c).nodes() == 8);
  CHECK(ep_group_shape(test::ep_parallelism(64, 8, 2), c).ranks_per_node == 4);  // 8 GPUs / tp 2
  CHECK(ep_group_shape(test::ep_parallelism(128, 4), c).ranks_per_node == 4);
}

}  // namespace fsdpx
