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

FsdpUnit::FsdpUnit(FlatUnitLayout flat, int shard_index, bool replicated, MemoryTracker* mem)
    : flat_(std::move(flat)), replicated_(replicated), mem_(mem) {
  const auto shard = std::size_t(flat_.shard_numel);
  state_.unit_numel = flat_.numel;
  state_.shard_offset = std::int64_t(shard_index) * flat_.shard_numel;
  state_.params.assign(shard, 0.0f);
  state_.exp_avg.assign(shard, 0.0f);
  state_.exp_avg_sq.assign(shard, 0.0f);
  grad_acc_.assign(shard, 0.0f);
  mem_->alloc(MemCategory::params, double(shard) * kF32);
  mem_->alloc(MemCategory::optimizer, 2.0 * double(shard) * kF32);
  mem_->alloc(MemCategory::grads, double(shard) * kF32);
  if (replicated_) {  // DDP / ZeRO-1: unsharded parameters and gradients live for the whole run
    full_params_.assign(std::size_t(flat_.padded_numel), 0.0f);
    full_grads_.assign(std::size_t(flat_.padded_numel), 0.0f);
    mem_->alloc(MemCategory::params, double(flat_.padded_numel) * kF32);
    mem_->alloc(MemCategory::grads, double(flat_.padded_numel) * kF32);
    params_live_ = grads_live_ = true;
  }
}

void FsdpUnit::gather(Communicator& comm) {
  FSDP_CHECK(comm.size() * flat_.shard_numel == flat_.padded_numel, "FsdpUnit: all-gather group size != shards");
  if (!replicated_) {
    FSDP_CHECK(!params_live_, "FsdpUnit: all-gather of a unit that is already unsharded");
    full_params_.assign(std::size_t(flat_.padded_numel), 0.0f);
    mem_->alloc(MemCategory::transient, double(flat_.padded_numel) * kF32);
  }
  comm.all_gather(state_.params.data(), full_params_.data(), flat_.shard_numel);
  if (fp16_) cpu::round_to_fp16(full_params_.data(), flat_.padded_numel);
  params_live_ = true;
}

void FsdpUnit::release_params(int keep_ranks, int keep_index) {
  if (replicated_) return;
  FSDP_CHECK(params_live_, "FsdpUnit: release of a unit that is not unsharded");
  FSDP_CHECK(kept_.empty(), "FsdpUnit: a kept copy from an earlier release");
  if (keep_ranks > 1) {
    FSDP_CHECK(flat_.padded_numel % keep_ranks == 0 && keep_index >= 0 && keep_index < keep_ranks,
               "FsdpUnit: a kept copy that does not split the unit");
    const std::int64_t n = flat_.padded_numel / keep_ranks;
    kept_.assign(full_params_.begin() + keep_index * n, full_params_.begin() + (keep_index + 1) * n);
    mem_->alloc(MemCategory::transient, kept_bytes());
  }
  std::vector<float>().swap(full_params_);
  mem_->free(MemCategory::transient, double(flat_.padded_numel) * kF32);
  params_live_ = false;
}

void FsdpUnit::gather_kept(Communicator& reshard) {
  FSDP_CHECK(!replicated_ && !params_live_, "FsdpUnit: all-gather of a unit that is already unsharded");
  FSDP_CHECK(std::int64_t(kept_.size()) * reshard.size() == flat_.padded_numel,
             "FsdpUnit: reshard group size != the kept copy's share");
  full_params_.assign(std::size_t(flat_.padded_numel), 0.0f);
  mem_->alloc(MemCategory::transient, double(flat_.padded_numel) * kF32);
  reshard.all_gather(kept_.data(), full_params_.data(), std::int64_t(kept_.size()));
  mem_->free(MemCategory::transient, kept_bytes());
  std::vector<float>().swap(kept_);
  params_live_ = true;  // the kept values are the gathered (fp16-rounded) ones already
}

const float* FsdpUnit::module_params(int k) const {
  FSDP_CHECK(params_live_, "FsdpUnit: parameters used while sharded");
  return full_params_.data() + flat_.module_offsets[std::size_t(k)];
}

void FsdpUnit::copy_master_to_replica() {
  FSDP_CHECK(replicated_ && flat_.shard_numel == flat_.padded_numel, "FsdpUnit: only DDP keeps the master whole");
  std::copy(state_.params.begin(), state_.params.end(), full_params_.begin());
  if (fp16_) cpu::round_to_fp16(full_params_.data(), flat_.padded_numel);
}

float* FsdpUnit::module_grads(int k) {
  if (!grads_live_) {
    full_grads_.assign(std::size_t(flat_.padded_numel), 0.0f);
    mem_->alloc(MemCategory::transient, double(flat_.padded_numel) * kF32);
    grads_live_ = true;
  }
  return full_grads_.data() + flat_.module_offsets[std::size_t(k)];
}

void FsdpUnit::done_with_full_grads() {
  if (replicated_) {
    std::fill(full_grads_.begin(), full_grads_.end(), 0.0f);
    return;
  }
  std::vector<float>().swap(full_grads_);
  mem_->free(MemCategory::transient, double(flat_.padded_numel) * kF32);
  grads_live_ = false;
}

void FsdpUnit::reduce_scatter(Communicator& comm) {
  FSDP_CHECK(grads_live_, "FsdpUnit: reduce-scatter without gradients");
  FSDP_CHECK(comm.size() * flat_.shard_numel == flat_.padded_numel, "FsdpUnit: reduce-scatter group size != shards");
  reduced_.assign(std::size_t(flat_.shard_numel), 0.0f);
  mem_->alloc(MemCategory::transient, double(flat_.shard_numel) * kF32);
  if (fp16_) cpu::round_to_fp16(full_grads_.data(), flat_.padded_numel);
  comm.reduce_scatter(full_grads_.data(), reduced_.data(), flat_.shard_numel);
  done_with_full_grads();
}

void FsdpUnit::all_reduce_full(Communicator& comm) {
  FSDP_CHECK(grads_live_ && flat_.shard_numel == flat_.padded_numel, "FsdpUnit: DDP all-reduce needs whole gradients");
  if (fp16_) cpu::round_to_fp16(full_grads_.data(), flat_.padded_numel);
  comm.all_reduce(full_grads_.data(), flat_.padded_numel);
  reduced_ = full_grads_;
  mem_->alloc(MemCategory::transient, double(flat_.shard_numel) * kF32);
  done_with_full_grads();
}

void FsdpUnit::all_reduce_reduced(Communicator& comm) {
  FSDP_CHECK(!reduced_.empty(), "FsdpUnit: all-reduce across replicas before the reduce-scatter");
  comm.all_reduce(reduced_.data(), flat_.shard_numel);
}

bool FsdpUnit::finish_reduction() {
  FSDP_CHECK(reduced_.size() == grad_acc_.size(), "FsdpUnit: nothing reduced");
  bool finite = true;
  for (std::size_t i = 0; i < reduced_.size(); ++i) {
    finite = finite && std::isfinite(reduced_[i]);
    grad_acc_[i] += reduced_[i];
  }
  std::vector<float>().swap(reduced_);
  mem_->free(MemCategory::transient, double(flat_.shard_numel) * kF32);
  return finite;
}

void FsdpUnit::zero_grad_shard() { std::fill(grad_acc_.begin(), grad_acc_.end(), 0.0f); }

}  // namespace fsdpx
