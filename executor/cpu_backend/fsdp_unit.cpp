// executor/cpu_backend/fsdp_unit.cpp — buffers and collectives of one FSDP unit (see fsdp_unit.h).
#include "executor/cpu_backend/fsdp_unit.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "executor/cpu/fp16.h"

namespace fsdpx {

namespace {
constexpr double kF32 = 4.0;  // bytes per fp32 element
}

FsdpUnit::FsdpUnit(FlatUnitLayout layout, int shard_index, bool replicated, MemoryTracker* mem)
    : flat_(layout), life_("FsdpUnit", std::move(layout), replicated, kF32, mem), mem_(mem) {
  allocate_state(flat().shard_numel);
  state_.shard_offset = std::int64_t(shard_index) * flat().shard_numel;
  if (replicated) {  // DDP / ZeRO-1: unsharded parameters and gradients live for the whole run
    full_params_.assign(std::size_t(flat().padded_numel), 0.0f);
    full_grads_.assign(std::size_t(flat().padded_numel), 0.0f);
  }
}

FsdpUnit::FsdpUnit(FlatUnitLayout layout, ExpertShards parts, MemoryTracker* mem)
    : flat_(expert_state_view(layout, parts)), parts_{parts},
      life_("FsdpUnit", expert_dense_view(layout, parts), false, kF32, mem), mem_(mem) {
  allocate_state(parts.state_numel());
  state_.shard_offset = -1;  // two parts: no single offset (the trainer maps each element: session/expert_state.h)
}

void FsdpUnit::allocate_state(std::int64_t shard_numel) {
  const auto shard = std::size_t(shard_numel);
  state_.unit_numel = flat_.numel;
  state_.params.assign(shard, 0.0f);
  state_.exp_avg.assign(shard, 0.0f);
  state_.exp_avg_sq.assign(shard, 0.0f);
  grad_acc_.assign(shard, 0.0f);
  mem_->alloc(MemCategory::params, double(shard) * kF32);
  mem_->alloc(MemCategory::optimizer, 2.0 * double(shard) * kF32);
  mem_->alloc(MemCategory::grads, double(shard) * kF32);
}

void FsdpUnit::gather_experts(Communicator& efsdp) {
  const ExpertShards& p = parts_.at(0);
  FSDP_CHECK(efsdp.size() == p.expert_ranks && experts_gathered_.empty(), "FsdpUnit: the experts' all-gather");
  experts_gathered_.assign(std::size_t(p.expert_shard * p.expert_ranks), 0.0f);
  efsdp.all_gather(state_.params.data() + p.dense_shard, experts_gathered_.data(), p.expert_shard);
}

void FsdpUnit::gather_split(Communicator& comm) {
  const ExpertShards& p = parts_.front();
  life_.gather(comm.size());
  full_params_.assign(std::size_t(flat_.numel), 0.0f);
  mem_->alloc(MemCategory::transient, double(p.expert.size()) * kF32);
  std::vector<float> dense(std::size_t(p.dense_shard * p.dense_ranks));
  comm.all_gather(state_.params.data(), dense.data(), p.dense_shard);
  unpack_part(p.dense, dense.data(), full_params_.data());
  if (p.expert_ranks == 1) experts_gathered_.assign(state_.params.begin() + p.dense_shard, state_.params.end());
  FSDP_CHECK(p.expert.empty() || !experts_gathered_.empty(), "FsdpUnit: the dense all-gather before the experts'");
  unpack_part(p.expert, experts_gathered_.data(), full_params_.data());
  std::vector<float>().swap(experts_gathered_);
  if (fp16_) cpu::round_to_fp16(full_params_.data(), flat_.numel);
}

void FsdpUnit::gather(Communicator& comm) {
  if (!parts_.empty()) return gather_split(comm);
  if (life_.gather(comm.size())) full_params_.assign(std::size_t(flat().padded_numel), 0.0f);
  comm.all_gather(state_.params.data(), full_params_.data(), flat().shard_numel);
  if (fp16_) cpu::round_to_fp16(full_params_.data(), flat().padded_numel);
}

void FsdpUnit::release_params(int keep_ranks, int keep_index) {
  if (life_.replicated()) return;
  FSDP_CHECK(parts_.empty() || keep_ranks <= 1, "FsdpUnit: no kept copy with expert parallelism");
  if (!parts_.empty() && life_.params_live()) mem_->free(MemCategory::transient, double(parts_[0].expert.size()) * kF32);
  if (const std::int64_t n = life_.release(keep_ranks, keep_index))
    kept_.assign(full_params_.begin() + keep_index * n, full_params_.begin() + (keep_index + 1) * n);
  std::vector<float>().swap(full_params_);
}

void FsdpUnit::gather_kept(Communicator& reshard) {
  FSDP_CHECK(parts_.empty(), "FsdpUnit: no kept copy with expert parallelism");
  const std::int64_t n = life_.gather_kept(reshard.size());
  full_params_.assign(std::size_t(flat().padded_numel), 0.0f);
  reshard.all_gather(kept_.data(), full_params_.data(), n);
  std::vector<float>().swap(kept_);  // the kept values are the gathered (fp16-rounded) ones already
}

const float* FsdpUnit::module_params(int k) const {
  life_.check_params();
  return full_params_.data() + flat().module_offsets[std::size_t(k)];
}

void FsdpUnit::copy_master_to_replica() {
  FSDP_CHECK(parts_.empty(), "FsdpUnit: no replicated master with expert parallelism");
  life_.check_master_whole();
  std::copy(state_.params.begin(), state_.params.end(), full_params_.begin());
  if (fp16_) cpu::round_to_fp16(full_params_.data(), flat().padded_numel);
}

float* FsdpUnit::module_grads(int k) {
  if (life_.touch_grads()) {
    full_grads_.assign(std::size_t(flat().padded_numel), 0.0f);
    if (!parts_.empty()) mem_->alloc(MemCategory::transient, double(parts_[0].expert.size()) * kF32);
  }
  return full_grads_.data() + flat().module_offsets[std::size_t(k)];
}

void FsdpUnit::done_with_full_grads() {
  if (!parts_.empty()) mem_->free(MemCategory::transient, double(parts_[0].expert.size()) * kF32);
  if (life_.end_grads()) std::vector<float>().swap(full_grads_);
  else std::fill(full_grads_.begin(), full_grads_.end(), 0.0f);
}

void FsdpUnit::reduce_scatter_experts(Communicator& efsdp) {
  const ExpertShards& p = parts_.at(0);
  FSDP_CHECK(life_.grads_live() && efsdp.size() == p.expert_ranks && experts_reduced_.empty(),
             "FsdpUnit: the experts' reduce-scatter");
  if (fp16_) cpu::round_to_fp16(full_grads_.data(), flat_.numel);
  std::vector<float> packed(std::size_t(p.expert_shard * p.expert_ranks));
  pack_part(p.expert, full_grads_.data(), packed.data(), std::int64_t(packed.size()));
  experts_reduced_.assign(std::size_t(p.expert_shard), 0.0f);
  efsdp.reduce_scatter(packed.data(), experts_reduced_.data(), p.expert_shard);
}

// The dense part over dp_shard; the experts' reduced shard joins it (reduced by their twin op, or, with
// a one-rank efsdp group, this rank's own: the ep group's tokens all reached its experts).
void FsdpUnit::reduce_scatter_split(Communicator& comm) {
  const ExpertShards& p = parts_.front();
  life_.check_reduce_scatter(comm.size());
  if (fp16_) cpu::round_to_fp16(full_grads_.data(), flat_.numel);
  std::vector<float> packed(std::size_t(p.dense_shard * p.dense_ranks));
  pack_part(p.dense, full_grads_.data(), packed.data(), std::int64_t(packed.size()));
  reduced_.assign(std::size_t(p.dense_shard), 0.0f);
  mem_->alloc(MemCategory::transient, double(p.state_numel()) * kF32);
  comm.reduce_scatter(packed.data(), reduced_.data(), p.dense_shard);
  if (p.expert_ranks == 1) {
    experts_reduced_.assign(std::size_t(p.expert_shard), 0.0f);
    pack_part(p.expert, full_grads_.data(), experts_reduced_.data(), p.expert_shard);
  }
  FSDP_CHECK(std::int64_t(experts_reduced_.size()) == p.expert_shard, "FsdpUnit: the dense reduce-scatter before the experts'");
  reduced_.insert(reduced_.end(), experts_reduced_.begin(), experts_reduced_.end());
  std::vector<float>().swap(experts_reduced_);
  done_with_full_grads();
}

void FsdpUnit::reduce_scatter(Communicator& comm) {
  if (!parts_.empty()) return reduce_scatter_split(comm);
  life_.check_reduce_scatter(comm.size());
  reduced_.assign(std::size_t(flat().shard_numel), 0.0f);
  mem_->alloc(MemCategory::transient, double(flat().shard_numel) * kF32);
  if (fp16_) cpu::round_to_fp16(full_grads_.data(), flat().padded_numel);
  comm.reduce_scatter(full_grads_.data(), reduced_.data(), flat().shard_numel);
  done_with_full_grads();
}

void FsdpUnit::all_reduce_full(Communicator& comm) {
  FSDP_CHECK(parts_.empty(), "FsdpUnit: no DDP with expert parallelism");
  life_.check_all_reduce_full();
  if (fp16_) cpu::round_to_fp16(full_grads_.data(), flat().padded_numel);
  comm.all_reduce(full_grads_.data(), flat().padded_numel);
  reduced_ = full_grads_;
  mem_->alloc(MemCategory::transient, double(flat().shard_numel) * kF32);
  done_with_full_grads();
}

void FsdpUnit::all_reduce_reduced(Communicator& comm) {
  FSDP_CHECK(parts_.empty(), "FsdpUnit: no replicas with expert parallelism");
  FSDP_CHECK(!reduced_.empty(), "FsdpUnit: all-reduce across replicas before the reduce-scatter");
  comm.all_reduce(reduced_.data(), flat().shard_numel);
}

bool FsdpUnit::finish_reduction() {
  FSDP_CHECK(reduced_.size() == grad_acc_.size(), "FsdpUnit: nothing reduced");
  bool finite = true;
  for (std::size_t i = 0; i < reduced_.size(); ++i) {
    finite = finite && std::isfinite(reduced_[i]);
    grad_acc_[i] += reduced_[i];
  }
  std::vector<float>().swap(reduced_);
  mem_->free(MemCategory::transient, double(flat().shard_numel) * kF32);
  return finite;
}

}  // namespace fsdpx
