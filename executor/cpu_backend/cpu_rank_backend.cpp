// executor/cpu_backend/cpu_rank_backend.cpp — the CPU reference backend (see cpu_rank_backend.h).
#include "executor/cpu_backend/cpu_rank_backend.h"

#include "core/errors.h"
#include "executor/model/init.h"
#include "executor/runtime/module_pointers.h"

namespace fsdpx {

CpuRankBackend::CpuRankBackend(const RuntimeProgram& rp, std::unique_ptr<Communicator> world,
                               OpProfiler* kernel_profiler)
    : rp_(rp), world_(std::move(world)),
      model_(rp.plan.model, rp.plan.training.micro_batch, rp.plan.training.seq,
             ModelOptions{rp.plan.recompute, kernel_profiler}) {
  const RankShard at = rank_shard(rp, world_->rank());
  shard_index_ = at.shard_index;
  replica_index_ = at.replica_index;
  for (std::size_t u = 0; u < rp.flats.size(); ++u)
    units_.emplace_back(rp.flats[u], at.unit_shard, replicated_params(rp, int(u)), &mem_);
  segment_bytes_ = cpu_segment_buffer_bytes(rp.plan, rp.layout, rp.program.segments);
}

void CpuRankBackend::connect() {
  shard_comm_ = world_->split(replica_index_, shard_index_);
  replica_comm_ = world_->split(shard_index_, replica_index_);
}

void CpuRankBackend::init_params(std::uint64_t seed) {
  for (FsdpUnit& u : units_) {
    UnitShardState& s = u.state();
    init_unit_range(rp_.layout, u.flat(), seed, s.shard_offset, s.shard_offset + u.flat().shard_numel, s.params.data());
    std::fill(s.exp_avg.begin(), s.exp_avg.end(), 0.0f);
    std::fill(s.exp_avg_sq.begin(), s.exp_avg_sq.end(), 0.0f);
  }
}

void CpuRankBackend::copy_masters_to_replicas() {
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (master_is_replica(rp_, int(u))) units_[u].copy_master_to_replica();
}

Communicator& CpuRankBackend::comm(DpGroup group) {
  return group_communicator(group, *world_, *shard_comm_, *replica_comm_);
}

void CpuRankBackend::gather(int unit, DpGroup group, bool drop_kept) {
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

void CpuRankBackend::reduce_scatter(int unit, DpGroup group) { units_[std::size_t(unit)].reduce_scatter(comm(group)); }

void CpuRankBackend::all_reduce_reduced(int unit, DpGroup group) {
  units_[std::size_t(unit)].all_reduce_reduced(comm(group));
}

void CpuRankBackend::all_reduce_full(int unit, DpGroup group) { units_[std::size_t(unit)].all_reduce_full(comm(group)); }

void CpuRankBackend::finish_reduction(int unit) {
  if (!units_[std::size_t(unit)].finish_reduction() && first_non_finite_unit_ < 0) first_non_finite_unit_ = unit;
}

double CpuRankBackend::grad_sq_sum() {
  double sum = 0;
  for (const FsdpUnit& u : units_)
    for (float g : u.grad_shard()) sum += double(g) * double(g);
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
