// program/lower_units.cpp — the FSDP ops of one segment pass, following FSDP2's schedule
// (pytorch/pytorch, torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py and _fsdp_collectives.py):
// all-gathers run ahead of use on their own stream, forward reshards per reshard_after_forward,
// backward reshards after the unit's backward, reduce-scatters run on their own stream. Under pipeline
// parallelism a backward keeps the parameters until the unit's last micro-batch (torch.distributed.
// pipelining, stage.py backward_maybe_with_nosync: set_reshard_after_backward(False) until the last
// backward), and ZB's weight pass (W) produces the gradients that get reduced.
#include <algorithm>
#include <utility>

#include <fmt/compile.h>  // FMT_COMPILE: op and module names, formatted per op
#include <fmt/format.h>

#include "core/errors.h"
#include "cost_models/stack_costs.h"
#include "program/group_members.h"
#include "program/lowering.h"

namespace fsdpx::lowering {

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

// A compute op of segment `s` for micro-batch `mb`, named "<prefix>.s<s>.mb<mb>" when `named`.
Op compute_op(const char* prefix, bool named, OpKind kind, int s, int unit, int mb, int stage, int work_set) {
  Op op;
  if (named) op.name = fmt::format(FMT_COMPILE("{}.s{}.mb{}"), prefix, s, mb);
  op.kind = kind;
  op.unit = unit;
  op.segment = s;
  op.micro_batch = mb;
  op.stage = stage;
  op.work_set = work_set;
  return op;
}

}  // namespace

int Lowerer::add_op(Op op) {
  RoleProgram& role = prog_.roles[std::size_t(role_)];
  const int id = int(role.ops.size());
  role.streams[std::size_t(op.stream)].push_back(id);
  if (op.stream == StreamKind::compute && op.kind != OpKind::free && op.kind != OpKind::optimizer &&
      op.kind != OpKind::unscale) {
    compute_ops_.push_back(id);
    if (rs_to_wait_ >= 0) op.deps.push_back(rs_to_wait_);
  }
  role.ops.push_back(std::move(op));
  return id;
}

// Segments with the same signature share a work set; each (segment, kind) looks its signature up once.
int Lowerer::work_set(int seg, WorkKind kind) {
  int& known = work_of_segment_[std::size_t(seg) * 4 + std::size_t(kind)];
  if (known >= 0) return known;
  const Segment& s = segs_[std::size_t(seg)];
  std::string key(1, "fbiw"[int(kind)]);
  key += segment_signature(plan_, s.first_module, s.module_count);
  auto it = work_cache_.find(key);
  if (it != work_cache_.end()) return known = it->second;
  static constexpr BackwardPart kParts[] = {BackwardPart::all, BackwardPart::all, BackwardPart::input,
                                            BackwardPart::weight};
  prog_.work_sets.push_back(kind == WorkKind::forward
                                ? segment_forward_work(plan_, s.first_module, s.module_count, g_)
                                : segment_backward_work(plan_, s.first_module, s.module_count, g_, kParts[int(kind)]));
  const int id = int(prog_.work_sets.size()) - 1;
  work_cache_[key] = id;
  return known = id;
}

bool Lowerer::grads_from_reduction() const {
  return !plan_.lora && is_sharded(placement_.params) &&
         sharded_grads_from_reduction(stack_costs(plan_.framework, plan_.compiled).fsdp);
}

// 0: keep unsharded until backward; 1: reshard fully; g: keep a copy sharded over g ranks of the shard
// group (dp_shard x cp; g at least its size reshards fully).
int Lowerer::reshard_ranks(int unit) const {
  const int r = plan_.units[std::size_t(unit)].reshard_after_forward;
  return r >= shard_group_ranks(plan_.parallelism) ? 1 : r;
}

// All-gather of a unit before its next use. Prefetch depth d lets it run while the d compute ops before
// its consumer run: it waits for the compute op d+1 places earlier (d = 0 serialises). The in-flight cap
// c (FSDP1's rate limiter) makes it wait until the buffer of the c-th previous all-gather is freed.
// While a kept copy is alive (FSDP2's int reshard_after_forward: one post-forward copy per module), the
// unit is gathered from it over the reshard group and the copy is freed, in backward and in a forward
// that an interleaved schedule runs before the backward of the copy's micro-batch (FSDP2's unshard
// from the post-forward mesh, torch/distributed/fsdp/_fully_shard/_fsdp_param.py, to_unsharded). Such a
// gather depends on the release op that wrote the copy (issue 26: the executor's CUDA unit copies the
// slice on the compute stream, the gather reads it on its own stream; the prefetch wait alone does not
// order them when the depth reaches back past that release).
void Lowerer::gather(int unit, int mb, bool backward) {
  UnitState& us = units_[std::size_t(unit)];
  const int g = reshard_ranks(unit);
  const std::string name = op_name(FMT_COMPILE("ag.u{}.mb{}.{}"), unit, mb, backward ? "bwd" : "fwd");
  Op op = collective_op(name, OpKind::all_gather, Payload::params, unit, mb, gather_bytes_[std::size_t(unit)],
                        shard_group_);
  const bool from_kept = g > 1 && (backward || us.kept_bytes > 0);
  if (!from_kept) split_experts(op, name);
  if (from_kept) {
    if (!reshard_groups_.count(g))
      reshard_groups_[g] = add_mesh_group(GroupKind::reshard, g, plan_.parallelism.tp, g);  // g ranks of dp_shard x cp
    op.group = reshard_groups_[g];
    op.kept_shard_ranks = g;
    op.free_at_end.push_back({MemCategory::transient, us.kept_bytes});
    if (us.kept_op >= 0) op.deps.push_back(us.kept_op);
    us.kept_bytes = 0;
    us.kept_op = -1;
  }
  const int depth = backward ? plan_.prefetch.backward : plan_.prefetch.forward;
  const int wait_pos = int(compute_ops_.size()) - depth - 1;
  if (wait_pos >= 0) op.deps.push_back(compute_ops_[std::size_t(wait_pos)]);
  const int index = int(gather_free_ops_.size());
  const int capped = index - plan_.prefetch.max_all_gathers_in_flight;
  if (capped >= 0 && gather_free_ops_[std::size_t(capped)] >= 0) op.deps.push_back(gather_free_ops_[std::size_t(capped)]);
  add_expert_part(op);
  if (sharded_params(unit)) op.alloc_at_start.push_back({MemCategory::transient, gather_bytes_[std::size_t(unit)]});
  us.gather_op = add_op(std::move(op));
  us.gather_index = index;
  us.live = true;
  gather_free_ops_.push_back(-1);
}

// Forward of segment s; `input_op` (a receive of activations, or -1) must finish first. Returns the
// forward op.
int Lowerer::forward_segment(int s, int mb, int input_op) {
  const Segment& seg = segs_[std::size_t(s)];
  UnitState& us = units_[std::size_t(seg.unit)];
  const DataPlacement& place = prog_.units[std::size_t(seg.unit)].placement;
  const bool sharded = is_sharded(place.params);
  // Replicated parameters updated from sharded optimizer state (ZeRO-1) are gathered once per step,
  // overlapped with the first forward (Megatron's overlap_param_gather): modelled as forward
  // all-gathers of micro-batch 0 without new memory.
  const bool gathers = sharded || (mb == 0 && is_sharded(place.optimizer));
  if (gathers && !us.live) gather(seg.unit, mb, false);
  Op op = compute_op("fwd", names_, OpKind::forward, s, seg.unit, mb, plan_.units[std::size_t(seg.unit)].stage,
                     work_set(s, WorkKind::forward));
  if (us.gather_op >= 0 && gathers) op.deps.push_back(us.gather_op);
  if (input_op >= 0) op.deps.push_back(input_op);
  const SegmentMemory& mem = memory_of(s);
  op.alloc_at_start.push_back({MemCategory::activations, mem.saved_activation_bytes});
  if (mem.forward_working_bytes > 0) {  // an MoE block's exchange buffers (program/moe_block.h)
    op.alloc_at_start.push_back({MemCategory::transient, mem.forward_working_bytes});
    op.free_at_end.push_back({MemCategory::transient, mem.forward_working_bytes});
  }
  const bool last_use = s == last_forward_segment_[std::size_t(seg.unit)];
  const int g = reshard_ranks(seg.unit);
  op.release_params = sharded && last_use && g == 1;
  const int id = add_op(std::move(op));
  if (!sharded) return id;  // DDP / ZeRO-1: parameters stay unsharded
  if (last_use && g == 1) {
    us.live = false;
    gather_free_ops_[std::size_t(us.gather_index)] = id;
  } else if (last_use && g > 1) {
    Op fr;  // keep a copy sharded over g ranks, free the full one (FSDP2's int reshard_after_forward)
    fr.name = op_name(FMT_COMPILE("free.u{}.mb{}"), seg.unit, mb);
    fr.kind = OpKind::free;
    fr.unit = seg.unit;
    fr.micro_batch = mb;
    fr.deps.push_back(id);
    us.kept_bytes = gather_bytes_[std::size_t(seg.unit)] / g;
    fr.alloc_at_start.push_back({MemCategory::transient, us.kept_bytes});
    fr.release_params = true;
    fr.kept_shard_ranks = g;
    us.kept_op = add_op(std::move(fr));
    gather_free_ops_[std::size_t(us.gather_index)] = us.kept_op;
    us.live = false;
  }
  return id;
}

}  // namespace fsdpx::lowering

namespace fsdpx::lowering {

// Backward of segment s (`split`: ZB's B only); `input_op` (a receive of activation gradients, or -1)
// must finish first. Returns the backward op.
int Lowerer::backward_segment(int s, int mb, int input_op, bool split) {
  const bool reduce_now = plan_.reduce_grads == ReduceGrads::every_micro_batch || last_micro_batch(mb);
  const Segment& seg = segs_[std::size_t(s)];
  const int u = seg.unit;
  UnitState& us = units_[std::size_t(u)];
  const bool sharded = sharded_params(u);
  const bool first_use = s == last_forward_segment_[std::size_t(u)];
  if (sharded && first_use && !us.live) gather(u, mb, true);
  const SegmentMemory& mem = memory_of(s);
  Op op = compute_op(split ? "bwdi" : "bwd", names_, split ? OpKind::backward_input : OpKind::backward, s, u, mb,
                     plan_.units[std::size_t(u)].stage, work_set(s, split ? WorkKind::backward_input : WorkKind::backward));
  if (sharded && us.gather_op >= 0) op.deps.push_back(us.gather_op);
  if (input_op >= 0) op.deps.push_back(input_op);
  // A unit's unsharded gradients live from its first backward op to its reduction (autograd's, in
  // the param dtype under PyTorch FSDP; one reduce-dtype buffer in fsdpx's units); without reduction
  // this micro-batch they stay until the reducing one (no_sync). DDP / ZeRO-1 keep full gradients
  // resident. Under ZB the weight pass writes the gradients (weight_segment).
  double grads_now = 0;
  if (!split && sharded && first_use && !us.grads_live && !plan_.lora) {
    grads_now = params_[std::size_t(u)] * autograd_grad_bytes_;
    op.alloc_at_start.push_back({MemCategory::transient, grads_now});
    us.grads_live = true;
  }
  // PyTorch's autograd runs the loss backward first (nll_loss and log_softmax backward) and frees its
  // fp32 tensors before it reaches the head's matmul, whose weight gradient comes next: the op's high is
  // the larger of the two moments, not their sum. fsdpx's flat units hold their gradient buffer throughout.
  const bool autograd = stack_costs(plan_.framework, plan_.compiled).fsdp != FsdpImpl::flat;
  const double autograd_grads = autograd ? grads_now : 0;
  const double working = std::max(mem.backward_working_bytes, mem.loss_backward_bytes - autograd_grads);
  op.alloc_at_start.push_back({MemCategory::transient, working});
  if (split) op.alloc_at_start.push_back({MemCategory::activations, mem.weight_pass_bytes});
  op.free_at_end.push_back({MemCategory::transient, working});
  op.free_at_end.push_back({MemCategory::activations, mem.saved_activation_bytes});
  const bool last_use = s == first_forward_segment_[std::size_t(u)];
  if (!split && last_use && reduce_now && rs_input_pending_bytes_ > 0) {
    op.free_at_end.push_back({MemCategory::transient, rs_input_pending_bytes_});
    rs_input_pending_bytes_ = 0;
  }
  const bool releases = sharded && last_use && (plan_.parallelism.pp == 1 || last_micro_batch(mb));
  if (releases) {
    op.release_params = true;  // reshard after backward
    us.live = false;
  }
  const int id = add_op(std::move(op));
  if (releases) gather_free_ops_[std::size_t(us.gather_index)] = id;
  if (split) input_grad_ops_[{s, mb}] = id;
  if (!split && last_use && reduce_now) reduce(u, mb, id);
  return id;
}

// ZB's W of segment s: the weight gradients from what its B kept.
void Lowerer::weight_segment(int s, int mb) {
  const bool reduce_now = plan_.reduce_grads == ReduceGrads::every_micro_batch || last_micro_batch(mb);
  const Segment& seg = segs_[std::size_t(s)];
  const int u = seg.unit;
  UnitState& us = units_[std::size_t(u)];
  const auto b = input_grad_ops_.find({s, mb});
  FSDP_CHECK(b != input_grad_ops_.end(), "a weight pass before its input-gradient pass");
  Op op = compute_op("bwdw", names_, OpKind::backward_weight, s, u, mb, plan_.units[std::size_t(u)].stage,
                     work_set(s, WorkKind::backward_weight));
  op.deps.push_back(b->second);
  input_grad_ops_.erase(b);
  if (sharded_params(u) && s == last_forward_segment_[std::size_t(u)] && !us.grads_live) {
    op.alloc_at_start.push_back({MemCategory::transient, params_[std::size_t(u)] * autograd_grad_bytes_});
    us.grads_live = true;
  }
  op.free_at_end.push_back({MemCategory::activations, memory_of(s).weight_pass_bytes});
  const int id = add_op(std::move(op));
  if (s == first_forward_segment_[std::size_t(u)] && reduce_now) reduce(u, mb, id);
}

// Memory of a reduce-scatter of sharded parameters' gradients (PyTorch FSDP: autograd's gradients, in
// the param dtype, are copied, widening, into the reduce-scatter input; fsdpx's units hold one
// reduce-dtype buffer).
void Lowerer::reduce_scatter_memory(Op& op, int unit, int mb, double grad_bytes) {
  const double autograd_bytes = params_[std::size_t(unit)] * autograd_grad_bytes_;
  // FSDP2 frees autograd's gradients as soon as they are copied into the reduce-scatter input
  // (_fsdp_collectives.py foreach_reduce: unsharded_grads cleared after foreach_reduce_scatter_copy_in):
  // the input takes their place at the collective's start.
  const bool freed_at_copy = autograd_grad_bytes_ != rb_ && grads_from_reduction();
  if (freed_at_copy)
    op.alloc_at_start.push_back({MemCategory::transient, grad_bytes - autograd_bytes});
  else if (autograd_grad_bytes_ != rb_)
    op.alloc_at_start.push_back({MemCategory::transient, grad_bytes});
  // The reduce-scatter's output becomes the unit's sharded gradient (in the sharded parameter's dtype);
  // later micro-batches accumulate into it.
  const bool first = plan_.reduce_grads == ReduceGrads::last_micro_batch || mb == 0;
  if (first && grads_from_reduction()) {
    const PrecisionPolicy policy{plan_.precision.param, plan_.precision.reduce, plan_.precision.fp32_master_weights};
    op.alloc_at_start.push_back(
        {MemCategory::grads, fsdp2_state_bytes(state_params_[std::size_t(unit)], shard_group_ranks(plan_.parallelism), policy).grads});
  }
  // FSDP2 without pipelining: the widened input outlives the collective until the next unit's
  // post-backward (rs_input_pending_bytes_); the backward's last reduction frees it in the final callback.
  const bool kept = autograd_grad_bytes_ != rb_ && grads_from_reduction() && plan_.parallelism.pp == 1 &&
                    unit != segs_.front().unit;
  if (kept)
    rs_input_pending_bytes_ += grad_bytes;
  else
    op.free_at_end.push_back({MemCategory::transient, grad_bytes});
  if (autograd_grad_bytes_ != rb_ && !freed_at_copy) op.free_at_end.push_back({MemCategory::transient, autograd_bytes});
  units_[std::size_t(unit)].grads_live = false;
}

// An MoE unit's collective `op` (over dp_shard, or the data-parallel ranks) carries its local routed
// experts' bytes too: they move out of it into a twin op on the efsdp group (pending_expert_op_, added
// by add_expert_part), or, when that group has one rank, nowhere. Returns the experts' bytes moved.
double Lowerer::split_experts(Op& op, const std::string& name) {
  pending_expert_op_.reset();
  const double per_param = op.kind == OpKind::all_gather ? pb_ : rb_;
  const double bytes = expert_gather_bytes_[std::size_t(op.unit)] / pb_ * per_param;
  if (bytes <= 0) return 0;
  op.comm_bytes -= bytes;
  if (efsdp_group_ < 0) return bytes;
  Op e = collective_op(names_ ? name + ".experts" : std::string(), op.kind, op.payload, op.unit, op.micro_batch, bytes, efsdp_group_);
  pending_expert_op_ = std::move(e);
  return bytes;
}

// Adds the pending expert twin with `op`'s dependencies, ahead of `op` on the same stream; `op` then
// waits for it, so whatever waits for `op` has the experts too.
void Lowerer::add_expert_part(Op& op) {
  if (!pending_expert_op_) return;
  pending_expert_op_->deps = op.deps;
  op.deps.push_back(add_op(std::move(*pending_expert_op_)));
  pending_expert_op_.reset();
}

double Lowerer::op_comm_bytes_of(int op) const { return prog_.roles[std::size_t(role_)].ops[std::size_t(op)].comm_bytes; }

// Gradient reduction of a unit after its backward: reduce-scatter in the shard group (FSDP, HSDP,
// ZeRO-1: dp_shard, or dp_shard x cp when cp > 1, whose ranks hold the same parameters and see other
// tokens), then all-reduce of the shard across replicas (HSDP); DDP all-reduces the whole gradient over
// every data-parallel and cp rank.
void Lowerer::reduce(int unit, int mb, int after_op) {
  if (plan_.lora) return;  // a frozen base has no gradients: the adapters' are reduced once (lower_lora.cpp)
  const DataPlacement& place = prog_.units[std::size_t(unit)].placement;
  const double grad_bytes = params_[std::size_t(unit)] * rb_;
  UnitState& us = units_[std::size_t(unit)];
  const bool cp = plan_.parallelism.cp > 1;
  if (!is_sharded(place.grads)) {
    const std::string name = op_name(FMT_COMPILE("ar.u{}.mb{}"), unit, mb);
    Op ar = collective_op(name, OpKind::all_reduce, Payload::grads, unit, mb, grad_bytes, cp ? dp_cp_group_ : all_group_);
    split_experts(ar, name);
    ar.deps.push_back(after_op);
    add_expert_part(ar);
    ar.completes_reduction = true;
    us.reduced_op = add_op(std::move(ar));
    reduce_ops_.push_back(us.reduced_op);
    return;
  }
  const std::string name = op_name(FMT_COMPILE("rs.u{}.mb{}"), unit, mb);
  Op op = collective_op(name, OpKind::reduce_scatter, Payload::grads, unit, mb, grad_bytes, shard_group_);
  const double expert_shard_bytes = split_experts(op, name) / std::max(1, expert_fsdp_ranks(plan_.parallelism));
  op.deps.push_back(after_op);
  if (is_sharded(place.params)) reduce_scatter_memory(op, unit, mb, grad_bytes);
  // The experts' twin goes first on the stream: the gradients are copied into the reduce-scatter input as
  // it starts, and a later backward frees that input (rs_input_pending_bytes_) with no wait on `op`.
  if (pending_expert_op_) pending_expert_op_->alloc_at_start = std::exchange(op.alloc_at_start, {});
  add_expert_part(op);
  const bool across_replicas = place.grads == Placement::sharded_replicated;
  op.completes_reduction = !across_replicas;
  us.reduced_op = add_op(std::move(op));
  reduce_ops_.push_back(us.reduced_op);
  if (is_sharded(place.params)) {
    rs_to_wait_ = last_rs_;
    last_rs_ = us.reduced_op;
  }
  if (across_replicas) {
    const double shard_bytes = op_comm_bytes_of(us.reduced_op) / shard_group_ranks(plan_.parallelism) + expert_shard_bytes;
    Op ar = collective_op(op_name(FMT_COMPILE("ar.u{}.mb{}"), unit, mb), OpKind::all_reduce, Payload::grad_shard, unit, mb,
                          shard_bytes, replicate_group_);
    ar.completes_reduction = true;
    ar.deps.push_back(us.reduced_op);
    us.reduced_op = add_op(std::move(ar));
    reduce_ops_.push_back(us.reduced_op);
  }
}

}  // namespace fsdpx::lowering
