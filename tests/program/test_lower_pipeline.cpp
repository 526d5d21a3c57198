// tests/program/test_lower_pipeline.cpp — lowering of pipelined plans: one role per pipeline rank whose
// compute stream follows the schedule, sends and receives that pair across neighbouring roles in the
// same order on both ends of every link, the activation message size, ZB's B/W split with its memory
// effects, FSDP inside stages (one all-gather and one reduce-scatter per unit and step under
// torchtitan's PP defaults), tied embeddings across stages, and rendezvous that name their members.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/cluster_spec.h"
#include "core/config_paths.h"
#include "core/plan.h"
#include "program/lower.h"
#include "program/pipeline_schedule.h"

namespace fsdpx {
namespace {

const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;

// llama-tiny with 8 blocks on `world` CPU rank threads.
Plan tiny_plan(int pp, int dp_shard, PipelineSchedule schedule, int vpp = 1, std::int64_t global_batch = 16) {
  ModelSpec m = load_model(kConfigs + "/models/llama-tiny.json");
  m.layers = 8;
  ClusterSpec c = load_cluster(kConfigs + "/clusters/cpu.json");
  c.gpus_per_node = pp * dp_shard;
  Parallelism par;
  par.pp = pp;
  par.vpp = vpp;
  par.dp_shard = dp_shard;
  par.pp_schedule = schedule;
  Plan p = default_plan(m, c, TrainingSettings{64, 1, global_batch, 0}, par, 1, RecomputeMode::none);
  validate_plan(p, "tiny");
  return p;
}

int count(const RoleProgram& r, OpKind kind) {
  int n = 0;
  for (const Op& op : r.ops) n += op.kind == kind;
  return n;
}

// The (pass, chunk, micro-batch) of the compute ops of each chunk's first segment, in stream order:
// one entry per pass of pipeline_actions.
std::vector<std::tuple<int, int, int>> passes(const StepProgram& p, int role) {
  std::vector<std::tuple<int, int, int>> out;
  const RoleProgram& r = p.roles[std::size_t(role)];
  std::map<int, int> first_segment;  // stage -> its first (lowest) segment
  for (const Op& op : r.ops)
    if (op.segment >= 0 && (op.kind == OpKind::forward || op.kind == OpKind::backward ||
                            op.kind == OpKind::backward_input || op.kind == OpKind::backward_weight)) {
      auto [it, fresh] = first_segment.emplace(op.stage, op.segment);
      if (!fresh && op.segment < it->second) it->second = op.segment;
    }
  for (int id : r.streams[std::size_t(StreamKind::compute)]) {
    const Op& op = r.ops[std::size_t(id)];
    if (op.segment < 0 || op.segment != first_segment[op.stage]) continue;
    const int pass = op.kind == OpKind::forward ? 0 : op.kind == OpKind::backward ? 1
                   : op.kind == OpKind::backward_input ? 2 : 3;
    out.emplace_back(pass, op.stage / p.pp, op.micro_batch);
  }
  return out;
}

std::vector<std::tuple<int, int, int>> expected_passes(const Plan& plan, int role) {
  std::vector<std::tuple<int, int, int>> out;
  for (const PipeAction& a : pipeline_actions(plan.parallelism.pp_schedule, plan.parallelism.pp,
                                              plan.parallelism.vpp, role, int(plan.grad_accum())))
    out.emplace_back(int(a.pass), a.chunk, a.micro_batch);
  return out;
}

// Every link carries its messages in one order at both ends: the k-th send on a role's send stream
// toward a peer pairs with the k-th receive on the peer's matching stream.
void check_links(const StepProgram& p) {
  for (int r = 0; r < p.pp; ++r)
    for (auto [send_stream, recv_stream] : {std::pair{StreamKind::send_activations, StreamKind::recv_activations},
                                            std::pair{StreamKind::send_grads, StreamKind::recv_grads}}) {
      const RoleProgram& role = p.roles[std::size_t(r)];
      for (int id : role.streams[std::size_t(send_stream)]) {
        const Op& send = role.ops[std::size_t(id)];
        REQUIRE(send.rendezvous >= 0);
        const auto& members = p.rendezvous[std::size_t(send.rendezvous)];
        REQUIRE(members.size() == 2);
        const OpRef other = members[0].role == r ? members[1] : members[0];
        CHECK(other.role == send.peer_role);
        const RoleProgram& peer = p.roles[std::size_t(other.role)];
        const Op& recv = peer.ops[std::size_t(other.op)];
        CHECK(recv.kind == OpKind::recv);
        CHECK(recv.stream == recv_stream);
        CHECK(recv.peer_role == r);
        CHECK(recv.micro_batch == send.micro_batch);
        CHECK(recv.stage == send.stage + (send_stream == StreamKind::send_activations ? 1 : -1));
        CHECK(recv.comm_bytes == send.comm_bytes);
        // Same position among the messages of this link on both ends.
        auto position = [](const RoleProgram& rp, StreamKind s, int op_id, int peer) {
          int k = 0;
          for (int id2 : rp.streams[std::size_t(s)]) {
            if (id2 == op_id) return k;
            k += rp.ops[std::size_t(id2)].peer_role == peer;
          }
          return -1;
        };
        CHECK(position(role, send_stream, id, other.role) == position(peer, recv_stream, other.op, r));
      }
    }
}

TEST_CASE("1F1B lowering: one role per pipeline rank, compute in schedule order, paired sends") {
  const Plan plan = tiny_plan(4, 2, PipelineSchedule::one_f_one_b);
  const StepProgram p = lower(plan);
  const int m = int(plan.grad_accum());
  REQUIRE(m == 8);
  REQUIRE(p.roles.size() == 4);
  CHECK(p.world_size == 8);
  for (int r = 0; r < 4; ++r) {
    INFO("role " << r);
    const RoleProgram& role = p.roles[std::size_t(r)];
    CHECK(role.role_ranks == 2);
    CHECK(passes(p, r) == expected_passes(plan, r));
    CHECK(count(role, OpKind::send) == (r < 3 ? m : 0) + (r > 0 ? m : 0));
    CHECK(count(role, OpKind::recv) == (r > 0 ? m : 0) + (r < 3 ? m : 0));
    CHECK(count(role, OpKind::backward_input) == 0);
  }
  // Embedding + 2 blocks | 3 | 2 | 1 + final norm + head (8 blocks + 1 + 1 over 4 stages).
  CHECK(count(p.roles[0], OpKind::forward) == 3 * m);
  CHECK(count(p.roles[3], OpKind::forward) == 2 * m);
  check_links(p);
  // One rendezvous per message and one for the gradient norm across the four stages.
  CHECK(p.rendezvous.size() == std::size_t(2 * 3 * m + 1));
  CHECK(p.rendezvous.back().size() == 4);
}

TEST_CASE("sends wait for the chunk's last forward; a chunk's first forward waits for its receive") {
  const StepProgram p = lower(tiny_plan(2, 2, PipelineSchedule::gpipe));
  const RoleProgram& last = p.roles[1];
  for (const Op& op : last.ops) {
    if (op.kind != OpKind::forward || op.segment != 4) continue;  // stage 1's first segment (block.4)
    bool waits = false;
    for (int d : op.deps) waits |= last.ops[std::size_t(d)].kind == OpKind::recv &&
                                   last.ops[std::size_t(d)].micro_batch == op.micro_batch;
    CHECK(waits);
  }
  const RoleProgram& first = p.roles[0];
  for (const Op& op : first.ops)
    if (op.kind == OpKind::send && op.payload == Payload::activations) {
      REQUIRE(op.deps.size() == 1);
      const Op& producer = first.ops[std::size_t(op.deps[0])];
      CHECK(producer.kind == OpKind::forward);
      CHECK(producer.segment == op.segment);
      CHECK(producer.micro_batch == op.micro_batch);
      // micro_batch 1 x seq 64 x hidden 64 x fp32 (the CPU plan's param dtype).
      CHECK(op.comm_bytes == 64.0 * 64 * 4);
    }
}

TEST_CASE("interleaved 1F1B: vpp chunks per rank, the wrap-around link from the last rank to the first") {
  const Plan plan = tiny_plan(2, 1, PipelineSchedule::interleaved_1f1b, 2, 4);
  const StepProgram p = lower(plan);
  for (int r = 0; r < 2; ++r) CHECK(passes(p, r) == expected_passes(plan, r));
  check_links(p);
  // Rank 1 runs stages 1 and 3; its stage-1 output goes to stage 2 on rank 0.
  int wrap = 0;
  for (const Op& op : p.roles[1].ops)
    wrap += op.kind == OpKind::send && op.payload == Payload::activations && op.stage == 1 && op.peer_role == 0;
  CHECK(wrap == 4);
}

TEST_CASE("ZB-H1: B and W per segment, W after its B, gradients reduced after the last W") {
  const Plan plan = tiny_plan(2, 2, PipelineSchedule::zero_bubble);
  const StepProgram p = lower(plan);
  const int m = int(plan.grad_accum());
  for (int r = 0; r < 2; ++r) {
    const RoleProgram& role = p.roles[std::size_t(r)];
    CHECK(passes(p, r) == expected_passes(plan, r));
    CHECK(count(role, OpKind::backward) == 0);
    CHECK(count(role, OpKind::backward_input) == count(role, OpKind::forward));
    CHECK(count(role, OpKind::backward_weight) == count(role, OpKind::forward));
    for (std::size_t id = 0; id < role.ops.size(); ++id) {
      const Op& op = role.ops[id];
      if (op.kind == OpKind::backward_weight) {
        // Its B first; any other dependency is FSDP2's wait for the reduce-scatter before the last.
        REQUIRE_FALSE(op.deps.empty());
        for (std::size_t d = 1; d < op.deps.size(); ++d)
          CHECK(role.ops[std::size_t(op.deps[d])].kind == OpKind::reduce_scatter);
        const Op& b = role.ops[std::size_t(op.deps[0])];
        CHECK(b.kind == OpKind::backward_input);
        CHECK((b.segment == op.segment && b.micro_batch == op.micro_batch));
        // B keeps what W needs, W frees it.
        CHECK(b.alloc_at_start.back().category == MemCategory::activations);
        CHECK(op.free_at_end.back().bytes == b.alloc_at_start.back().bytes);
        CHECK(op.free_at_end.back().bytes > 0);
      }
      if (op.kind == OpKind::reduce_scatter) {
        const Op& after = role.ops[std::size_t(op.deps[0])];
        CHECK(after.kind == OpKind::backward_weight);
        CHECK(after.micro_batch == m - 1);
      }
    }
  }
}

TEST_CASE("FSDP inside stages under PP: one all-gather and one reduce-scatter per unit, released at the end") {
  const Plan plan = tiny_plan(2, 2, PipelineSchedule::one_f_one_b);
  const StepProgram p = lower(plan);
  for (int r = 0; r < 2; ++r) {
    const RoleProgram& role = p.roles[std::size_t(r)];
    int units = 0;
    for (const PlanUnit& u : plan.units) units += u.stage == r;
    CHECK(count(role, OpKind::all_gather) == units);
    CHECK(count(role, OpKind::reduce_scatter) == units);
    for (const Op& op : role.ops)
      if (op.release_params) CHECK((op.kind == OpKind::backward && op.micro_batch == int(plan.grad_accum()) - 1));
  }
  // Resharding after forward under PP: a backward keeps the parameters until the next forward
  // (torch.distributed.pipelining), so every forward but the first finds them gathered or gathers them.
  Plan resharding = plan;
  for (PlanUnit& u : resharding.units) u.reshard_after_forward = 1;
  const StepProgram q = lower(resharding);
  for (const Op& op : q.roles[1].ops)
    if (op.kind == OpKind::backward && op.release_params) CHECK(op.micro_batch == int(plan.grad_accum()) - 1);
  CHECK(count(q.roles[1], OpKind::all_gather) > count(p.roles[1], OpKind::all_gather));
}

TEST_CASE("tied embeddings across stages: the gradient all-reduce between the first and last stage") {
  Plan plan = tiny_plan(2, 2, PipelineSchedule::one_f_one_b);
  plan.model.tied_embeddings = true;
  validate_plan(plan, "tied");
  const StepProgram p = lower(plan);
  std::vector<const Op*> tied;
  for (int r = 0; r < 2; ++r)
    for (const Op& op : p.roles[std::size_t(r)].ops)
      if (op.payload == Payload::tied_grads) tied.push_back(&op);
  REQUIRE(tied.size() == 2);
  CHECK(tied[0]->rendezvous == tied[1]->rendezvous);
  CHECK(tied[0]->comm_bytes == 256.0 * 64 * 4 / 2);  // vocab x hidden, fp32 reduce dtype, shard of 2
  // The last stage holds the head's copy of the table.
  CHECK(p.units.back().param_bytes >= 256.0 * 64 * 4);
}

}  // namespace
}  // namespace fsdpx
