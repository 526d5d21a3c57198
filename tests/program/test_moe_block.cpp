// tests/program/test_moe_block.cpp — MoE blocks in the step program (program/moe_block.h): the ep
// group's members on the mesh, an MoE block's kernels (dense MLP out, router and grouped experts in),
// its dispatch/combine all-to-alls with their group and bytes, the rank's gathered expert parameters, and
// a whole lowering of a Mixtral-like plan with ep 4 (built in code).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/config_paths.h"
#include "core/plan.h"
#include "cost_models/expert_memory.h"
#include "cost_models/moe_params.h"
#include "program/group_members.h"
#include "program/lower.h"
#include "program/moe_block.h"
#include "program/segment_work.h"

namespace fsdpx {
namespace {

const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;

// mixtral-tiny (4 experts, top-2, hidden 64, expert width 176) on one DGX-H100 node, dp_shard 8, ep 4.
Plan mixtral_plan(int ep) {
  const ModelSpec m = load_model(kConfigs + "/models/mixtral-tiny.json");
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = 1;
  Parallelism par;
  par.dp_shard = 8;
  Plan p = default_plan(m, c, TrainingSettings{128, 2, 16, 0}, par, 1, RecomputeMode::none);
  p.parallelism.ep = ep;
  return p;
}

std::vector<int> ep_members(const Mesh& mesh, int ep, int rank) {
  std::vector<int> out;
  const ProcessGroup g{GroupKind::ep, {}, ep};
  group_members(mesh, g, rank, out);
  CHECK(int(out.size()) == group_size(mesh, g));
  return out;
}

bool has_kernel(const std::vector<KernelWork>& ks, const std::string& name) {
  for (const auto& k : ks)
    if (k.name == name) return true;
  return false;
}

}  // namespace

TEST_CASE("ep group: ep / cp consecutive dp_shard coordinates with every cp coordinate") {
  CHECK(ep_members(Mesh{1, 8, 1, 1}, 4, 5) == std::vector<int>{4, 5, 6, 7});
  CHECK(ep_members(Mesh{1, 8, 1, 2}, 4, 3) == std::vector<int>{1, 3, 5, 7});  // tp 2: stride 2
  CHECK(ep_members(Mesh{1, 4, 2, 1}, 4, 0) == std::vector<int>{0, 1, 2, 3});  // 2 dp_shard x 2 cp
  CHECK(ep_members(Mesh{2, 4, 1, 1}, 2, 6) == std::vector<int>{6, 7});
  CHECK(std::string(group_kind_name(GroupKind::ep)) == "ep");
}

TEST_CASE("an MoE block's kernels: the dense MLP replaced by router, permutation and grouped experts") {
  const Plan p = mixtral_plan(4);
  CHECK(is_moe_block(p, 1));
  CHECK(is_moe_block(p, 2));
  CHECK_FALSE(is_moe_block(p, 0));
  CHECK_FALSE(is_moe_block(p, 3));  // final norm
  LayerShape s;  // the plan's micro-batch and sequence
  s.micro_batch = 2;
  s.seq = 128;
  for (Pass pass : {Pass::forward, Pass::input_grad, Pass::weight_grad}) {
    const auto ks = block_kernels_of(p, 1, s, pass);
    CHECK(has_kernel(ks, "moe_experts_gate_up"));
    CHECK(has_kernel(ks, "moe_router"));
    for (const auto& k : ks) {
      CHECK(k.name.rfind("mlp_up", 0) != 0);
      CHECK(k.name.rfind("mlp_down", 0) != 0);
    }
  }
  const auto fwd = block_kernels_of(p, 1, s, Pass::forward);
  CHECK(has_kernel(fwd, "attn_out"));
  CHECK(has_kernel(fwd, "mlp_norm"));
}

TEST_CASE("all-to-alls: 2 per pass on the ep group, S = tokens x top_k x hidden x 2 bytes x imbalance") {
  Plan p = mixtral_plan(4);
  StepGroups g;
  g.ep = 7;
  std::vector<SerialCollective> out;
  add_moe_all_to_alls(out, p, g.ep, 1);
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == Collective::all_to_all);
  CHECK(out[0].group == 7);
  CHECK(out[0].count == 2);
  CHECK(out[0].bytes == doctest::Approx(2 * 128.0 * 2 * 64 * 2 * 1.25));
  out.clear();
  add_moe_all_to_alls(out, p, -1, 1);  // ep 1: no group, no all-to-all
  CHECK(out.empty());
  const WorkSet fwd = segment_forward_work(p, 1, 1, g);
  const WorkSet bwd = segment_backward_work(p, 1, 1, g, BackwardPart::all);
  for (const WorkSet* w : {&fwd, &bwd}) {
    int a2a = 0;
    for (const auto& c : w->serial_comms) a2a += c.kind == Collective::all_to_all && c.group == 7 ? c.count : 0;
    CHECK(a2a == 2);
  }
}

TEST_CASE("gathered parameters: each MoE block holds experts / ep of its routed experts") {
  const Plan p1 = mixtral_plan(1), p4 = mixtral_plan(4);
  const std::vector<double> one = moe_module_params(p1), four = moe_module_params(p4);
  const double expert = 3.0 * 64 * 176;
  CHECK(one[1] == double(count_moe_params(p1.model).moe_block));
  CHECK(one[1] - four[1] == doctest::Approx(3 * expert));  // 4 experts -> 1 local
  CHECK(one[0] == four[0]);
  CHECK(unit_params(p4)[1] == doctest::Approx(four[1]));
}

TEST_CASE("lowering a Mixtral-like plan with ep 4: an ep group and all-to-alls in every block's work") {
  const StepProgram prog = lower(mixtral_plan(4));
  int ep_group = -1;
  for (std::size_t i = 0; i < prog.groups.size(); ++i)
    if (prog.groups[i].kind == GroupKind::ep) ep_group = int(i);
  REQUIRE(ep_group >= 0);
  CHECK(prog.groups[std::size_t(ep_group)].shape.ranks == 4);
  CHECK(prog.groups[std::size_t(ep_group)].shape.ranks_per_node == 4);
  int blocks_with_a2a = 0;
  for (const Op& op : prog.roles[0].ops) {
    if (op.kind != OpKind::forward || op.micro_batch != 0) continue;
    for (const auto& c : prog.work_sets[std::size_t(op.work_set)].serial_comms)
      blocks_with_a2a += c.kind == Collective::all_to_all && c.group == ep_group;
  }
  CHECK(blocks_with_a2a == 2);  // mixtral-tiny's two MoE blocks
  const StepProgram dense_ep = lower(mixtral_plan(1));
  for (const auto& g : dense_ep.groups) CHECK(g.kind != GroupKind::ep);
}

// A dense leading block and an MoE block lowered by one role must not share a work set: the lowering
// caches work by segment_signature, which on main named both "bn", so every MoE block after a dense one
// ran the dense MLP without all-to-alls.
TEST_CASE("a role holding a dense leading block and MoE blocks lowers each with its own work") {
  const ModelSpec m = load_model(kConfigs + "/models/deepseek-tiny.json");  // block 0 dense, 1 and 2 MoE
  ClusterSpec c = load_cluster("dgx-h100");
  c.nodes = 1;
  Parallelism par;
  par.dp_shard = 8;
  Plan p = default_plan(m, c, TrainingSettings{128, 2, 16, 0}, par, 1, RecomputeMode::none);
  p.parallelism.ep = 4;
  REQUIRE_FALSE(is_moe_block(p, 1));
  REQUIRE(is_moe_block(p, 2));
  CHECK(segment_signature(p, 1, 1) != segment_signature(p, 2, 1));
  CHECK(segment_signature(p, 2, 1) == segment_signature(p, 3, 1));
  const StepProgram prog = lower(p);
  int blocks_with_a2a = 0, forwards = 0;
  for (const Op& op : prog.roles[0].ops) {
    if (op.kind != OpKind::forward || op.micro_batch != 0) continue;
    ++forwards;
    const WorkSet& w = prog.work_sets[std::size_t(op.work_set)];
    for (const auto& sc : w.serial_comms) blocks_with_a2a += sc.kind == Collective::all_to_all;
    if (has_kernel(w.kernels, "moe_router")) CHECK(has_kernel(w.kernels, "moe_experts_gate_up"));
  }
  CHECK(forwards >= 3);
  CHECK(blocks_with_a2a == 2);  // the two MoE blocks, never the dense one
}

}  // namespace fsdpx

namespace fsdpx {

TEST_CASE("sharded expert state: experts / ep over dp_shard x cp / ep ranks, so ep leaves it unchanged") {
  const Plan p1 = mixtral_plan(1), p4 = mixtral_plan(4);
  const std::vector<double> s1 = unit_state_params(p1), s4 = unit_state_params(p4);
  CHECK(s1 == unit_params(p1));  // ep 1: the state is what is gathered
  for (std::size_t u = 0; u < s1.size(); ++u) CHECK(s4[u] == doctest::Approx(s1[u]));
  CHECK(unit_params(p4)[1] < s4[1]);  // gathers one expert of four, holds a shard of all four's state
  auto resident = [](const StepProgram& prog, MemCategory c) {
    double b = 0;
    for (const MemEffect& e : prog.roles[0].resident) b += e.category == c ? e.bytes : 0;
    return b;
  };
  const StepProgram l1 = lower(p1), l4 = lower(p4);
  for (MemCategory c : {MemCategory::params, MemCategory::optimizer})
    CHECK(resident(l4, c) == doctest::Approx(resident(l1, c)));
  CHECK(resident(l4, MemCategory::params) > 0);
}

}  // namespace fsdpx

namespace fsdpx {

TEST_CASE("an MoE block saves its routed rows' tensors: the slowest rank's imbalance shows, full recompute drops them") {
  const Plan p1 = mixtral_plan(1), p4 = mixtral_plan(4);
  const double s1 = segment_memory(p1, 1, 1).saved_activation_bytes;
  const double s4 = segment_memory(p4, 1, 1).saved_activation_bytes;
  auto routed = [](const Plan& p) {
    const RoutedLoad l = routed_load(p.model, p.training.micro_batch, p.training.seq, p.parallelism, p.moe_routing);
    return routed_activation_bytes(p.model, l, p.parallelism.tp, p.precision.param).saved;
  };
  CHECK(routed(p4) > routed(p1));  // 1.25 x the rows on the slowest of 4 ranks
  CHECK(s4 - s1 == doctest::Approx(routed(p4) - routed(p1)));
  Plan f1 = p1, f4 = p4;
  f1.recompute.assign(f1.recompute.size(), RecomputeMode::full);
  f4.recompute.assign(f4.recompute.size(), RecomputeMode::full);
  CHECK(segment_memory(f4, 1, 1).saved_activation_bytes == doctest::Approx(segment_memory(f1, 1, 1).saved_activation_bytes));
  CHECK(segment_memory(f4, 1, 1).saved_activation_bytes < s1);
}

}  // namespace fsdpx

namespace fsdpx {

// The token exchange's send and receive buffers (torchtitan's ExpertParallel._token_dispatch): at ep > 1 an
// MoE segment's forward op holds (mean + slowest rows) x hidden x the dispatch dtype while it runs, and its
// backward the same beside a dense block's working set; at ep 1 nothing moves and neither op has them.
TEST_CASE("an MoE block's exchange buffers: transient in its forward and backward ops at ep > 1 only") {
  const Plan p1 = mixtral_plan(1), p4 = mixtral_plan(4);
  const RoutedLoad l = routed_load(p4.model, p4.training.micro_batch, p4.training.seq, p4.parallelism, p4.moe_routing);
  const double buffers = (l.mean_rows + l.slowest_rows) * double(p4.model.hidden) * dtype_bytes(p4.precision.param);
  CHECK(l.slowest_rows > l.mean_rows);
  CHECK(moe_dispatch_buffer_bytes(p4) == doctest::Approx(buffers));
  CHECK(moe_dispatch_buffer_bytes(p1) == 0);
  CHECK(segment_memory(p4, 1, 1).forward_working_bytes == doctest::Approx(buffers));
  CHECK(segment_memory(p1, 1, 1).forward_working_bytes == 0);
  CHECK(segment_memory(p4, 1, 1).backward_working_bytes - segment_memory(p1, 1, 1).backward_working_bytes ==
        doctest::Approx(buffers));
  // The lowering: every forward op of a block segment allocates them at its start and frees them at its end.
  const StepProgram prog = lower(p4);
  int forwards = 0;
  for (const Op& op : prog.roles[0].ops) {
    if (op.kind != OpKind::forward || prog.segments[std::size_t(op.segment)].first_module < 1 ||
        prog.segments[std::size_t(op.segment)].first_module > p4.model.layers)
      continue;
    double at_start = 0, at_end = 0;
    for (const MemEffect& e : op.alloc_at_start) at_start += e.category == MemCategory::transient ? e.bytes : 0;
    for (const MemEffect& e : op.free_at_end) at_end += e.category == MemCategory::transient ? e.bytes : 0;
    CHECK(at_start == doctest::Approx(buffers));
    CHECK(at_end == doctest::Approx(buffers));
    ++forwards;
  }
  CHECK(forwards == p4.model.layers * int(p4.training.global_batch / (p4.training.micro_batch * 8)));
}

// Megatron's distributed optimizer replicates parameters and the gradient buffer over the data-parallel
// ranks and shards only the optimizer state: at ep 4 a rank holds its local experts whole (a quarter
// of ep 1's), while the optimizer state stays what ep 1 shards over dp_shard.
TEST_CASE("replicated expert parameters: local experts whole under the distributed optimizer") {
  Plan p1 = mixtral_plan(1), p4 = mixtral_plan(4);
  for (Plan* p : {&p1, &p4}) {
    p->parallelism.data_parallel = DataParallel::distributed_optimizer;
    for (PlanUnit& u : p->units) u.reshard_after_forward = 0;
  }
  auto resident = [](const StepProgram& prog, MemCategory c) {
    double b = 0;
    for (const MemEffect& e : prog.roles[0].resident) b += e.category == c ? e.bytes : 0;
    return b;
  };
  const StepProgram l1 = lower(p1), l4 = lower(p4);
  double local4 = 0;
  for (double u : unit_params(p4)) local4 += u;
  CHECK(resident(l4, MemCategory::params) == doctest::Approx(local4 * dtype_bytes(p4.precision.param)));
  CHECK(resident(l4, MemCategory::grads) == doctest::Approx(local4 * dtype_bytes(p4.precision.reduce)));
  CHECK(resident(l4, MemCategory::params) < resident(l1, MemCategory::params));
  CHECK(resident(l4, MemCategory::optimizer) == doctest::Approx(resident(l1, MemCategory::optimizer)));
}

}  // namespace fsdpx

namespace fsdpx {

// torchtitan v0.2.2 parallel_dims.py: efsdp = dp_shard x cp x tp / (etp x ep) with etp = tp, laid out
// outside ep: every (ep / cp)-th dp_shard coordinate.
TEST_CASE("experts gather and reduce over their own efsdp group, named and sized; none when ep = dp_shard x cp") {
  const ProcessGroup efsdp{GroupKind::efsdp, {}, 4};
  std::vector<int> members;
  group_members(Mesh{1, 8, 1, 1}, efsdp, 5, members);
  CHECK(members == std::vector<int>{1, 5});
  group_members(Mesh{1, 4, 2, 1}, efsdp, 3, members);  // ep 4 = 2 dp_shard x 2 cp: efsdp 2, same cp
  CHECK(members == std::vector<int>{3, 7});
  CHECK(group_size(Mesh{1, 8, 1, 1}, efsdp) == 2);
  CHECK(std::string(group_kind_name(GroupKind::efsdp)) == "efsdp");

  const Plan p = mixtral_plan(2);  // dp_shard 8, ep 2: efsdp 4
  const StepProgram prog = lower(p);
  int group = -1;
  for (std::size_t i = 0; i < prog.groups.size(); ++i)
    if (prog.groups[i].kind == GroupKind::efsdp) group = int(i);
  REQUIRE(group >= 0);
  CHECK(prog.groups[std::size_t(group)].shape.ranks == 4);
  const double experts = unit_expert_params(p)[1] * dtype_bytes(p.precision.param);
  CHECK(experts > 0);
  int gathers = 0;
  for (const Op& op : prog.roles[0].ops) {
    if (op.unit != 1 || op.kind != OpKind::all_gather || op.micro_batch != 0) continue;
    const bool expert_op = op.name.find(".experts") != std::string::npos;
    CHECK((op.group == group) == expert_op);
    if (expert_op) {
      ++gathers;
      CHECK(op.comm_bytes == doctest::Approx(experts));
    } else {
      CHECK(op.comm_bytes == doctest::Approx(prog.units[1].param_bytes - experts));
    }
  }
  CHECK(gathers >= 1);
  Plan hsdp = mixtral_plan(4);  // 2 replicas of dp_shard 4 = ep: each expert whole on one rank of a replica
  hsdp.parallelism.dp_replicate = 2;
  hsdp.parallelism.dp_shard = 4;
  const StepProgram whole = lower(hsdp);
  for (const auto& g : whole.groups) CHECK(g.kind != GroupKind::efsdp);
  for (const Op& op : whole.roles[0].ops) CHECK(op.name.find(".experts") == std::string::npos);
}

}  // namespace fsdpx
