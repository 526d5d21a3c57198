// executor/cpu_backend/cpu_rank_backend.cpp — the CPU reference backend (see cpu_rank_backend.h).
#include "executor/cpu_backend/cpu_rank_backend.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/model/init.h"
#include "executor/runtime/module_pointers.h"
#include "program/group_members.h"

namespace fsdpx {

namespace {

ModelOptions model_options(const Plan& plan, OpProfiler* profiler, const ModelParallel& par, ModelComm* comm) {
  ModelOptions o;
  o.recompute = plan.recompute;
  o.profiler = profiler;
  o.parallel = par;
  o.comm = comm;
  return o;
}

// [begin, end) ranges of shard [first, first + count) of a unit (in shard coordinates) that hold
// tensors every tp rank holds whole.
std::vector<std::pair<std::int64_t, std::int64_t>> replicated_ranges(const ParamLayout& layout, const FlatUnitLayout& f,
                                                                     std::int64_t first, std::int64_t count) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::size_t k = 0; k < f.modules.size(); ++k)
    for (const TensorSlot& t : layout.modules[std::size_t(f.modules[k])].tensors) {
      if (!t.tp_replicated) continue;
      const std::int64_t begin = std::max(first, f.module_offsets[k] + t.offset);
      const std::int64_t end = std::min(first + count, f.module_offsets[k] + t.offset + t.numel());
      if (begin < end) out.emplace_back(begin - first, end - first);
    }
  return out;
}

}  // namespace

CpuRankBackend::CpuRankBackend(const RuntimeProgram& rp, std::unique_ptr<Communicator> world,
                               OpProfiler* kernel_profiler)
    : rp_(rp), world_(std::move(world)), par_(model_parallel(rp, world_->rank())),
      model_comm_(nullptr, nullptr, kernel_profiler),
      model_(rp.plan.model, rp.plan.training.micro_batch, rp.plan.training.seq,
             model_options(rp.plan, kernel_profiler, par_, &model_comm_)) {
  const RankShard at = rank_shard(rp, world_->rank());
  shard_index_ = at.shard_index;
  replica_index_ = at.replica_index;
  const int unit_shard = at.unit_shard;
  const ParamLayout& local = rp.tp_layouts[std::size_t(par_.tp_rank)];
  for (std::size_t u = 0; u < rp.flats.size(); ++u) {
    units_.emplace_back(rp.flats[u], unit_shard, replicated_params(rp, int(u)), &mem_);
    const FlatUnitLayout& f = rp.flats[u];
    replicated_ranges_.push_back(replicated_ranges(local, f, std::int64_t(unit_shard) * f.shard_numel, f.shard_numel));
  }
  segment_bytes_ = cpu_segment_buffer_bytes(rp.plan, local, rp.program.segments, par_);
}

// Every rank splits the same groups in the same order (split is collective over the world): each
// group instance is colored by its lowest rank, its members ordered as the program's group_members.
void CpuRankBackend::connect() {
  auto split = [&](GroupKind kind) {
    ProcessGroup g;
    g.kind = kind;
    std::vector<int> members;
    group_members(rp_.program.mesh, g, world_->rank(), members);
    const auto at = std::find(members.begin(), members.end(), world_->rank()) - members.begin();
    return world_->split(members.front(), int(at));
  };
  shard_comm_ = split(GroupKind::dp_shard);
  replica_comm_ = split(GroupKind::dp_replicate);
  if (par_.tp > 1) tp_comm_ = split(GroupKind::tp);
  if (par_.cp > 1) cp_comm_ = split(GroupKind::cp), replica_cp_comm_ = split(GroupKind::replicate_cp),
                   dp_cp_comm_ = split(GroupKind::dp_cp);
  if (par_.any()) dp_all_comm_ = split(GroupKind::dp_all);
  model_comm_.set_groups(tp_comm_.get(), cp_comm_.get());
}

void CpuRankBackend::init_params(std::uint64_t seed) {
  for (FsdpUnit& u : units_) {
    UnitShardState& s = u.state();
    init_unit_range(rp_.tp_layouts[std::size_t(par_.tp_rank)], u.flat(), seed, s.shard_offset,
                    s.shard_offset + u.flat().shard_numel, s.params.data());
    std::fill(s.exp_avg.begin(), s.exp_avg.end(), 0.0f);
    std::fill(s.exp_avg_sq.begin(), s.exp_avg_sq.end(), 0.0f);
  }
}

void CpuRankBackend::copy_masters_to_replicas() {
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (master_is_replica(rp_, int(u))) units_[u].copy_master_to_replica();
}

Communicator& CpuRankBackend::comm(MeshGroup group) {
  const GroupCommunicators<Communicator> groups{world_.get(),       shard_comm_.get(),      replica_comm_.get(),
                                                dp_all_comm_.get(), replica_cp_comm_.get(), dp_cp_comm_.get()};
  return group_communicator(group, groups);
}

void CpuRankBackend::gather(int unit, MeshGroup group, bool drop_kept) {
  FsdpUnit& u = units_[std::size_t(unit)];
  if (drop_kept) u.drop_kept_copy();
  u.gather(comm(group));
}

void CpuRankBackend::set_micro_batch(const std::int32_t* tokens, const std::int32_t* targets) {
  model_.set_batch(tokens, targets);
}

void CpuRankBackend::forward(int segment) {
  const Segment& seg = rp_.program.segments[std::size_t(segment)];
  const std::vector<const float*> p = live_module_params(units_, rp_.layout.num_modules());
  for (int m = seg.first_module; m < seg.first_module + seg.module_count; ++m) model_.forward_module(m, p);
  mem_.alloc(MemCategory::activations, segment_bytes_[std::size_t(segment)].saved);
  if (seg.first_module + seg.module_count - 1 == rp_.layout.head_index()) losses_.push_back(double(model_.loss()));
}

void CpuRankBackend::backward(int segment, int unit) {
  const Segment& seg = rp_.program.segments[std::size_t(segment)];
  const double working = segment_bytes_[std::size_t(segment)].working;
  mem_.alloc(MemCategory::transient, working);
  const std::vector<const float*> p = live_module_params(units_, rp_.layout.num_modules());
  FsdpUnit& u = units_[std::size_t(unit)];
  const std::vector<float*> g =
      unit_module_grads<float*>(u.flat(), rp_.layout.num_modules(), [&u](int k) { return u.module_grads(k); });
  for (int m = seg.first_module + seg.module_count - 1; m >= seg.first_module; --m) model_.backward_module(m, p, g);
  mem_.free(MemCategory::transient, working);
  mem_.free(MemCategory::activations, segment_bytes_[std::size_t(segment)].saved);
}

std::vector<double> CpuRankBackend::take_losses() {
  std::vector<double> out;
  out.swap(losses_);
  return out;
}

void CpuRankBackend::reduce_scatter(int unit, MeshGroup group) { units_[std::size_t(unit)].reduce_scatter(comm(group)); }

void CpuRankBackend::all_reduce_reduced(int unit, MeshGroup group) {
  units_[std::size_t(unit)].all_reduce_reduced(comm(group));
}

void CpuRankBackend::all_reduce_full(int unit, MeshGroup group) { units_[std::size_t(unit)].all_reduce_full(comm(group)); }

void CpuRankBackend::finish_reduction(int unit) {
  if (!units_[std::size_t(unit)].finish_reduction() && first_non_finite_unit_ < 0) first_non_finite_unit_ = unit;
}

double CpuRankBackend::grad_sq_sum() {
  double sum = 0;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    const std::vector<float>& g = units_[u].grad_shard();
    const auto& skip = replicated_ranges_[u];  // counted on tp rank 0 only
    std::size_t k = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      while (k < skip.size() && std::int64_t(i) >= skip[k].second) ++k;
      if (par_.tp_rank > 0 && k < skip.size() && std::int64_t(i) >= skip[k].first) continue;
      sum += double(g[i]) * double(g[i]);
    }
  }
  return sum;
}

void CpuRankBackend::adamw(const OptimizerSettings& o, const AdamWStep& s) {
  for (FsdpUnit& u : units_) {
    UnitShardState& st = u.state();
    adamw_update(o, s, st.params.data(), st.exp_avg.data(), st.exp_avg_sq.data(), u.grad_shard().data(),
                 std::int64_t(st.params.size()));
  }
}

void CpuRankBackend::zero_grad_shards() {
  for (FsdpUnit& u : units_) u.zero_grad_shard();
  first_non_finite_unit_ = -1;
}

}  // namespace fsdpx
