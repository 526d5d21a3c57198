// tests/simulator/test_properties.cpp — properties the simulator must keep on any plan: more link
// bandwidth, a faster GPU or less work never makes a step slower; peak memory never decreases when the
// micro-batch grows. First the case that exposed an inversion (`fsdpx report --vary
// inter_node_gbit=100,200,400` on 2 nodes gave a slower step at 400 than at 200 Gb/s), then the same
// properties over seeded random plans and clusters (plan_generator.h).
#include <doctest/doctest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "program/segment_work.h"
#include "simulator/simulate.h"
#include "tests/simulator/plan_generator.h"

namespace fsdpx {
namespace {

// The per-GPU inter-node line rate as `fsdpx report --vary inter_node_gbit` sets it
// (planner/whatif.cpp): nics_per_node x nic_bw / gpus_per_node = gbit x 1e9 / 8 bytes/s.
ClusterSpec with_inter_node_gbit(ClusterSpec c, double gbit) {
  c.inter.nic_bw_bytes_per_s = gbit * 1e9 / 8 * c.gpus_per_node / c.inter.nics_per_node;
  return c;
}

TEST_CASE("inversion: more inter-node bandwidth never slows the 2-node Llama-3.1-8B step") {
  Plan plan = test::two_node_llama8b();
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

// Random plans per property: enough to meet every data-parallel mode, recompute mode and cluster
// several times, few enough that the whole file runs in seconds.
constexpr int kPlans = 1500;
constexpr std::uint64_t kSeed = 20261121;

double step_s(const Plan& p) { return simulate(p).step_time_s; }

// `change` makes the plan strictly better for the property; the step must not get slower by more than
// `tolerance` (relative).
void check_never_slower(const char* property, const std::function<void(Plan&)>& change, double tolerance = 0) {
  test::PlanGenerator gen(kSeed);
  for (int i = 0; i < kPlans; ++i) {
    Plan p = gen.next();
    const double before_s = step_s(p);
    change(p);
    validate_plan(p, "changed plan");
    const double after_s = step_s(p);
    const std::string property_name = property;
    CAPTURE(property_name);
    CAPTURE(i);
    CAPTURE(plan_to_json(p).dump());
    CHECK(after_s <= before_s * (1 + tolerance));
  }
}

// Anything that lets an op finish sooner lets the collectives after it start earlier; under fair sharing
// of a NIC a reduce-scatter or prefetch all-gather that now overlaps a critical collective slows it, and
// FSDP2's compute waits on the previous reduce-scatter (a scheduling anomaly of any shared-resource
// model, Graham 1969, also real on a shared fabric). Seen: less compute, up to 0.16% slower over 3000
// random plans; faster NVLink or GPU peaks on tp 4/8 plans (every data-parallel collective on the NIC),
// 0.1-0.3% slower. The bound is 0.5%, well below the 2% inversion the test above reproduces exactly.
constexpr double kSchedulingAnomaly = 0.005;

TEST_CASE("property: more NVLink or NIC bandwidth never makes a step slower") {
  check_never_slower("intra-node bandwidth x1.5", [](Plan& p) { p.cluster.intra.bus_bw_bytes_per_s *= 1.5; },
                     kSchedulingAnomaly);
  check_never_slower("NIC bandwidth x2", [](Plan& p) { p.cluster.inter.nic_bw_bytes_per_s *= 2; }, kSchedulingAnomaly);
}

TEST_CASE("property: a faster GPU never makes a step slower") {
  check_never_slower("peaks x1.5", [](Plan& p) {
    for (auto& [dtype, flops] : p.cluster.gpu.peak_flops_per_s) flops *= 1.5;
    p.cluster.gpu.vector_flops_per_s *= 1.5;
  }, kSchedulingAnomaly);
  check_never_slower("HBM bandwidth x1.5", [](Plan& p) { p.cluster.gpu.hbm_bw_bytes_per_s *= 1.5; },
                     kSchedulingAnomaly);
}

TEST_CASE("property: less work never makes a step slower") {
  check_never_slower("one micro-batch per step", [](Plan& p) {
    p.training.global_batch = p.training.micro_batch * p.parallelism.data_parallel_ranks();
  });
  check_never_slower("half the sequence", [](Plan& p) { p.training.seq /= 2; }, kSchedulingAnomaly);
}

// Bytes of the largest unit's unsharded parameters and gradient buffer.
double largest_unit_buffers(const Plan& p) {
  double most = 0;
  for (double params : unit_params(p))
    most = std::max(most, params * (dtype_bytes(p.precision.param) + dtype_bytes(p.precision.reduce)));
  return most;
}

// With communication taking no time, which buffers are alive together is fixed by the program, and every
// buffer grows with the micro-batch or stays: the peak never decreases. With real bandwidths a longer
// compute op can let a collective finish inside it, so the gradient or parameter buffers of one unit
// that overlapped before may no longer overlap: the peak may drop by at most those.
TEST_CASE("property: peak memory never decreases when the micro-batch grows") {
  test::PlanGenerator gen(kSeed);
  EngineOptions no_comm;
  no_comm.infinite_bandwidth = true;
  for (int i = 0; i < kPlans; ++i) {
    Plan p = gen.next();
    const double before_bytes = simulate(p, no_comm).peak_memory_total_bytes;
    const double before_timed_bytes = simulate(p).peak_memory_total_bytes;
    p.training.micro_batch *= 2;
    p.training.global_batch *= 2;  // the same gradient accumulation
    validate_plan(p, "changed plan");
    CAPTURE(i);
    CAPTURE(plan_to_json(p).dump());
    CHECK(simulate(p, no_comm).peak_memory_total_bytes >= before_bytes);
    CHECK(simulate(p).peak_memory_total_bytes >= before_timed_bytes - largest_unit_buffers(p));
  }
}

}  // namespace
}  // namespace fsdpx
