// tests/program/test_program_contract.cpp — the step program states what an interpreter needs besides
// its ops (issue 26, "the program is the contract"): per unit its modules, the pipeline rank that holds
// it, LoRA's frozen base and FSDP2's kept copy (int reshard_after_forward); the tied copy and the head's
// unit; recompute per block; the segments that read the batch and compute the loss; one rendezvous per
// pipeline message that its send and receive share; an all-gather from the kept copy depends on the
// release that wrote it; and a count of lowerings.
#include <doctest/doctest.h>

#include <algorithm>
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

// FSDP2's int reshard_after_forward: an all-gather from the kept copy reads what a release op wrote (the
// executor's CUDA unit copies the slice on the compute stream and the gather runs on its own stream), so
// it names that op among its dependencies: the unit's latest release that kept a copy, which no other
// gather has consumed. Every schedule, both pipeline sizes, shard groups of 4 and 8, g = 2 and 4, and
// prefetch depths up to beyond the step's compute ops (which leave the gather with no earlier wait).
TEST_CASE("program contract: an all-gather from the kept copy depends on the release that wrote it") {
  struct Shape {
    int pp;
    PipelineSchedule schedule;
    int vpp;
  };
  const Shape shapes[] = {{1, PipelineSchedule::none, 1},
                          {2, PipelineSchedule::gpipe, 1},
                          {2, PipelineSchedule::one_f_one_b, 1},
                          {2, PipelineSchedule::interleaved_1f1b, 2},
                          {2, PipelineSchedule::zero_bubble, 1}};
  int plans = 0, kept_gathers = 0;
  for (const Shape& sh : shapes)
    for (int dp_shard : {4, 8})
      for (int g : {2, 4})
        for (int prefetch : {0, 1, 2, 64})
          for (std::int64_t accum : {2, 4}) {
            if (g >= dp_shard) continue;  // g = the shard group reshards fully
            ModelSpec m = load_model(kConfigs + "/models/llama-tiny.json");
            m.layers = 8;
            ClusterSpec c = load_cluster(kConfigs + "/clusters/cpu.json");
            c.gpus_per_node = sh.pp * dp_shard;
            Parallelism par;
            par.pp = sh.pp;
            par.vpp = sh.vpp;
            par.dp_shard = dp_shard;
            par.pp_schedule = sh.schedule;
            const TrainingSettings t{16, 1, dp_shard * accum, 0};
            Plan plan = default_plan(m, c, t, par, 1, RecomputeMode::none);
            for (PlanUnit& u : plan.units) u.reshard_after_forward = g;
            plan.prefetch.forward = plan.prefetch.backward = prefetch;
            validate_plan(plan, "kept copy");
            ++plans;
            INFO("pp " << sh.pp << " schedule " << int(sh.schedule) << " dp_shard " << dp_shard << " g " << g
                       << " prefetch " << prefetch << " micro-batches " << accum);
            const StepProgram prog = lower(plan);
            for (const RoleProgram& role : prog.roles) {
              std::vector<int> kept_by(prog.units.size(), -1);  // per unit: the release holding its copy
              for (int id = 0; id < int(role.ops.size()); ++id) {
                const Op& op = role.ops[std::size_t(id)];
                if (op.kept_shard_ranks <= 1) continue;
                if (op.kind == OpKind::free) {
                  CHECK(op.release_params);
                  kept_by[std::size_t(op.unit)] = id;
                  continue;
                }
                REQUIRE(op.kind == OpKind::all_gather);
                ++kept_gathers;
                const int writer = kept_by[std::size_t(op.unit)];
                REQUIRE(writer >= 0);  // a copy is there to gather from
                CHECK(std::find(op.deps.begin(), op.deps.end(), writer) != op.deps.end());
                // and it frees that copy's bytes
                CHECK(op.free_at_end.size() == 1);
                CHECK(op.free_at_end.front().bytes == role.ops[std::size_t(writer)].alloc_at_start.front().bytes);
                kept_by[std::size_t(op.unit)] = -1;
              }
            }
          }
  CHECK(plans >= 100);
  CHECK(kept_gathers > 1000);
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
