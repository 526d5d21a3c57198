// program/lower.cpp — builds the step program of a plan (see lower.h for what it models): process
// groups, unit placements, one role per pipeline rank, the collectives that span pipeline ranks (tied
// embedding gradients, the gradient norm), the optimizer step, resident state, and the rendezvous that
// pair ops across roles.
#include "program/lower.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "core/errors.h"
#include "cost_models/compute.h"
#include "cost_models/compute_fp8.h"
#include "cost_models/grad_scaling.h"
#include "cost_models/mesh.h"
#include "cost_models/memory.h"
#include "cost_models/moe_params.h"
#include "cost_models/params.h"
#include "cost_models/stack_costs.h"
#include "program/group_members.h"
#include "program/lowering.h"
#include "program/moe_block.h"

namespace fsdpx {
namespace lowering {

Lowerer::Lowerer(const Plan& plan, const LowerOptions& options)
    : plan_(plan), names_(options.op_names), segs_(plan_segments(plan)), params_(unit_params(plan)), state_params_(unit_state_params(plan)),
      placement_(data_placement(plan.parallelism)),
      pb_(dtype_bytes(plan.precision.param)), rb_(dtype_bytes(plan.precision.reduce)),
      autograd_grad_bytes_(stack_costs(plan.framework, plan.compiled).fsdp == FsdpImpl::flat ? rb_ : pb_),
      micro_batches_(int(plan.grad_accum())), stages_(virtual_stages(plan.parallelism.pp, plan.parallelism.vpp)) {
  // fp8 all-gather (torchao/float8/fsdp_utils.py fsdp_pre_all_gather; Megatron's fp8_param_gather): a
  // block's linear weights travel in fp8, its norms in the param dtype.
  const double fp8_bytes = fp8_linear_gather_bytes(plan.fp8, pb_);
  const double linear = fp8_linear_params_per_block(plan.model) / plan.parallelism.tp;
  for (std::size_t u = 0; u < params_.size(); ++u) {
    double blocks = 0;
    for (const std::string& m : plan.units[u].modules) blocks += m.rfind("block.", 0) == 0 ? 1 : 0;
    gather_bytes_.push_back(params_[u] * pb_ - blocks * linear * (pb_ - fp8_bytes));
  }
  for (double e : unit_expert_params(plan)) expert_gather_bytes_.push_back(e * pb_);
}

int Lowerer::add_group(GroupKind kind, GroupShape shape, int reshard_ranks) {
  prog_.groups.push_back(ProcessGroup{kind, shape, reshard_ranks});
  return int(prog_.groups.size()) - 1;
}

int Lowerer::add_mesh_group(GroupKind kind, int degree, int inner, int reshard_ranks) {
  return add_group(kind, mesh_axis_group(degree, inner, plan_.cluster.gpus_per_node), reshard_ranks);
}

// The pipeline axis is outermost (torchtitan's mesh ["pp", "dp_replicate", "dp_shard", "cp", "tp"];
// Megatron-LM's rank order tp-cp-dp-pp): a pipeline rank's peers are mesh-size ranks apart.
void Lowerer::make_groups() {
  const auto& par = plan_.parallelism;
  prog_.mesh = {par.dp_replicate, par.dp_shard, par.cp, par.tp};
  if (par.tp > 1) g_.tp = add_mesh_group(GroupKind::tp, par.tp, 1);
  if (par.cp > 1) g_.cp = add_mesh_group(GroupKind::cp, par.cp, par.tp);
  // FSDP shards over dp_shard x cp (adjacent axes, cp inner): torchtitan's dp_shard_cp mesh
  // (torchtitan v0.2.0 distributed/parallel_dims.py; v0.2.2 calls it "fsdp" = dp_shard * cp) given to
  // fully_shard, and Megatron's distributed optimizer over the data x context parallel group.
  shard_group_ = add_mesh_group(shard_group_kind(prog_.mesh), shard_group_ranks(par), par.tp);
  replicate_group_ = add_mesh_group(GroupKind::dp_replicate, par.dp_replicate, par.tp * par.cp * par.dp_shard);
  all_group_ = add_mesh_group(GroupKind::dp_all, par.dp_replicate * par.dp_shard, par.tp * par.cp);
  g_.dp_shard = shard_group_;
  g_.dp_replicate = replicate_group_;
  g_.dp_all = all_group_;
  // Groups over axes that are not adjacent on the mesh: their shapes from their members.
  auto spanning = [this](GroupKind kind) {
    return add_group(kind, group_shape(prog_.mesh, ProcessGroup{kind, {}, 0}, plan_.cluster.gpus_per_node));
  };
  if (par.cp > 1) dp_cp_group_ = spanning(GroupKind::dp_cp);
  if (par.tp * par.cp > 1) mesh_all_group_ = spanning(GroupKind::mesh_all);
  if (par.ep > 1) {  // the MoE blocks' all-to-alls (program/moe_block.h)
    const ProcessGroup ep{GroupKind::ep, {}, par.ep};
    g_.ep = add_group(GroupKind::ep, group_shape(prog_.mesh, ep, plan_.cluster.gpus_per_node), par.ep);
    // torchtitan v0.2.2 torchtitan/distributed/parallel_dims.py build_mesh: the sparse mesh
    // (pp, dp_replicate, efsdp, ep, etp) with etp = tp, efsdp = dp_shard x cp x tp / (etp x ep).
    const ProcessGroup efsdp{GroupKind::efsdp, {}, par.ep};
    if (expert_fsdp_ranks(par) > 1)
      efsdp_group_ = add_group(GroupKind::efsdp, group_shape(prog_.mesh, efsdp, plan_.cluster.gpus_per_node), par.ep);
  }
  if (par.pp == 1) return;
  const int stride = prog_.mesh.size();
  pp_pair_group_ = add_mesh_group(GroupKind::pp_pair, 2, stride);
  pp_ends_group_ = add_mesh_group(GroupKind::pp_ends, 2, stride * (par.pp - 1));
  pp_all_group_ = add_mesh_group(GroupKind::pp_all, par.pp, stride);
}

// The data-parallel mode, lowered once: every unit gets the plan's placements; the program's segments
// and the segments of each virtual stage.
void Lowerer::place_units() {
  for (std::size_t u = 0; u < params_.size(); ++u) {
    const PlanUnit& pu = plan_.units[u];
    ProgramUnit unit{placement_, gather_bytes_[u], pu.modules, stage_rank(pu.stage, plan_.parallelism.pp),
                     plan_.lora.has_value(), 0};
    const int g = reshard_ranks(int(u));
    if (is_sharded(placement_.params) && g > 1) unit.kept_shard_ranks = g;
    if (std::find(pu.modules.begin(), pu.modules.end(), "head") != pu.modules.end()) prog_.head_unit = int(u);
    if (plan_.parallelism.pp > 1 && plan_.model.tied_embeddings && pu.modules == std::vector<std::string>{"embedding"})
      prog_.tied_copy_source = int(u);
    prog_.units.push_back(std::move(unit));
  }
  prog_.recompute = plan_.recompute;
  prog_.segments = segs_;
  work_of_segment_.assign(segs_.size() * 4, -1);
  for (const Segment& seg : segs_) seg_memory_.push_back(segment_memory(plan_, seg.first_module, seg.module_count));
  stage_segments_.assign(std::size_t(stages_), {});
  for (int s = 0; s < int(segs_.size()); ++s) {
    const int stage = plan_.units[std::size_t(segs_[std::size_t(s)].unit)].stage;
    FSDP_CHECK(stage >= 0 && stage < stages_, "unit stage outside [0, pp x vpp): validate the plan first");
    stage_segments_[std::size_t(stage)].push_back(s);
  }
  first_forward_segment_.assign(plan_.units.size(), -1);
  last_forward_segment_.assign(plan_.units.size(), -1);
  for (int s = 0; s < int(segs_.size()); ++s) {
    const int u = segs_[std::size_t(s)].unit;
    if (first_forward_segment_[std::size_t(u)] < 0) first_forward_segment_[std::size_t(u)] = s;
    last_forward_segment_[std::size_t(u)] = s;
  }
}

// One pipeline rank: its passes in schedule order, then the collectives that finish the step.
void Lowerer::lower_role(int role) {
  role_ = role;
  units_.assign(plan_.units.size(), UnitState{});
  compute_ops_.clear();
  gather_free_ops_.clear();
  reduce_ops_.clear();
  input_grad_ops_.clear();
  last_rs_ = rs_to_wait_ = -1;
  RoleProgram& rp = prog_.roles[std::size_t(role)];
  rp.role_ranks = prog_.mesh.size();
  rp.streams.resize(kStreamCount);
  if (role > 0) {  // pipeline ranks run about as many ops as the one before: grow each list once at most
    const RoleProgram& before = prog_.roles[std::size_t(role - 1)];
    auto room = [](std::size_t n) { return n + n / 8 + 16; };
    rp.ops.reserve(room(before.ops.size()));
    for (int k = 0; k < kStreamCount; ++k) rp.streams[std::size_t(k)].reserve(room(before.streams[std::size_t(k)].size()));
  }
  resident_memory();
  const auto& par = plan_.parallelism;
  for (const PipeAction& a : pipeline_actions(par.pp_schedule, par.pp, par.vpp, role, micro_batches_)) run_pass(a);
  tied_all_reduce();
  adapter_all_reduce();
  optimizer_step();
}

}  // namespace lowering

namespace lowering {

// Tied embeddings across stages: the first stage's embedding and the last stage's copy for the head
// all-reduce their reduced gradients between the two (Megatron-LM's embedding group,
// megatron/core/distributed/finalize_model_grads.py, _allreduce_word_embedding_grads, after the
// data-parallel reduction): the shard under sharded gradients, the whole gradient otherwise.
void Lowerer::tied_all_reduce() {
  const int pp = plan_.parallelism.pp;
  if (pp == 1 || !plan_.model.tied_embeddings || (role_ != 0 && role_ != pp - 1)) return;
  const std::string module = role_ == 0 ? "embedding" : "head";
  int unit = -1;
  for (int u = 0; u < int(plan_.units.size()); ++u)
    for (const auto& m : plan_.units[std::size_t(u)].modules)
      if (m == module) unit = u;
  const double table = double(plan_.model.vocab) * double(plan_.model.hidden) / plan_.parallelism.tp;
  const double shards = is_sharded(placement_.grads) ? shard_group_ranks(plan_.parallelism) : 1;
  Op op;
  op.name = op_name(FMT_COMPILE("ar.tied.u{}"), unit);
  op.kind = OpKind::all_reduce;
  op.stream = StreamKind::all_reduce;
  op.collective = Collective::all_reduce;
  op.payload = Payload::tied_grads;
  op.unit = unit;
  op.comm_bytes = table * rb_ / shards;
  op.group = pp_ends_group_;
  FSDP_CHECK(units_[std::size_t(unit)].reduced_op >= 0, "tied unit without a gradient reduction");
  op.deps.push_back(units_[std::size_t(unit)].reduced_op);
  const int id = add_op(std::move(op));
  reduce_ops_.push_back(id);
  tied_ops_.push_back({role_, id});
}

// Gradient-norm clipping (a scalar all-reduce over the data-parallel group, or over the whole mesh
// when tp or cp > 1 hold distinct parameters, then across pipeline ranks: Megatron-LM's
// get_grad_norm_fp32 reduces over the model-parallel group) and AdamW on the local shard, after every
// reduction. Under fp16 loss scaling the reduced shards are first unscaled and checked for inf/NaN
// (unscale_grads), and the scalar all-reduce also carries that flag, so that it runs without clipping
// too ("inf.ar"): every rank skips a step together (torch.distributed.fsdp's ShardedGradScaler.unscale_
// all-reduces found_inf over the process group).
void Lowerer::optimizer_step() {
  std::vector<int> deps = reduce_ops_;
  if (!compute_ops_.empty()) deps.push_back(compute_ops_.back());
  if (plan_.loss_scale) deps = {unscale_grads(deps)};
  auto scalar_all_reduce = [&](const char* name, int group) {
    Op op;
    op.name = op_name(name);
    op.kind = OpKind::all_reduce;
    op.stream = StreamKind::all_reduce;
    op.collective = Collective::all_reduce;
    op.payload = Payload::grad_norm;
    op.comm_bytes = 4;  // fp32 sum of squares
    op.group = group;
    op.deps = deps;
    deps = {add_op(std::move(op))};
    return deps.front();
  };
  const bool clip = plan_.optimizer.grad_clip_norm > 0;
  if (clip || plan_.loss_scale) {
    scalar_all_reduce(clip ? "clip.ar" : "inf.ar", mesh_all_group_ >= 0 ? mesh_all_group_ : all_group_);
    if (plan_.parallelism.pp > 1)
      norm_ops_.push_back({role_, scalar_all_reduce(clip ? "clip.pp" : "inf.pp", pp_all_group_)});
  }
  std::vector<KernelWork> kernels =
      optimizer_step_kernels(local_optimizer_params(), plan_.precision.param, plan_.precision.reduce,
                             stack_costs(plan_.framework, plan_.compiled), plan_.optimizer.weight_decay > 0,
                             plan_.optimizer.grad_clip_norm > 0);
  // torchao's precompute_float8_dynamic_scale_for_fsdp after the optimizer step: the amax of every local
  // fp32 weight shard (one read) for next step's fp8 all-gathers. Its one all-reduce of a float per weight
  // is left out (a few hundred bytes). Transformer Engine's fp8_param_gather casts inside its optimizer.
  if (plan_.fp8 && plan_.fp8->all_gather && fp8_is_torchao(plan_.fp8->scaling)) {
    const double linear_share = fp8_linear_params_per_block(plan_.model) * double(plan_.model.layers) /
                                double(count_params(plan_.model).total());
    kernels.push_back(fp8_weight_amax_kernel(local_optimizer_params() * linear_share));
  }
  add_kernel_op(op_name("opt"), OpKind::optimizer, std::move(kernels), deps);
}

// A compute-stream op of the step's end (no unit, no micro-batch) running `kernels`.
int Lowerer::add_kernel_op(std::string name, OpKind kind, std::vector<KernelWork> kernels, std::vector<int> deps) {
  WorkSet w;
  w.kernels = std::move(kernels);
  prog_.work_sets.push_back(std::move(w));
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.work_set = int(prog_.work_sets.size()) - 1;
  op.deps = std::move(deps);
  return add_op(std::move(op));
}

// Parameters of this role whose optimizer state (and reduced gradient) this rank holds: sharded units
// by 1/(dp_shard x cp), replicated ones whole; with LoRA the adapters only, whole on every rank.
double Lowerer::local_optimizer_params() const {
  if (plan_.lora) return lora_params(plan_.model, *plan_.lora);
  double sharded = 0, replicated = 0;
  for (std::size_t u = 0; u < params_.size(); ++u)
    if (stage_rank(plan_.units[u].stage, plan_.parallelism.pp) == role_)
      is_sharded(prog_.units[u].placement.optimizer) ? sharded += state_params_[u] : replicated += params_[u];
  return sharded / shard_group_ranks(plan_.parallelism) + replicated;
}

// fp16 loss scaling: one pass over the rank's reduced gradients (in the reduce dtype) on the compute
// stream after every reduction, before the norm (GradScaler.unscale_ runs before clip_grad_norm_).
int Lowerer::unscale_grads(const std::vector<int>& deps) {
  return add_kernel_op(op_name("unscale"), OpKind::unscale, grad_unscale_kernels(local_optimizer_params(), plan_.precision.reduce),
                       deps);
}

// Sharded state that lives across steps, and fixed overheads: sharded parameters by FSDP2's accounting,
// replicated ones (DDP, ZeRO-1) by the ZeRO paper's. Each pipeline rank holds its own units.
void Lowerer::resident_memory() {
  double total = 0, local = 0;
  for (std::size_t u = 0; u < params_.size(); ++u)
    if (stage_rank(plan_.units[u].stage, plan_.parallelism.pp) == role_) {
      total += state_params_[u];
      local += params_[u];
    }
  const int shards = shard_group_ranks(plan_.parallelism);
  PrecisionPolicy policy{plan_.precision.param, plan_.precision.reduce, plan_.precision.fp32_master_weights};
  StateBytes state = plan_.lora                     ? lora_resident_state()
                     : is_sharded(placement_.params) ? fsdp2_state_bytes(total, shards, policy)
                                                     : model_state_bytes(total, sharding_mode(placement_), shards, policy);
  if (!plan_.lora && !is_sharded(placement_.params)) {
    // Replicated parameters (DDP, ZeRO-1, Megatron's distributed optimizer) and their whole gradient
    // buffer are on every rank: an MoE model's local experts once, not state_params_'s x ep (that
    // factor is for the division by dp_shard x cp of the sharded optimizer state).
    const StateBytes whole = model_state_bytes(local, sharding_mode(placement_), shards, policy);
    state.params = whole.params;
    state.grads = whole.grads;
  }
  // Per-axis communicators only: groups spanning several axes are left out as dp_all always was.
  int communicators = 0;
  for (const auto& g : prog_.groups)
    communicators += g.shape.ranks > 1 && g.kind != GroupKind::dp_all && g.kind != GroupKind::pp_all &&
                             g.kind != GroupKind::dp_cp &&
                             g.kind != GroupKind::mesh_all
                         ? 1
                         : 0;
  const OverheadBytes fixed = overhead_bytes(communicators, 0);
  auto& resident = prog_.roles[std::size_t(role_)].resident;
  resident.push_back({MemCategory::params, state.params});
  resident.push_back({MemCategory::grads, grads_from_reduction() ? 0.0 : state.grads});
  resident.push_back({MemCategory::optimizer, state.optimizer});
  resident.push_back({MemCategory::other, fixed.cuda_context + fixed.nccl_buffers});
}

// Every send meets its receive; the cross-stage all-reduces meet across all their roles.
void Lowerer::join_rendezvous() {
  auto join = [this](std::vector<OpRef> members) {
    const int id = int(prog_.rendezvous.size());
    for (const OpRef& m : members) prog_.roles[std::size_t(m.role)].ops[std::size_t(m.op)].rendezvous = id;
    prog_.rendezvous.push_back(std::move(members));
  };
  FSDP_CHECK(send_count_ == recv_count_, "pipeline sends and receives do not pair up");
  prog_.rendezvous.reserve(std::size_t(send_count_) + 2);
  for (std::size_t k = 0; k < sends_.size(); ++k) {
    if (sends_[k].role < 0) continue;
    FSDP_CHECK(recvs_[k].role >= 0, "a pipeline send has no receive");
    join({sends_[k], recvs_[k]});
  }
  if (!tied_ops_.empty()) join(tied_ops_);
  if (!norm_ops_.empty()) join(norm_ops_);
}

StepProgram Lowerer::build() {
  if (plan_.grad_accum() > kMaxLoweredMicroBatches)
    throw ConfigError(fmt::format("plan: /training/global_batch: {} micro-batches per step, more than the {} the "
                                  "simulator runs op by op (docs/input-ranges.md): raise micro_batch",
                                  plan_.grad_accum(), kMaxLoweredMicroBatches));
  const auto& par = plan_.parallelism;
  prog_.pp = par.pp;
  prog_.vpp = par.vpp;
  prog_.roles.resize(std::size_t(par.pp));
  make_groups();
  place_units();
  for (int role = 0; role < par.pp; ++role) lower_role(role);
  join_rendezvous();
  prog_.world_size = par.world_size();
  prog_.tokens_per_step = double(plan_.training.global_batch) * double(plan_.training.seq);
  // MoE: PaLM's count over the active parameters (cost_models/moe_params.h).
  prog_.model_flops_per_token = plan_.model.is_moe() ? moe_model_flops_per_token(plan_.model, plan_.training.seq)
                                                     : model_flops_per_token(plan_.model, plan_.training.seq);
  prog_.peak_flops_per_s = plan_.cluster.gpu.peak(plan_.precision.param);
  return std::move(prog_);
}

}  // namespace lowering

namespace {
std::atomic<std::int64_t> g_lower_calls{0};  // a diagnostic count, read by tests only
}  // namespace

StepProgram lower(const Plan& plan, const LowerOptions& options) {
  g_lower_calls.fetch_add(1, std::memory_order_relaxed);
  return lowering::Lowerer(plan, options).build();
}

std::int64_t lower_call_count() { return g_lower_calls.load(std::memory_order_relaxed); }

}  // namespace fsdpx
