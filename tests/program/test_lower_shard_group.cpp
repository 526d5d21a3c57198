// tests/program/test_lower_shard_group.cpp — FSDP shards over dp_shard x cp (torchtitan's dp_shard_cp mesh,
// Megatron's distributed optimizer over data x context parallel): with cp > 1 every all-gather and
// reduce-scatter of a unit runs on the dp_shard_cp group with the unit's whole bytes, no gradient all-reduce
// follows unless dp_replicate > 1 (HSDP: over dp_replicate alone, the shard's bytes), and the resident
// sharded state is divided by dp_shard x cp, so cp 2 x dp_shard 2 holds what dp_shard 4 holds.
#include <doctest/doctest.h>

#include <string>

#include "core/cluster_spec.h"
#include "core/config_paths.h"
#include "core/plan.h"
#include "program/group_members.h"
#include "program/lower.h"

namespace fsdpx {
namespace {

const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;

Plan shard_plan(int dp_replicate, int dp_shard, int cp, DataParallel mode = DataParallel::fsdp_full_shard) {
  ModelSpec m = load_model(kConfigs + "/models/llama-tiny.json");
  m.layers = 4;
  ClusterSpec c = load_cluster(kConfigs + "/clusters/cpu.json");
  c.gpus_per_node = dp_replicate * dp_shard * cp;
  Parallelism par;
  par.dp_replicate = dp_replicate, par.dp_shard = dp_shard, par.cp = cp;
  par.data_parallel = dp_replicate > 1 && mode == DataParallel::fsdp_full_shard ? DataParallel::hsdp : mode;
  Plan p = default_plan(m, c, TrainingSettings{32, 1, 4 * dp_replicate * dp_shard, 0}, par, 1, RecomputeMode::none);
  validate_plan(p, "shard group test");
  return p;
}

double resident(const StepProgram& prog, MemCategory c) {
  double b = 0;
  for (const MemEffect& e : prog.roles[0].resident) b += e.category == c ? e.bytes : 0;
  return b;
}

// Every unit collective's group kind and bytes, and the count of gradient all-reduces.
struct UnitCollectives {
  int gathers = 0, scatters = 0, all_reduces = 0;
  bool gathers_on_shard_group = true, scatters_on_shard_group = true;
};

UnitCollectives unit_collectives(const StepProgram& prog, const Plan& plan) {
  UnitCollectives out;
  const GroupKind shard = shard_group_kind(prog.mesh);
  for (const Op& op : prog.roles[0].ops) {
    if (op.unit < 0 || op.group < 0) continue;
    const ProcessGroup& g = prog.groups[std::size_t(op.group)];
    if (op.kind == OpKind::all_gather) {
      ++out.gathers;
      out.gathers_on_shard_group &= g.kind == shard && g.shape.ranks == shard_group_ranks(plan.parallelism);
      CHECK(op.comm_bytes == doctest::Approx(prog.units[std::size_t(op.unit)].param_bytes));
    } else if (op.kind == OpKind::reduce_scatter) {
      ++out.scatters;
      out.scatters_on_shard_group &= g.kind == shard;
    } else if (op.kind == OpKind::all_reduce && op.payload == Payload::grad_shard) {
      ++out.all_reduces;
      CHECK(g.kind == GroupKind::dp_replicate);
      // The shard of the unit's gradient in the reduce dtype (fp32 on the cpu cluster's plans).
      const double grad_bytes = prog.units[std::size_t(op.unit)].param_bytes / dtype_bytes(plan.precision.param) *
                                dtype_bytes(plan.precision.reduce);
      CHECK(op.comm_bytes == doctest::Approx(grad_bytes / shard_group_ranks(plan.parallelism)));
    }
  }
  return out;
}

TEST_CASE("shard group: cp 2 x dp_shard 2 gathers and reduces over dp_shard_cp, and no all-reduce follows") {
  for (const auto& [dp, cp] : {std::pair{2, 2}, std::pair{1, 2}, std::pair{2, 1}}) {
    INFO("dp_shard " << dp << " cp " << cp);
    const Plan plan = shard_plan(1, dp, cp);
    const StepProgram prog = lower(plan);
    const UnitCollectives c = unit_collectives(prog, plan);
    CHECK(c.gathers > 0);
    CHECK(c.scatters == int(plan.units.size()) * 4);  // every micro-batch reduces (FSDP2's default)
    CHECK(c.gathers_on_shard_group);
    CHECK(c.scatters_on_shard_group);
    CHECK(c.all_reduces == 0);  // the cp ranks summed in the reduce-scatter: nothing left to add
    for (const ProcessGroup& g : prog.groups) CHECK((g.kind != GroupKind::dp_shard_cp || cp > 1));
  }
}

TEST_CASE("shard group: HSDP beside cp all-reduces the dp_shard x cp shard over dp_replicate only") {
  const Plan plan = shard_plan(2, 2, 2);
  const StepProgram prog = lower(plan);
  const UnitCollectives c = unit_collectives(prog, plan);
  CHECK(c.scatters_on_shard_group);
  CHECK(c.all_reduces == c.scatters);
}

TEST_CASE("shard group: the sharded state of cp 2 x dp_shard 2 is that of dp_shard 4, half that of dp_shard 2") {
  const StepProgram cp2 = lower(shard_plan(1, 2, 2)), dp4 = lower(shard_plan(1, 4, 1)), dp2 = lower(shard_plan(1, 2, 1));
  for (MemCategory m : {MemCategory::params, MemCategory::optimizer}) {
    CHECK(resident(cp2, m) == doctest::Approx(resident(dp4, m)));
    CHECK(resident(cp2, m) == doctest::Approx(resident(dp2, m) / 2));
  }
}

TEST_CASE("shard group: ZeRO-1 beside cp reduce-scatters over dp_shard_cp, its optimizer state over 4 ranks") {
  const Plan zero1 = shard_plan(1, 2, 2, DataParallel::zero1);
  const StepProgram prog = lower(zero1);
  const UnitCollectives c = unit_collectives(prog, zero1);
  CHECK(c.scatters > 0);
  CHECK(c.scatters_on_shard_group);
  CHECK(c.all_reduces == 0);
  const StepProgram dp4 = lower(shard_plan(1, 4, 1, DataParallel::zero1));
  CHECK(resident(prog, MemCategory::optimizer) == doctest::Approx(resident(dp4, MemCategory::optimizer)));
}

TEST_CASE("shard group: an int reshard_after_forward keeps its copy over g consecutive dp_shard_cp ranks") {
  Plan plan = shard_plan(1, 2, 2);
  for (PlanUnit& u : plan.units) u.reshard_after_forward = 2;
  const StepProgram prog = lower(plan);
  int reshard_gathers = 0;
  for (const Op& op : prog.roles[0].ops)
    if (op.kind == OpKind::all_gather && op.kept_shard_ranks == 2) {
      ++reshard_gathers;
      const ProcessGroup& g = prog.groups[std::size_t(op.group)];
      CHECK(g.kind == GroupKind::reshard);
      std::vector<int> members;
      group_members(prog.mesh, g, 3, members);  // rank 3: dp_shard 1, cp 1 (flat 3): the run {2, 3}
      CHECK(members == std::vector<int>{2, 3});
    }
  CHECK(reshard_gathers > 0);
  // g = dp_shard x cp reshards fully, as FSDP2's reshard_after_forward equal to the mesh size does.
  for (PlanUnit& u : plan.units) u.reshard_after_forward = 4;
  const StepProgram full = lower(plan);
  for (const Op& op : full.roles[0].ops) CHECK(op.kept_shard_ranks == 0);
}

}  // namespace
}  // namespace fsdpx
