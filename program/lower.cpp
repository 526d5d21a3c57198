// program/lower.cpp — builds the step program of a plan (see lower.h for what it models).
#include "program/lower.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/errors.h"
#include "cost_models/mesh.h"
#include "cost_models/memory.h"
#include "cost_models/params.h"
#include "program/segment_work.h"

namespace fsdpx {

namespace {

// A collective op on the stream of its kind: `payload` of `unit` (-1: none), nccl-tests' S = `bytes`.
Op collective_op(std::string name, OpKind kind, Payload payload, int unit, int mb, double bytes, int group) {
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.payload = payload;
  op.unit = unit;
  op.micro_batch = mb;
  op.comm_bytes = bytes;
  op.group = group;
  switch (kind) {
    case OpKind::all_gather: op.stream = StreamKind::all_gather, op.collective = Collective::all_gather; break;
    case OpKind::reduce_scatter:
      op.stream = StreamKind::reduce_scatter, op.collective = Collective::reduce_scatter;
      break;
    case OpKind::all_reduce: op.stream = StreamKind::all_reduce, op.collective = Collective::all_reduce; break;
    default: FSDP_CHECK(false, "collective_op: not a collective");
  }
  return op;
}

// Emits the ops of one step into one role, in issue order.
class Lowerer {
 public:
  explicit Lowerer(const Plan& plan)
      : plan_(plan), segs_(plan_segments(plan)), params_(unit_params(plan)), placement_(data_placement(plan.parallelism)),
        pb_(dtype_bytes(plan.precision.param)), rb_(dtype_bytes(plan.precision.reduce)) {}

  StepProgram build();

 private:
  struct UnitState {
    bool live = false;      // unsharded parameters allocated
    int gather_op = -1;     // latest all-gather of the unit
    int gather_index = -1;  // its index in all-gather order
    double kept_bytes = 0;  // the partial copy kept after forward (reshard to g ranks)
    bool grads_live = false;
  };

  int add_group(GroupKind kind, int degree, int inner, int reshard_ranks = 0);
  void make_groups();
  int add_op(Op op);
  int work_set(int seg, bool backward);
  int reshard_ranks(int unit) const;
  bool sharded_params(int unit) const { return is_sharded(prog_.units[std::size_t(unit)].placement.params); }
  void place_units();
  void gather(int unit, int mb, bool backward);
  void forward(int mb);
  void backward(int mb);
  void reduce(int unit, int mb, int after_op);
  void optimizer_step();
  void resident_memory();

  const Plan& plan_;
  std::vector<Segment> segs_;
  std::vector<double> params_;
  DataPlacement placement_;  // the plan's data-parallel mode; every unit is placed so
  double pb_, rb_;
  StepProgram prog_;
  StepGroups g_;
  int shard_group_ = -1, replicate_group_ = -1, all_group_ = -1;
  std::map<int, int> reshard_groups_;  // g -> group
  std::map<std::string, int> work_cache_;
  std::vector<UnitState> units_;
  std::vector<int> first_forward_segment_, last_forward_segment_;  // per unit
  std::vector<int> compute_ops_;      // forward/backward ops in compute-stream order
  std::vector<int> gather_free_ops_;  // per all-gather: the op that frees its buffer (-1: not yet)
  std::vector<int> reduce_ops_;       // every gradient collective, for the optimizer's dependencies
};

int Lowerer::add_group(GroupKind kind, int degree, int inner, int reshard_ranks) {
  ProcessGroup pg;
  pg.kind = kind;
  pg.shape = mesh_axis_group(degree, inner, plan_.cluster.gpus_per_node);
  pg.reshard_ranks = reshard_ranks;
  prog_.groups.push_back(pg);
  return int(prog_.groups.size()) - 1;
}

void Lowerer::make_groups() {
  const auto& par = plan_.parallelism;
  prog_.mesh = {par.dp_replicate, par.dp_shard, par.cp, par.tp};
  if (par.tp > 1) g_.tp = add_group(GroupKind::tp, par.tp, 1);
  if (par.cp > 1) g_.cp = add_group(GroupKind::cp, par.cp, par.tp);
  shard_group_ = add_group(GroupKind::dp_shard, par.dp_shard, par.tp * par.cp);
  replicate_group_ = add_group(GroupKind::dp_replicate, par.dp_replicate, par.tp * par.cp * par.dp_shard);
  all_group_ = add_group(GroupKind::dp_all, par.dp_replicate * par.dp_shard, par.tp * par.cp);
  g_.dp_shard = shard_group_;
  g_.dp_replicate = replicate_group_;
  g_.dp_all = all_group_;
}

int Lowerer::add_op(Op op) {
  RoleProgram& role = prog_.roles[0];
  const int id = int(role.ops.size());
  role.streams[std::size_t(op.stream)].push_back(id);
  if (op.kind == OpKind::forward || op.kind == OpKind::backward) compute_ops_.push_back(id);
  role.ops.push_back(std::move(op));
  return id;
}

int Lowerer::work_set(int seg, bool backward) {
  const Segment& s = segs_[std::size_t(seg)];
  std::string key(1, backward ? 'b' : 'f');
  key += segment_signature(plan_, s.first_module, s.module_count);
  auto it = work_cache_.find(key);
  if (it != work_cache_.end()) return it->second;
  prog_.work_sets.push_back(backward ? segment_backward_work(plan_, s.first_module, s.module_count, g_)
                                     : segment_forward_work(plan_, s.first_module, s.module_count, g_));
  const int id = int(prog_.work_sets.size()) - 1;
  work_cache_[key] = id;
  return id;
}

// 0: keep unsharded until backward; 1: reshard fully; g: keep a copy sharded over g ranks.
int Lowerer::reshard_ranks(int unit) const {
  const int r = plan_.units[std::size_t(unit)].reshard_after_forward;
  return r >= plan_.parallelism.dp_shard ? 1 : r;
}

// The data-parallel mode, lowered once: every unit gets the plan's placements; the program's segments.
void Lowerer::place_units() {
  for (double p : params_) prog_.units.push_back(ProgramUnit{placement_, p * pb_});
  prog_.segments = segs_;
}

}  // namespace

namespace {

// All-gather of a unit before its next use. Prefetch depth d lets it run while the d compute ops before
// its consumer run: it waits for the compute op d+1 places earlier (d = 0 serialises). The in-flight cap
// c (FSDP1's rate limiter) makes it wait until the buffer of the c-th previous all-gather is freed.
void Lowerer::gather(int unit, int mb, bool backward) {
  UnitState& us = units_[std::size_t(unit)];
  const int g = reshard_ranks(unit);
  Op op = collective_op(fmt::format("ag.u{}.mb{}.{}", unit, mb, backward ? "bwd" : "fwd"), OpKind::all_gather,
                        Payload::params, unit, mb, params_[std::size_t(unit)] * pb_, shard_group_);
  if (backward && g > 1) {
    if (!reshard_groups_.count(g))
      reshard_groups_[g] = add_group(GroupKind::reshard, g, plan_.parallelism.tp * plan_.parallelism.cp, g);
    op.group = reshard_groups_[g];
    op.kept_shard_ranks = g;
    op.free_at_end.push_back({MemCategory::transient, us.kept_bytes});
    us.kept_bytes = 0;
  }
  const int depth = backward ? plan_.prefetch.backward : plan_.prefetch.forward;
  const int wait_pos = int(compute_ops_.size()) - depth - 1;
  if (wait_pos >= 0) op.deps.push_back(compute_ops_[std::size_t(wait_pos)]);
  const int index = int(gather_free_ops_.size());
  const int capped = index - plan_.prefetch.max_all_gathers_in_flight;
  if (capped >= 0 && gather_free_ops_[std::size_t(capped)] >= 0) op.deps.push_back(gather_free_ops_[std::size_t(capped)]);
  if (sharded_params(unit)) op.alloc_at_start.push_back({MemCategory::transient, params_[std::size_t(unit)] * pb_});
  us.gather_op = add_op(std::move(op));
  us.gather_index = index;
  us.live = true;
  gather_free_ops_.push_back(-1);
}

void Lowerer::forward(int mb) {
  for (int s = 0; s < int(segs_.size()); ++s) {
    const Segment& seg = segs_[std::size_t(s)];
    UnitState& us = units_[std::size_t(seg.unit)];
    const DataPlacement& place = prog_.units[std::size_t(seg.unit)].placement;
    const bool sharded = is_sharded(place.params);
    // Replicated parameters updated from sharded optimizer state (ZeRO-1) are gathered once per step,
    // overlapped with the first forward (Megatron's overlap_param_gather): modelled as forward
    // all-gathers of micro-batch 0 without new memory.
    const bool gathers = sharded || (mb == 0 && is_sharded(place.optimizer));
    if (gathers && !us.live) gather(seg.unit, mb, false);
    Op op;
    op.name = fmt::format("fwd.s{}.mb{}", s, mb);
    op.kind = OpKind::forward;
    op.unit = seg.unit;
    op.segment = s;
    op.micro_batch = mb;
    op.work_set = work_set(s, false);
    if (us.gather_op >= 0 && gathers) op.deps.push_back(us.gather_op);
    op.alloc_at_start.push_back(
        {MemCategory::activations, segment_memory(plan_, seg.first_module, seg.module_count).saved_activation_bytes});
    const bool last_use = s == last_forward_segment_[std::size_t(seg.unit)];
    const int g = reshard_ranks(seg.unit);
    op.release_params = sharded && last_use && g == 1;
    const int id = add_op(std::move(op));
    if (!sharded) continue;  // DDP / ZeRO-1: parameters stay unsharded
    if (last_use && g == 1) {
      us.live = false;
      gather_free_ops_[std::size_t(us.gather_index)] = id;
    } else if (last_use && g > 1) {
      Op fr;  // keep a copy sharded over g ranks, free the full one (FSDP2's int reshard_after_forward)
      fr.name = fmt::format("free.u{}.mb{}", seg.unit, mb);
      fr.kind = OpKind::free;
      fr.unit = seg.unit;
      fr.micro_batch = mb;
      fr.deps.push_back(id);
      us.kept_bytes = params_[std::size_t(seg.unit)] * pb_ / g;
      fr.alloc_at_start.push_back({MemCategory::transient, us.kept_bytes});
      fr.release_params = true;
      fr.kept_shard_ranks = g;
      gather_free_ops_[std::size_t(us.gather_index)] = add_op(std::move(fr));
      us.live = false;
    }
  }
}

}  // namespace

namespace {

void Lowerer::backward(int mb) {
  const bool reduce_now = plan_.reduce_grads == ReduceGrads::every_micro_batch || mb + 1 == plan_.grad_accum();
  for (int s = int(segs_.size()) - 1; s >= 0; --s) {
    const Segment& seg = segs_[std::size_t(s)];
    const int u = seg.unit;
    UnitState& us = units_[std::size_t(u)];
    const bool sharded = sharded_params(u);
    const bool first_use = s == last_forward_segment_[std::size_t(u)];
    if (sharded && first_use && !us.live) gather(u, mb, true);
    const SegmentMemory mem = segment_memory(plan_, seg.first_module, seg.module_count);
    Op op;
    op.name = fmt::format("bwd.s{}.mb{}", s, mb);
    op.kind = OpKind::backward;
    op.unit = u;
    op.segment = s;
    op.micro_batch = mb;
    op.work_set = work_set(s, true);
    if (sharded && us.gather_op >= 0) op.deps.push_back(us.gather_op);
    // FSDP2 reduces through an unsharded gradient buffer per unit in the reduce dtype; without
    // reduction this micro-batch it stays until the reducing one (no_sync). DDP / ZeRO-1 keep full
    // gradients resident.
    if (sharded && first_use && !us.grads_live) {
      op.alloc_at_start.push_back({MemCategory::transient, params_[std::size_t(u)] * rb_});
      us.grads_live = true;
    }
    op.alloc_at_start.push_back({MemCategory::transient, mem.backward_working_bytes});
    op.free_at_end.push_back({MemCategory::transient, mem.backward_working_bytes});
    op.free_at_end.push_back({MemCategory::activations, mem.saved_activation_bytes});
    const bool last_use = s == first_forward_segment_[std::size_t(u)];
    if (sharded && last_use) {
      op.release_params = true;  // reshard after backward
      us.live = false;
    }
    const int id = add_op(std::move(op));
    if (sharded && last_use) gather_free_ops_[std::size_t(us.gather_index)] = id;
    if (last_use && reduce_now) reduce(u, mb, id);
  }
}

// Gradient reduction of a unit after its backward: reduce-scatter in the shard group (FSDP, HSDP,
// ZeRO-1), then all-reduce of the shard across replicas; DDP all-reduces the whole gradient.
void Lowerer::reduce(int unit, int mb, int after_op) {
  const DataPlacement& place = prog_.units[std::size_t(unit)].placement;
  const double grad_bytes = params_[std::size_t(unit)] * rb_;
  if (!is_sharded(place.grads)) {
    Op ar = collective_op(fmt::format("ar.u{}.mb{}", unit, mb), OpKind::all_reduce, Payload::grads, unit, mb,
                          grad_bytes, all_group_);
    ar.deps.push_back(after_op);
    ar.completes_reduction = true;
    reduce_ops_.push_back(add_op(std::move(ar)));
    return;
  }
  Op op = collective_op(fmt::format("rs.u{}.mb{}", unit, mb), OpKind::reduce_scatter, Payload::grads, unit, mb,
                        grad_bytes, shard_group_);
  op.deps.push_back(after_op);
  if (is_sharded(place.params)) {
    op.free_at_end.push_back({MemCategory::transient, grad_bytes});
    units_[std::size_t(unit)].grads_live = false;
  }
  const bool across_replicas = place.grads == Placement::sharded_replicated;
  op.completes_reduction = !across_replicas;
  const int rs = add_op(std::move(op));
  reduce_ops_.push_back(rs);
  if (across_replicas) {
    Op ar = collective_op(fmt::format("ar.u{}.mb{}", unit, mb), OpKind::all_reduce, Payload::grad_shard, unit, mb,
                          grad_bytes / plan_.parallelism.dp_shard, replicate_group_);
    ar.completes_reduction = true;
    ar.deps.push_back(rs);
    reduce_ops_.push_back(add_op(std::move(ar)));
  }
}

// Gradient-norm clipping (a scalar all-reduce) and AdamW on the local shard, after every reduction.
void Lowerer::optimizer_step() {
  std::vector<int> deps = reduce_ops_;
  if (!compute_ops_.empty()) deps.push_back(compute_ops_.back());
  if (plan_.optimizer.grad_clip_norm > 0) {
    Op clip = collective_op("clip.ar", OpKind::all_reduce, Payload::grad_norm, -1, -1, 4, all_group_);  // fp32 Σg²
    clip.deps = deps;
    deps = {add_op(std::move(clip))};
  }
  double sharded = 0, replicated = 0;  // parameters whose optimizer state is sharded / replicated
  for (std::size_t u = 0; u < params_.size(); ++u)
    (is_sharded(prog_.units[u].placement.optimizer) ? sharded : replicated) += params_[u];
  const double local = sharded / plan_.parallelism.dp_shard + replicated;
  WorkSet w;
  w.kernels.push_back(optimizer_kernel(local, plan_.precision.param, plan_.precision.reduce));
  prog_.work_sets.push_back(std::move(w));
  Op op;
  op.name = "opt";
  op.kind = OpKind::optimizer;
  op.work_set = int(prog_.work_sets.size()) - 1;
  op.deps = deps;
  add_op(std::move(op));
}

}  // namespace

namespace {

// Sharded state that lives across steps, and fixed overheads: sharded parameters by FSDP2's accounting,
// replicated ones (DDP, ZeRO-1) by the ZeRO paper's.
void Lowerer::resident_memory() {
  double total = 0;
  for (double p : params_) total += p;
  const int shards = plan_.parallelism.dp_shard;
  PrecisionPolicy policy{plan_.precision.param, plan_.precision.reduce, plan_.precision.fp32_master_weights};
  const StateBytes state = is_sharded(placement_.params) ? fsdp2_state_bytes(total, shards, policy)
                                                         : model_state_bytes(total, sharding_mode(placement_), shards, policy);
  int communicators = 0;
  for (const auto& g : prog_.groups) communicators += g.shape.ranks > 1 && g.kind != GroupKind::dp_all ? 1 : 0;
  const OverheadBytes fixed = overhead_bytes(communicators, 0);
  auto& resident = prog_.roles[0].resident;
  resident.push_back({MemCategory::params, state.params});
  resident.push_back({MemCategory::grads, state.grads});
  resident.push_back({MemCategory::optimizer, state.optimizer});
  resident.push_back({MemCategory::other, fixed.cuda_context + fixed.nccl_buffers});
}

StepProgram Lowerer::build() {
  if (plan_.parallelism.pp > 1)
    throw ConfigError("plan: /parallelism/pp: pipeline parallelism is not modelled by the simulator yet");
  if (plan_.grad_accum() > kMaxLoweredMicroBatches)
    throw ConfigError(fmt::format("plan: /training/global_batch: {} micro-batches per step, more than the {} the "
                                  "simulator runs op by op (docs/input-ranges.md): raise micro_batch",
                                  plan_.grad_accum(), kMaxLoweredMicroBatches));
  prog_.roles.resize(1);
  prog_.roles[0].role_ranks = plan_.parallelism.world_size();
  prog_.roles[0].streams.resize(kStreamCount);
  make_groups();
  place_units();
  units_.assign(plan_.units.size(), UnitState{});
  first_forward_segment_.assign(plan_.units.size(), -1);
  last_forward_segment_.assign(plan_.units.size(), -1);
  for (int s = 0; s < int(segs_.size()); ++s) {
    const int u = segs_[std::size_t(s)].unit;
    if (first_forward_segment_[std::size_t(u)] < 0) first_forward_segment_[std::size_t(u)] = s;
    last_forward_segment_[std::size_t(u)] = s;
  }
  resident_memory();
  const std::int64_t micro_batches = plan_.grad_accum();
  for (int mb = 0; mb < int(micro_batches); ++mb) {
    forward(mb);
    backward(mb);
  }
  optimizer_step();
  prog_.world_size = plan_.parallelism.world_size();
  prog_.tokens_per_step = double(plan_.training.global_batch) * double(plan_.training.seq);
  prog_.model_flops_per_token = model_flops_per_token(plan_.model, plan_.training.seq);
  prog_.peak_flops_per_s = plan_.cluster.gpu.peak(plan_.precision.param);
  return std::move(prog_);
}

}  // namespace

StepProgram lower(const Plan& plan) { return Lowerer(plan).build(); }

}  // namespace fsdpx
