// tests/program/test_lower_names.cpp — op names on demand (program/lower.h LowerOptions): a program
// lowered without names is the named program with every Op::name empty (same ops, streams, dependencies,
// memory and state effects, rendezvous), on every shipped plan (pipelines of each schedule, LoRA, fp16,
// tensor parallelism) and on a plan with a kept copy per unit; op_label names an op either way.
#include <doctest/doctest.h>

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/config_paths.h"
#include "core/plan.h"
#include "program/lower.h"

namespace fsdpx {
namespace {

bool same_effects(std::span<const MemEffect> a, std::span<const MemEffect> b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].category != b[i].category || a[i].bytes != b[i].bytes) return false;
  return true;
}

// Every field but the name.
bool same_but_name(const Op& a, const Op& b) {
  return a.kind == b.kind && a.stream == b.stream && a.unit == b.unit && a.segment == b.segment &&
         a.micro_batch == b.micro_batch && a.stage == b.stage && a.peer_role == b.peer_role &&
         a.rendezvous == b.rendezvous && a.work_set == b.work_set && a.collective == b.collective &&
         a.comm_bytes == b.comm_bytes && a.group == b.group && a.serial_comm_time_s == b.serial_comm_time_s &&
         std::vector<int>(a.deps.begin(), a.deps.end()) == std::vector<int>(b.deps.begin(), b.deps.end()) &&
         same_effects(a.alloc_at_start, b.alloc_at_start) && same_effects(a.free_at_end, b.free_at_end) &&
         a.payload == b.payload && a.release_params == b.release_params &&
         a.kept_shard_ranks == b.kept_shard_ranks && a.completes_reduction == b.completes_reduction;
}

void check_unnamed_twin(const Plan& plan, const std::string& what) {
  INFO(what);
  const StepProgram named = lower(plan);
  const StepProgram bare = lower(plan, LowerOptions{.op_names = false});
  REQUIRE(bare.roles.size() == named.roles.size());
  CHECK(bare.groups.size() == named.groups.size());
  CHECK(bare.work_sets.size() == named.work_sets.size());
  CHECK(bare.rendezvous.size() == named.rendezvous.size());
  for (std::size_t r = 0; r < named.roles.size(); ++r) {
    const RoleProgram& n = named.roles[r];
    const RoleProgram& b = bare.roles[r];
    REQUIRE(b.ops.size() == n.ops.size());
    CHECK(b.streams == n.streams);
    CHECK(same_effects(b.resident, n.resident));
    int differing = 0, unnamed = 0, nameless = 0;
    for (std::size_t i = 0; i < n.ops.size(); ++i) {
      differing += same_but_name(n.ops[i], b.ops[i]) ? 0 : 1;
      unnamed += b.ops[i].name.empty() ? 0 : 1;
      nameless += n.ops[i].name.empty() ? 1 : 0;
    }
    CHECK(differing == 0);
    CHECK(unnamed == 0);   // no op keeps a name
    CHECK(nameless == 0);  // the default names every op
  }
}

TEST_CASE("lower without op names: the same program, every name empty, on every shipped plan") {
  int plans = 0;
  for (const char* dir : {FSDPX_CONFIG_DIR_FOR_TESTS "/plans", FSDPX_TEST_DATA_DIR "/plans"})
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".json") continue;
      check_unnamed_twin(load_plan(entry.path().string()), entry.path().filename().string());
      ++plans;
    }
  CHECK(plans >= 15);
}

TEST_CASE("lower without op names: a kept copy per unit (int reshard_after_forward), named or not") {
  ModelSpec m = load_model(std::string(FSDPX_CONFIG_DIR_FOR_TESTS) + "/models/llama-tiny.json");
  ClusterSpec c = load_cluster(std::string(FSDPX_CONFIG_DIR_FOR_TESTS) + "/clusters/cpu.json");
  c.gpus_per_node = 4;
  Parallelism par;
  par.dp_shard = 4;
  Plan plan = default_plan(m, c, TrainingSettings{16, 1, 8, 0}, par, 1, RecomputeMode::none);
  for (PlanUnit& u : plan.units) u.reshard_after_forward = 2;
  validate_plan(plan, "kept copy");
  check_unnamed_twin(plan, "reshard_after_forward 2");
}

TEST_CASE("op_label: the op's name, or its id and kind when it has none") {
  Op op;
  op.kind = OpKind::backward;
  CHECK(op_label(op, 12) == "#12 (backward)");
  op.name = "bwd.s2.mb0";
  CHECK(op_label(op, 12) == "bwd.s2.mb0");
}

}  // namespace
}  // namespace fsdpx
