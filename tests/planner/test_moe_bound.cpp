// tests/planner/test_moe_bound.cpp — the planner's bounds on mixture-of-experts shapes (planner/shape_bound.h,
// planner/memory_bound.h): every shape of a DeepSeek-like and a Mixtral-like tiny model on two DGX-H100
// nodes (ep within and across nodes, with and without pipelines) has a throughput bound no simulated
// recompute choice beats, the bound is not vacuous, and the memory bound of unpipelined shapes stays below
// the simulated peak while counting the experts' sharded state as the lowering holds it (unchanged by ep).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "core/config_paths.h"
#include "planner/candidates.h"
#include "planner/memory_bound.h"
#include "planner/planner.h"
#include "planner/shape_bound.h"
#include "planner/shapes.h"
#include "planner/target.h"
#include "simulator/steady_state.h"

namespace fsdpx {
namespace {

const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;

PlanRequest moe_request(const char* model) {
  PlanRequest r;
  r.model = load_model(kConfigs + "/models/" + model + ".json");
  r.cluster = load_cluster("dgx-h100");
  r.cluster.nodes = 2;
  r.seq = 128;
  r.global_batch = 32;
  r.target = parse_target("torchtitan@0.2.2", "test");
  return resolve_memory(r);
}

// The recompute choices an option stands for: its own, and for a partial option the later members.
std::vector<RecomputeChoice> covered(const RecomputeOption& o, const std::vector<int>& members) {
  if (o.member_index < 0) return {o.choice};
  std::vector<RecomputeChoice> out;
  for (std::size_t i = std::size_t(o.member_index); i < members.size(); ++i)
    out.push_back(RecomputeChoice{RecomputeMode::none, members[i]});
  return out;
}

}  // namespace

TEST_CASE("MoE shapes: no simulated recompute choice beats its option's throughput bound, which is not vacuous") {
  int checked = 0, ep_across_nodes = 0;
  double best_ratio = 0;
  for (const char* model : {"deepseek-tiny", "mixtral-tiny"}) {
    const PlanRequest r = moe_request(model);
    const Space s = effective_space(r);
    const std::vector<int> members = partial_members(r.model.layers, s.partial);
    for (const Parallelism& par : parallel_shapes(r))
      for (std::int64_t mb : micro_batch_choices(r, par)) {
        const ShapeBound b = bound_shape(r, s, par, mb);
        for (const RecomputeOption& o : b.options)
          for (const RecomputeChoice& rc : covered(o, members)) {
            Plan p = b.plan;
            p.recompute = recompute_pattern(rc, r.model.layers, s.partial);
            // A partial option's bound covers the later members that could fit (shape_bound.h).
            if (o.member_index >= 0 && memory_lower_bound(p).total() > *r.memory_limit_bytes) continue;
            const Candidate c = evaluate_plan(p, *r.memory_limit_bytes, WrapPolicy::per_block, "t");
            const double ratio = c.metrics.tokens_per_s_per_gpu / o.tps_bound;
            INFO(std::string(model) << " " << family_of(p) << " mb " << mb << " recompute " << int(rc.uniform) << "/" << rc.member
                       << ": simulated " << c.metrics.tokens_per_s_per_gpu << " bound " << o.tps_bound);
            CHECK(ratio <= 1 + 1e-9);
            best_ratio = std::max(best_ratio, ratio);
            ++checked;
          }
        ep_across_nodes += par.ep * par.tp > r.cluster.gpus_per_node;
      }
  }
  MESSAGE(checked << " plans checked; best simulated / bound " << best_ratio);
  CHECK(checked >= 200);
  CHECK(ep_across_nodes > 0);
  CHECK(best_ratio >= 0.5);
}

TEST_CASE("MoE shapes: the memory bound stays below the simulated peak, with the experts' state as the lowering holds it") {
  int checked = 0;
  double least_ratio = 1;
  for (const char* model : {"deepseek-tiny", "mixtral-tiny"}) {
    const PlanRequest r = moe_request(model);
    for (const Parallelism& par : parallel_shapes(r))
      for (std::int64_t mb : micro_batch_choices(r, par))
        for (RecomputeMode rc : {RecomputeMode::none, RecomputeMode::full}) {
          // Pipelined MoE plans are left out: their activation term (not the state) is above the simulated
          // peak by up to 128 KiB on deepseek-tiny at pp 2 with ep 1, as on main (issue 36).
          if (par.pp > 1) continue;
          const Plan p = shape_plan(r, par, mb, rc);
          const double bound = memory_lower_bound(p).total();
          const double peak = simulate_step_totals(p).peak_memory_total_bytes;
          INFO(std::string(model) << " " << family_of(p) << " mb " << mb << " recompute " << int(rc) << ": bound " << bound
                     << " peak " << peak << " excess " << bound - peak);
          CHECK(bound <= peak);
          least_ratio = std::min(least_ratio, bound / peak);
          ++checked;
        }
  }
  CHECK(checked >= 50);
  MESSAGE("least bound / peak over MoE plans: " << least_ratio);
  CHECK(least_ratio >= 0.3);
  // Sharded expert state: experts / ep over dp_shard x cp / ep ranks (program/moe_block.h), so ep does
  // not change it; counting the local experts over dp_shard instead would shrink it ep times.
  const PlanRequest r = moe_request("mixtral-tiny");
  Parallelism par;
  par.dp_shard = 16;
  const Plan one = shape_plan(r, par, 1, RecomputeMode::none);
  par.ep = 4;  // mixtral-tiny's 4 experts, one per rank of each ep group
  const Plan four = shape_plan(r, par, 1, RecomputeMode::none);
  CHECK(memory_lower_bound(four).state_bytes == doctest::Approx(memory_lower_bound(one).state_bytes).epsilon(1e-12));
}

}  // namespace fsdpx
