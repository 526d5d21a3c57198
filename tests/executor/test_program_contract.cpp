// tests/executor/test_program_contract.cpp — the executor runs the step program it is given (issue 26):
// a run lowers its plan once and every rank reads that program; the kept copy of FSDP2's int
// reshard_after_forward is counted in the device's dtype and gathered over the program's reshard group
// (FSDP2's post-forward mesh), giving the same training as a full reshard; and every collective and
// message the CPU executor issues for FSDP, HSDP, DDP, ZeRO-1, partial reshard, TP, CP, the four
// pipeline schedules (also beside tp and cp) and LoRA is the program's op: same group (global ranks), bytes (nccl-tests' S,
// within the flat units' padding) and order (op by op in issue order).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/backend_capabilities.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/comm/thread_communicator.h"
#include "executor/cpu_backend/cpu_rank_backend.h"
#include "executor/session/cpu_placement.h"
#include "executor/session/training_session.h"
#include "program/group_members.h"
#include "planner/target.h"
#include "program/lower.h"
#include "tests/executor/pipeline_fixtures.h"
#include "tests/executor/recording_communicator.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx {
namespace {

// The global ranks of program group `g` that the rank at `mesh_rank` of pipeline rank `role` is in.
std::vector<int> global_members(const StepProgram& p, int g, int role, int mesh_rank) {
  const ProcessGroup& group = p.groups[std::size_t(g)];
  const int mesh = p.mesh.size();
  std::vector<int> out;
  if (group.kind == GroupKind::pp_all) {
    for (int r = 0; r < p.pp; ++r) out.push_back(r * mesh + mesh_rank);
  } else if (group.kind == GroupKind::pp_ends) {
    out = {mesh_rank, (p.pp - 1) * mesh + mesh_rank};
  } else {
    group_members(p.mesh, group, mesh_rank, out);
    for (int& m : out) m += role * mesh;
  }
  return out;
}

using Key = std::tuple<int, std::vector<int>, double, int, int>;  // kind, members, bytes, peer, tag

// What the CPU executor should issue for `op` on global rank `rank`: keys compared exactly, and
// (for unit payloads) the program's bytes, which the padded flat units exceed by less than `slack`.
struct Expected {
  std::vector<Key> exact;
  std::vector<int> unit_calls;  // per call of a unit payload: its kind
  std::vector<int> unit_members;
  double unit_bytes = 0;
};

// Under tensor parallelism a tp rank holds the tensors every tp rank keeps whole (norms) whole, while the
// program's unit bytes count every parameter split tp ways (cost_models/params.h): the executor moves
// (1 - 1/tp) of those tensors' fp32 bytes more than the op states. 0 when tp = 1.
double tp_replicated_extra_bytes(const RuntimeProgram& rp, int unit) {
  const int tp = rp.program.mesh.tp;
  if (tp == 1) return 0;
  double numel = 0;
  for (int m : rp.flats[std::size_t(unit)].modules)
    for (const TensorSlot& t : rp.tp_layouts.front().modules[std::size_t(m)].tensors)
      if (t.tp_replicated) numel += double(t.numel());
  return numel * 4.0 * (1.0 - 1.0 / tp);
}

Expected expected_calls(const RuntimeProgram& rp, const Op& op, int role, int mesh_rank) {
  const StepProgram& p = rp.program;
  Expected e;
  const int rank = role * p.mesh.size() + mesh_rank;
  if (op.kind == OpKind::send || op.kind == OpKind::recv) {
    const int peer = op.peer_role * p.mesh.size() + mesh_rank;
    const std::vector<int> world = [&] {
      std::vector<int> w(std::size_t(p.world_size));
      for (int r = 0; r < p.world_size; ++r) w[std::size_t(r)] = r;
      return w;
    }();
    e.exact.push_back(Key{int(Collective::send_recv), world, op.comm_bytes, peer, op.rendezvous});
    return e;
  }
  if (op.work_set >= 0)
    for (const SerialCollective& sc : p.work_sets[std::size_t(op.work_set)].serial_comms)
      for (int k = 0; k < sc.count; ++k)
        e.exact.push_back(Key{int(sc.kind), global_members(p, sc.group, role, mesh_rank), sc.bytes, -1, -1});
  if (op.group < 0) return e;
  const std::vector<int> members = global_members(p, op.group, role, mesh_rank);
  const bool unit_payload = op.payload == Payload::params || op.payload == Payload::grads ||
                            op.payload == Payload::grad_shard || op.payload == Payload::tied_grads;
  if (op.payload == Payload::grad_norm) {
    // The executor's norm all-reduce carries the sum of squares, the non-finite flag and the loss
    // (3 doubles, rank_runtime.cpp reduce_norm); the program times a 4-byte scalar (latency-bound).
    e.exact.push_back(Key{int(Collective::all_reduce), members, 24.0, -1, -1});
  } else if (unit_payload) {
    // The last stage's tied copy moves with the head's unit (CpuRankBackend::copy_with).
    const bool copy = op.payload != Payload::tied_grads && role == p.pp - 1 && p.tied_copy_source >= 0 &&
                      op.unit == p.head_unit;
    for (int k = 0; k < (copy ? 2 : 1); ++k) e.unit_calls.push_back(int(op.collective));
    e.unit_members = members;
    // The tied all-reduce moves the copy's (the embedding unit's) layout alone.
    const int source = p.tied_copy_source;
    e.unit_bytes = op.comm_bytes + tp_replicated_extra_bytes(rp, op.payload == Payload::tied_grads ? source : op.unit) +
                   (copy ? tp_replicated_extra_bytes(rp, source) : 0.0);
  } else {
    e.exact.push_back(Key{int(op.collective), members, op.comm_bytes, -1, -1});
  }
  (void)rank;
  return e;
}

// Runs one step of `plan` on recording communicators and checks every rank's calls op by op.
void check_issued(const Plan& plan) {
  test::CallLog log;
  const RuntimeProgram rp = make_runtime_program(plan);
  log.by_rank.resize(std::size_t(rp.program.world_size));
  const RankBackendFactory recording = [&log](const RuntimeProgram& r, OpProfiler*) {
    std::vector<std::unique_ptr<RankBackend>> out;
    auto comms = make_thread_communicators(r.program.world_size);
    std::vector<int> world(comms.size());
    for (std::size_t k = 0; k < world.size(); ++k) world[k] = int(k);
    for (auto& c : comms)
      out.push_back(std::make_unique<CpuRankBackend>(
          r, std::make_unique<test::RecordingCommunicator>(std::move(c), world, &log), nullptr));
    return out;
  };
  Trainer trainer(plan, std::make_shared<test::HashData>(plan.model.vocab), {}, recording);
  (void)trainer.step();
  const StepProgram& p = rp.program;
  for (int rank = 0; rank < p.world_size; ++rank) {
    const int role = rank / p.mesh.size(), mesh_rank = rank % p.mesh.size();
    const std::vector<test::IssuedCall>& calls = log.by_rank[std::size_t(rank)];
    std::size_t next = 0;
    for (const Op& op : p.roles[std::size_t(role)].ops) {
      const Expected e = expected_calls(rp, op, role, mesh_rank);
      const std::size_t n = e.exact.size() + e.unit_calls.size();
      INFO("rank " << rank << ", op " << op.name);
      REQUIRE(next + n <= calls.size());
      std::vector<Key> got, want = e.exact;
      double unit_bytes = 0;
      int unit_calls = 0;
      for (std::size_t k = next; k < next + n; ++k) {
        const test::IssuedCall& c = calls[k];
        const bool is_unit = !e.unit_calls.empty() && int(c.kind) == e.unit_calls.front() && c.members == e.unit_members;
        if (is_unit && unit_calls < int(e.unit_calls.size())) {
          ++unit_calls, unit_bytes += c.bytes;
          continue;
        }
        got.push_back(Key{int(c.kind), c.members, c.bytes, c.peer, c.tag});
      }
      next += n;
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      CHECK(got == want);
      CHECK(unit_calls == int(e.unit_calls.size()));
      if (e.unit_calls.empty()) continue;
      // Padding: each flat unit rounds its elements up to a multiple of its shard count (fp32).
      const double slack = double(e.unit_calls.size()) * 4.0 * rp.shard_count * double(e.unit_members.size());
      CHECK(unit_bytes >= e.unit_bytes - 0.5);
      CHECK(unit_bytes < e.unit_bytes + slack + 0.5);
    }
    CHECK(next == calls.size());
  }
}

TEST_CASE("program contract: the CPU executor issues the program's collectives, data-parallel modes") {
  const ModelSpec m = test::tiny_llama();
  test::PlanShape fsdp;
  fsdp.dp_shard = 2, fsdp.accum = 2;
  SUBCASE("FSDP") { check_issued(test::tiny_plan(m, fsdp)); }
  SUBCASE("HSDP") {
    test::PlanShape s = fsdp;
    s.dp_replicate = 2;
    check_issued(test::tiny_plan(m, s));
  }
  SUBCASE("DDP and ZeRO-1") {
    for (DataParallel dp : {DataParallel::ddp, DataParallel::zero1}) {
      Plan plan = test::tiny_plan(m, fsdp);
      plan.parallelism.data_parallel = dp;
      check_issued(plan);
    }
  }
  SUBCASE("partial reshard") {
    test::PlanShape s = fsdp;
    s.dp_shard = 4;
    Plan plan = test::tiny_plan(m, s);
    for (PlanUnit& u : plan.units) u.reshard_after_forward = 2;
    check_issued(plan);
  }
  SUBCASE("LoRA") {
    Plan plan = test::tiny_plan(m, fsdp);
    plan.lora = LoraSettings{};
    plan.lora->rank = 2;
    check_issued(plan);
  }
}

TEST_CASE("program contract: the CPU executor issues the program's collectives, TP and CP") {
  const ModelSpec m = load_model("llama-tiny");  // vocab 256 and ffn 176 split over tp = 2
  test::PlanShape s;
  s.tp = 2, s.dp_shard = 2;
  check_issued(test::tiny_plan(m, s, 32));
  test::PlanShape c;
  c.cp = 2, c.dp_shard = 2;
  check_issued(test::tiny_plan(m, c, 32));
}

// FSDP shards over dp_shard x cp (program/group_members.h shard_group_kind): the units' all-gathers and
// reduce-scatters run on the dp_shard_cp group (cp alone: the cp ranks), HSDP's all-reduce on dp_replicate,
// ZeRO-1's reduce-scatter on dp_shard_cp, and a kept copy on g consecutive ranks of it.
TEST_CASE("program contract: the CPU executor issues the program's collectives over dp_shard x cp") {
  const ModelSpec m = load_model("llama-tiny");
  test::PlanShape c;
  c.cp = 2, c.accum = 2;
  SUBCASE("cp 2 alone") {
    const Plan plan = test::tiny_plan(m, c, 32);
    const StepProgram prog = lower(plan);
    bool on_cp_ranks = false;
    for (const Op& op : prog.roles[0].ops)
      if (op.kind == OpKind::all_gather || op.kind == OpKind::reduce_scatter) {
        const ProcessGroup& g = prog.groups[std::size_t(op.group)];
        CHECK(g.kind == GroupKind::dp_shard_cp);
        std::vector<int> members;
        group_members(prog.mesh, g, 1, members);
        on_cp_ranks = members == std::vector<int>{0, 1};
      }
    CHECK(on_cp_ranks);
    check_issued(plan);
  }
  SUBCASE("HSDP 2 x cp 2") {
    test::PlanShape s = c;
    s.dp_replicate = 2;
    check_issued(test::tiny_plan(m, s, 32));
  }
  SUBCASE("ZeRO-1 beside cp 2 x dp_shard 2") {
    test::PlanShape s = c;
    s.dp_shard = 2, s.accum = 1;
    Plan plan = test::tiny_plan(m, s, 32);
    plan.parallelism.data_parallel = DataParallel::zero1;
    for (PlanUnit& u : plan.units) u.reshard_after_forward = 0;
    check_issued(plan);
  }
  SUBCASE("partial reshard over 2 of cp 2 x dp_shard 2") {
    test::PlanShape s = c;
    s.dp_shard = 2, s.accum = 1;
    Plan plan = test::tiny_plan(m, s, 32);
    for (PlanUnit& u : plan.units) u.reshard_after_forward = 2;
    check_issued(plan);
  }
}

TEST_CASE("program contract: the CPU executor sends the program's messages, every pipeline schedule") {
  const std::vector<std::tuple<PipelineSchedule, int>> schedules{{PipelineSchedule::gpipe, 1},
                                                                {PipelineSchedule::one_f_one_b, 1},
                                                                {PipelineSchedule::interleaved_1f1b, 2},
                                                                {PipelineSchedule::zero_bubble, 1}};
  for (const auto& [schedule, vpp] : schedules) {
    test::PipePlan s;
    s.pp = 2, s.vpp = vpp, s.dp_shard = 2, s.schedule = schedule, s.global_batch = 8;
    INFO(pipeline_schedule_name(schedule));
    check_issued(test::pipe_plan(s));
  }
}

// llama-tiny untied and tied (the last stage's copy of the table rides with the head's unit). gpt-tiny's
// tied copy is left out: the executor's copy is the embedding's whole unit, its learned positions
// included, where the program's ops count the table alone (also at tp = 1).
TEST_CASE("program contract: the CPU executor issues the program's ops for pp 2 beside tp 2 and beside cp 2") {
  for (const bool tie : {false, true}) {
    test::PipePlan s;
    s.tie = tie;
    s.pp = 2, s.schedule = PipelineSchedule::one_f_one_b, s.global_batch = 4;
    for (const auto& [tp, cp] : {std::pair{2, 1}, std::pair{1, 2}}) {
      s.tp = tp, s.cp = cp;
      INFO(std::string(tie ? "llama-tiny tied" : "llama-tiny") << " pp 2 x tp " << tp << " x cp " << cp);
      check_issued(test::pipe_plan(s));
    }
  }
}

TEST_CASE("program contract: the kept copy of an int reshard_after_forward is counted in the device's dtype") {
  test::PlanShape s;
  s.dp_shard = 4;
  Plan plan = test::tiny_plan(test::tiny_llama(), s);
  for (PlanUnit& u : plan.units) u.reshard_after_forward = 2;
  const RuntimeProgram cpu = make_runtime_program(plan, ExecutorDevice::cpu);
  Plan bf16 = plan;
  bf16.precision.param = DType::bf16;
  bf16.attention_kernel = AttentionKernel::cuda_core;
  bf16.model.head_dim = 32;
  bf16.model.hidden = bf16.model.heads * 32;
  const RuntimeProgram cuda = make_runtime_program(bf16, ExecutorDevice::cuda);
  for (std::size_t u = 0; u < cpu.flats.size(); ++u) {
    const int g = cpu.program.units[u].kept_shard_ranks;
    INFO("unit " << u);
    CHECK(cpu.kept_copy_bytes[u] == doctest::Approx(g > 1 ? double(cpu.flats[u].padded_numel) * 4.0 / g : 0.0));
    CHECK(cuda.kept_copy_bytes[u] == doctest::Approx(g > 1 ? double(cuda.flats[u].padded_numel) * 2.0 / g : 0.0));
  }
}

TEST_CASE("program contract: a partial reshard trains as a full reshard (the kept copy holds the same values)") {
  test::PlanShape s;
  s.dp_shard = 4, s.accum = 2;
  const Plan full = test::tiny_plan(test::tiny_llama(), s);
  Plan partial = full;
  for (PlanUnit& u : partial.units) u.reshard_after_forward = 2;
  const test::Trajectory a = test::trainer_training(full, 3), b = test::trainer_training(partial, 3);
  CHECK(a.losses == b.losses);
  CHECK(a.params == b.params);
}

TEST_CASE("program contract: a training session lowers its plan once") {
  test::PipePlan s;  // llama-tiny on the shipped text (the session's default data)
  s.dp_shard = 2;
  const Plan plan = test::pipe_plan(s);
  const std::int64_t before = lower_call_count();
  RuntimeProgram program = make_session_program(plan, "contract.json", ExecutorDevice::cpu);
  SessionOptions o;
  o.plan_file = "contract.json";
  o.steps = 2;
  o.trace = true;
  TrainingSession session(plan, std::move(program), o, place_cpu_ranks(plan, "fingerprint", false, kDefaultCommTimeoutS));
  session.train([](const StepMetrics&, double) {});
  session.finish();
  CHECK(session.record().steps.size() == 2);
  CHECK(lower_call_count() - before == 1);
  // The trace and every tool of the run read the session's program (tools/run_trace.cpp).
  CHECK(session.trainer().program().program.roles.size() == 1);
}

}  // namespace
}  // namespace fsdpx

namespace fsdpx {
namespace {

// One table (core/backend_capabilities.h) decides both: over the settings the planner searches (tp, cp,
// pp with its schedule, reduction dtype), a plan the fsdpx target accepts is one the executor runs, on
// the CPU (llama-tiny) and CUDA (llama3.2-1b, head_dim 64) backends.
TEST_CASE("capabilities: the planner's fsdpx target and the executor agree plan by plan") {
  int runs = 0, refused = 0;
  for (const char* cluster_name : {"cpu", "dgx-h100"})
    for (int tp : {1, 2})
      for (int cp : {1, 2})
        for (int pp : {1, 2})
          for (DType reduce : {DType::fp32, DType::bf16}) {
            const bool cpu = std::string(cluster_name) == "cpu";
            ModelSpec m = load_model(cpu ? "llama-tiny" : "llama3.2-1b");
            m.layers = 4;
            ClusterSpec c = load_cluster(cluster_name);
            c.gpus_per_node = tp * cp * pp * 2;
            c.nodes = 1;
            Parallelism par;
            par.tp = tp, par.cp = cp, par.pp = pp, par.dp_shard = 2;
            par.sequence_parallel = tp > 1;
            par.pp_schedule = pp > 1 ? PipelineSchedule::one_f_one_b : PipelineSchedule::none;
            Plan p = default_plan(m, c, TrainingSettings{32, 1, 8, 0}, par, 1, RecomputeMode::none);
            p.precision.reduce = reduce;
            p.attention_kernel = target_attention_kernel(Target{}, c, p.model.head_dim);  // as the planner's plans (shapes.cpp)
            validate_plan(p, "capabilities");
            const ExecutorDevice device = cluster_device(p.cluster);
            bool executor_runs = true;
            try {
              (void)make_runtime_program(p, device);
            } catch (const ConfigError&) {
              executor_runs = false;
            }
            const std::vector<std::string> gaps = target_gaps(p, Target{});
            INFO(cluster_name << " tp " << tp << " cp " << cp << " pp " << pp << " reduce " << dtype_name(reduce)
                              << (gaps.empty() ? std::string() : ": " + gaps.front()));
            CHECK(executor_runs == gaps.empty());
            (executor_runs ? runs : refused) += 1;
          }
  CHECK(runs > 0);  // both sides of the branch are taken
  CHECK(refused > 0);
}

TEST_CASE("capabilities: every backend has a row, and the CUDA row refuses what it does not run") {
  REQUIRE(all_backend_capabilities().size() == 2);
  CHECK(backend_capabilities(ExecutorDevice::cpu).device == ExecutorDevice::cpu);
  CHECK(backend_capabilities(ExecutorDevice::cuda).device == ExecutorDevice::cuda);
  // The CUDA row runs tp with kv_heads >= tp (llama-tiny: 2 KV heads) and refuses Megatron's replicated KV
  // heads (tp 4), a searched setting; the CPU row runs both.
  auto tp_gaps = [](int tp, ExecutorDevice device) {
    test::PlanShape s;
    s.tp = tp;
    const Plan p = test::tiny_plan(load_model("llama-tiny"), s, 32);
    std::vector<CapabilityGap> out;
    for (const CapabilityGap& g : capability_gaps(p, backend_capabilities(device)))
      if (g.path == "/parallelism/tp") out.push_back(g);
    return out;
  };
  CHECK(tp_gaps(2, ExecutorDevice::cuda).empty());
  const std::vector<CapabilityGap> grouped = tp_gaps(4, ExecutorDevice::cuda);
  REQUIRE(grouped.size() == 1);
  CHECK(grouped.front().what.find("kv_heads (2) >= tp") != std::string::npos);
  CHECK(grouped.front().searched);
  CHECK(tp_gaps(4, ExecutorDevice::cpu).empty());
}

}  // namespace
}  // namespace fsdpx
