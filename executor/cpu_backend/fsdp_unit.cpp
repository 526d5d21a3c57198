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
    : life_("FsdpUnit", std::move(layout), replicated, kF32, mem), mem_(mem) {
  const auto shard = std::size_t(flat().shard_numel);
  state_.unit_numel = flat().numel;
  state_.shard_offset = std::int64_t(shard_index) * flat().shard_numel;
  state_.params.assign(shard, 0.0f);
  state_.exp_avg.assign(shard, 0.0f);
  state_.exp_avg_sq.assign(shard, 0.0f);
  grad_acc_.assign(shard, 0.0f);
  mem_->alloc(MemCategory::params, double(shard) * kF32);
  mem_->alloc(MemCategory::optimizer, 2.0 * double(shard) * kF32);
  mem_->alloc(MemCategory::grads, double(shard) * kF32);
  if (replicated) {  // DDP / ZeRO-1: unsharded parameters and gradients live for the whole run
    full_params_.assign(std::size_t(flat().padded_numel), 0.0f);
    full_grads_.assign(std::size_t(flat().padded_numel), 0.0f);
  }
}

void FsdpUnit::gather(Communicator& comm) {
  if (life_.gather(comm.size())) full_params_.assign(std::size_t(flat().padded_numel), 0.0f);
  comm.all_gather(state_.params.data(), full_params_.data(), flat().shard_numel);
  if (fp16_) cpu::round_to_fp16(full_params_.data(), flat().padded_numel);
}

void FsdpUnit::release_params(int keep_ranks, int keep_index) {
  if (life_.replicated()) return;
  if (const std::int64_t n = life_.release(keep_ranks, keep_index))
    kept_.assign(full_params_.begin() + keep_index * n, full_params_.begin() + (keep_index + 1) * n);
  std::vector<float>().swap(full_params_);
}

void FsdpUnit::gather_kept(Communicator& reshard) {
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
  life_.check_master_whole();
  std::copy(state_.params.begin(), state_.params.end(), full_params_.begin());
  if (fp16_) cpu::round_to_fp16(full_params_.data(), flat().padded_numel);
}

float* FsdpUnit::module_grads(int k) {
  if (life_.touch_grads()) full_grads_.assign(std::size_t(flat().padded_numel), 0.0f);
  return full_grads_.data() + flat().module_offsets[std::size_t(k)];
}

void FsdpUnit::done_with_full_grads() {
  if (life_.end_grads()) std::vector<float>().swap(full_grads_);
  else std::fill(full_grads_.begin(), full_grads_.end(), 0.0f);
}

void FsdpUnit::reduce_scatter(Communicator& comm) {
  life_.check_reduce_scatter(comm.size());
  reduced_.assign(std::size_t(flat().shard_numel), 0.0f);
  mem_->alloc(MemCategory::transient, double(flat().shard_numel) * kF32);
  if (fp16_) cpu::round_to_fp16(full_grads_.data(), flat().padded_numel);
  comm.reduce_scatter(full_grads_.data(), reduced_.data(), flat().shard_numel);
  done_with_full_grads();
}

void FsdpUnit::all_reduce_full(Communicator& comm) {
  life_.check_all_reduce_full();
  if (fp16_) cpu::round_to_fp16(full_grads_.data(), flat().padded_numel);
  comm.all_reduce(full_grads_.data(), flat().padded_numel);
  reduced_ = full_grads_;
  mem_->alloc(MemCategory::transient, double(flat().shard_numel) * kF32);
  done_with_full_grads();
}

void FsdpUnit::all_reduce_reduced(Communicator& comm) {
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
