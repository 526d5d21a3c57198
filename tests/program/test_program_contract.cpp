// tests/program/test_program_contract.cpp — the step program states what an interpreter needs besides
// its ops (issue 26, "the program is the contract"): per unit its modules, the pipeline rank that holds
// it, LoRA's frozen base and FSDP2's kept copy (int reshard_after_forward); the tied copy and the head's
// unit; recompute per block; the segments that read the batch and compute the loss; one rendezvous per
// pipeline message that its send and receive share; and a count of lowerings.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "core/cluster_spec.h"
#include "core/config_paths.h"
#include "core/plan.h"
#include "program/lower.h"

namespace fsdpx {
namespace {

const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;

Plan contract_plan(int pp, int dp_shard, bool tied) {
  ModelSpec m = load_model(kConfigs + "/models/llama-tiny.json");
  m.layers = 4;
  m.tied_embeddings = tied;
  ClusterSpec c = load_cluster(kConfigs + "/clusters/cpu.json");
  c.gpus_per_node = pp * dp_shard;
  Parallelism par;
  par.pp = pp;
  par.dp_shard = dp_shard;
  par.pp_schedule = pp > 1 ? PipelineSchedule::one_f_one_b : PipelineSchedule::none;
  Plan p = default_plan(m, c, TrainingSettings{16, 1, 8, 0}, par, 1, RecomputeMode::none);
  validate_plan(p, "contract");
  return p;
}

TEST_CASE("program contract: units state their modules, pipeline rank and frozen-ness") {
  for (int pp : {1, 2}) {
    const Plan plan = contract_plan(pp, 2, pp > 1);
    const StepProgram prog = lower(plan);
    REQUIRE(prog.units.size() == plan.units.size());
    for (std::size_t u = 0; u < plan.units.size(); ++u) {
      CHECK(prog.units[u].modules == plan.units[u].modules);
      CHECK(prog.units[u].role == plan.units[u].stage % pp);
      CHECK_FALSE(prog.units[u].frozen);
    }
    CHECK(prog.recompute == plan.recompute);
    // The head's unit, and under pipeline parallelism with tied embeddings the embedding's own unit.
    REQUIRE(prog.head_unit >= 0);
    CHECK(prog.units[std::size_t(prog.head_unit)].modules.back() == "head");
    if (pp == 1) {
      CHECK(prog.tied_copy_source == -1);
    } else {
      REQUIRE(prog.tied_copy_source >= 0);
      CHECK(prog.units[std::size_t(prog.tied_copy_source)].modules == std::vector<std::string>{"embedding"});
    }
  }
  Plan lora = contract_plan(1, 2, false);
  lora.lora = LoraSettings{};
  for (const ProgramUnit& u : lower(lora).units) CHECK(u.frozen);
}

TEST_CASE("program contract: the first segment reads the batch, the last computes the loss") {
  const StepProgram prog = lower(contract_plan(1, 1, false));
  REQUIRE(prog.segments.size() >= 2);
  for (std::size_t s = 0; s < prog.segments.size(); ++s) {
    CHECK(prog.segments[s].embeds_tokens == (s == 0));
    CHECK(prog.segments[s].computes_loss == (s + 1 == prog.segments.size()));
  }
}

TEST_CASE("program contract: an int reshard_after_forward states the ranks that share the kept copy") {
  Plan plan = contract_plan(1, 4, false);
  for (PlanUnit& u : plan.units) u.reshard_after_forward = 2;
  plan.units.back().reshard_after_forward = 0;  // kept whole
  plan.units.front().reshard_after_forward = 4;  // = dp_shard: reshard fully
  const StepProgram prog = lower(plan);
  CHECK(prog.units.front().kept_shard_ranks == 0);
  CHECK(prog.units.back().kept_shard_ranks == 0);
  for (std::size_t u = 1; u + 1 < prog.units.size(); ++u) CHECK(prog.units[u].kept_shard_ranks == 2);
  // Its releases and backward all-gathers say the same, and the all-gather runs over the reshard group.
  for (const Op& op : prog.roles[0].ops) {
    if (op.kept_shard_ranks == 0) continue;
    CHECK(op.kept_shard_ranks == prog.units[std::size_t(op.unit)].kept_shard_ranks);
    if (op.kind == OpKind::all_gather) {
      CHECK(prog.groups[std::size_t(op.group)].kind == GroupKind::reshard);
      CHECK(prog.groups[std::size_t(op.group)].reshard_ranks == 2);
    }
  }
}

TEST_CASE("program contract: a pipeline message's send and receive share one rendezvous of their own") {
  const StepProgram prog = lower(contract_plan(2, 1, true));
  std::set<int> seen;
  int messages = 0;
  for (std::size_t r = 0; r < prog.roles.size(); ++r)
    for (const Op& op : prog.roles[r].ops) {
      if (op.kind != OpKind::send) continue;
      ++messages;
      REQUIRE(op.rendezvous >= 0);
      CHECK(seen.insert(op.rendezvous).second);  // one message per rendezvous
      const std::vector<OpRef>& members = prog.rendezvous[std::size_t(op.rendezvous)];
      REQUIRE(members.size() == 2);
      const Op& other = prog.roles[std::size_t(members[1].role)].ops[std::size_t(members[1].op)];
      CHECK(other.kind == OpKind::recv);
      CHECK(other.micro_batch == op.micro_batch);
      CHECK(other.payload == op.payload);
      CHECK(members[1].role == op.peer_role);
    }
  CHECK(messages > 0);
}

TEST_CASE("program contract: lower_call_count counts lowerings") {
  const Plan plan = contract_plan(1, 1, false);
  const std::int64_t before = lower_call_count();
  (void)lower(plan);
  (void)lower(plan);
  CHECK(lower_call_count() - before == 2);
}

}  // namespace
}  // namespace fsdpx
