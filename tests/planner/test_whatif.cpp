// tests/planner/test_whatif.cpp — what-if points: strict --vary parsing, the grid order, resizing a plan
// to a node count (FSDP and HSDP; weak scaling keeps the per-GPU batch, strong scaling the global batch),
// the per-GPU NIC bandwidth formula, bad points as error rows, and simulated trends that must hold
// whatever the cost model's constants: more inter-node bandwidth never slows a step, doubling seq doubles
// tokens, and under strong scaling more GPUs shorten the step.
#include <doctest/doctest.h>

#include "core/config_paths.h"
#include "core/errors.h"
#include "planner/whatif.h"

namespace fsdpx {
namespace {

Plan small_plan(int nodes, int dp_replicate, int dp_shard, std::int64_t global_batch) {
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = nodes;
  TrainingSettings t;
  t.seq = 2048, t.micro_batch = 1, t.global_batch = global_batch;
  Parallelism par;
  par.dp_replicate = dp_replicate, par.dp_shard = dp_shard;
  if (dp_replicate > 1) par.data_parallel = DataParallel::hsdp;
  Plan p = default_plan(load_model("llama3.2-1b"), c, t, par, 1, RecomputeMode::none);
  validate_plan(p, "test");
  return p;
}

WhatIfPoint point(WhatIfParam p, double v) { return WhatIfPoint{{{p, v}}}; }

}  // namespace

TEST_CASE("--vary parsing is strict") {
  const WhatIfAxis a = parse_whatif_axis("nodes=1,2,4,8");
  CHECK(a.param == WhatIfParam::nodes);
  CHECK(a.values == std::vector<double>{1, 2, 4, 8});
  CHECK(parse_whatif_axis("inter_node_gbit=100,200.5").values == std::vector<double>{100, 200.5});
  for (const char* bad : {"nodes", "nodes=", "nodes=1,,2", "nodes=1.5", "nodes=0", "seq=-4096", "gpus=8", "seq=4k"})
    CHECK_THROWS_AS_MESSAGE(parse_whatif_axis(bad), ConfigError, bad);
}

TEST_CASE("the grid is the Cartesian product, first axis outermost; an axis twice is an error") {
  const auto grid = whatif_grid({parse_whatif_axis("nodes=1,2,4"), parse_whatif_axis("seq=1024,2048")});
  REQUIRE(grid.size() == 6);
  CHECK(grid[0].label() == "nodes=1 seq=1024");
  CHECK(grid[1].label() == "nodes=1 seq=2048");
  CHECK(grid[5].label() == "nodes=4 seq=2048");
  CHECK(whatif_grid({}).size() == 1);
  CHECK(whatif_grid({}).front().label() == "base");
  CHECK_THROWS_AS(whatif_grid({parse_whatif_axis("seq=1"), parse_whatif_axis("seq=2")}), ConfigError);
}

TEST_CASE("nodes: FSDP grows dp_shard and the global batch, keeping the per-GPU batch") {
  const Plan base = small_plan(1, 1, 8, 16);
  for (int nodes : {1, 2, 4}) {
    const Plan p = whatif_plan(base, point(WhatIfParam::nodes, nodes));
    CAPTURE(nodes);
    CHECK(p.cluster.world_size() == 8 * nodes);
    CHECK(p.parallelism.dp_shard == 8 * nodes);
    CHECK(p.training.global_batch == 16 * nodes);
    CHECK(p.grad_accum() == base.grad_accum());
    CHECK(!p.predicted);
  }
}

TEST_CASE("nodes: HSDP keeps dp_shard and grows the replicas; one replica is full shard") {
  const Plan base = small_plan(2, 2, 8, 32);
  const Plan four = whatif_plan(base, point(WhatIfParam::nodes, 4));
  CHECK(four.parallelism.dp_replicate == 4);
  CHECK(four.parallelism.dp_shard == 8);
  CHECK(four.training.global_batch == 64);
  const Plan one = whatif_plan(base, point(WhatIfParam::nodes, 1));
  CHECK(one.parallelism.dp_replicate == 1);
  CHECK(one.parallelism.data_parallel == DataParallel::fsdp_full_shard);
  CHECK(one.training.global_batch == 16);
}

TEST_CASE("strong scaling keeps the global batch: the per-GPU batch shrinks, micro-batch then accumulation") {
  Plan base = small_plan(1, 1, 8, 64);  // 8 sequences per rank
  base.training.micro_batch = 4;
  validate_plan(base, "test");
  REQUIRE(base.grad_accum() == 2);
  const Plan two = whatif_plan(base, point(WhatIfParam::nodes, 2), Scaling::strong);
  CHECK(two.training.global_batch == 64);
  CHECK(two.parallelism.dp_shard == 16);
  CHECK(two.training.micro_batch == 4);
  CHECK(two.grad_accum() == 1);
  const Plan four = whatif_plan(base, point(WhatIfParam::nodes, 4), Scaling::strong);
  CHECK(four.training.global_batch == 64);
  CHECK(four.training.micro_batch == 2);  // 2 sequences per rank: the micro-batch shrinks to fit
  CHECK(four.grad_accum() == 1);
  CHECK_THROWS_AS(whatif_plan(base, point(WhatIfParam::nodes, 16), Scaling::strong), ConfigError);  // 64 over 128 ranks
  CHECK(whatif_plan(base, point(WhatIfParam::nodes, 4)).training.global_batch == 256);  // weak, for contrast
}

TEST_CASE("a strong-scaling sweep: same tokens per step at every point, shorter steps with more GPUs") {
  const Plan base = small_plan(1, 1, 8, 64);
  const auto rows = sweep_plan(base, whatif_grid({parse_whatif_axis("nodes=1,2,4")}), Scaling::strong);
  REQUIRE(rows.size() == 3);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    REQUIRE_MESSAGE(rows[i].error.empty(), rows[i].error);
    CHECK(rows[i].global_batch == 64);
    CHECK(rows[i].seq == 2048);
    CHECK(rows[i].world_size == 8 << i);
    CHECK(rows[i].memory_capacity_bytes == base.cluster.gpu.hbm_bytes);
    if (i > 0) CHECK(rows[i].metrics.step_time_s < rows[i - 1].metrics.step_time_s);
  }
  PlanRequest request;
  request.model = base.model;
  request.cluster = base.cluster;
  request.seq = 2048;
  request.global_batch = 64;
  const PlanRequest strong = whatif_request(request, point(WhatIfParam::nodes, 4), Scaling::strong);
  CHECK(strong.global_batch == 64);
  CHECK(strong.cluster.world_size() == 32);
  CHECK(whatif_request(request, point(WhatIfParam::nodes, 4)).global_batch == 256);
}

TEST_CASE("inter_node_gbit sets the per-GPU NIC bandwidth: nics x nic_bw / gpus = gbit x 1e9 / 8") {
  ClusterSpec c = load_cluster("dgx-h100");
  c.inter.nics_per_node = 4;  // two GPUs per NIC
  const ClusterSpec v = whatif_cluster(c, point(WhatIfParam::inter_node_gbit, 200));
  const double per_gpu_bytes_per_s = v.inter.nics_per_node * v.inter.nic_bw_bytes_per_s / v.gpus_per_node;
  CHECK(per_gpu_bytes_per_s == doctest::Approx(25e9).epsilon(1e-12));
  ClusterSpec cpu = load_cluster("cpu");
  CHECK_THROWS_AS(whatif_cluster(cpu, point(WhatIfParam::nodes, 2)), ConfigError);
}

TEST_CASE("a point that cannot hold the plan is an error row, not a failed sweep") {
  const Plan base = small_plan(1, 1, 8, 8);
  const auto rows = sweep_plan(base, {point(WhatIfParam::seq, 1e9), point(WhatIfParam::seq, 1024)});
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].error.find("max_seq") != std::string::npos);
  CHECK(rows[1].error.empty());
  CHECK(rows[1].metrics.step_time_s > 0);
}

TEST_CASE("simulated trends: more inter-node bandwidth never slows a step; 2x seq is 2x tokens per step") {
  const Plan base = small_plan(2, 1, 16, 16);
  const auto rows = sweep_plan(base, whatif_grid({parse_whatif_axis("inter_node_gbit=50,100,200,400")}));
  for (std::size_t i = 1; i < rows.size(); ++i) {
    REQUIRE(rows[i].error.empty());
    CHECK_MESSAGE(rows[i].metrics.step_time_s <= rows[i - 1].metrics.step_time_s * (1 + 1e-9), rows[i].label);
  }
  CHECK(rows.front().metrics.step_time_s > rows.back().metrics.step_time_s);
  const auto seq = sweep_plan(base, whatif_grid({parse_whatif_axis("seq=1024,2048")}));
  const double tokens_1 = seq[0].metrics.tokens_per_s_per_gpu * seq[0].metrics.step_time_s;
  const double tokens_2 = seq[1].metrics.tokens_per_s_per_gpu * seq[1].metrics.step_time_s;
  CHECK(tokens_2 == doctest::Approx(2 * tokens_1).epsilon(1e-9));
}

TEST_CASE("the three wrapping policies are simulated side by side on the same shape") {
  const auto rows = compare_wrappings(small_plan(1, 1, 8, 8));
  REQUIRE(rows.size() == 3);
  for (const auto& r : rows) {
    CHECK_MESSAGE(r.error.empty(), r.label, ": ", r.error);
    CHECK(r.metrics.peak_memory_total_bytes > 0);
    CHECK(r.plan_desc.find("dp_shard 8") != std::string::npos);
  }
}

}  // namespace fsdpx
