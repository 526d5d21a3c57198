// executor/runtime/unit_lifecycle.h — the buffer lifecycle of one FSDP unit on one rank (a member of the
// unit both backends run, model/fsdp_unit.h): when the
// unsharded parameters, the kept copy of a partial reshard (FSDP2's int reshard_after_forward) and the
// unsharded gradients are alive, the checks that guard each transition, and their bytes in the rank's
// MemoryTracker; the unit allocates, copies and communicates the buffers around these calls. Leaves out
// the reduced shard and the resident state (the unit counts them).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/errors.h"
#include "executor/runtime/memory_tracker.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {

class UnitLifecycle {
 public:
  // param_bytes: bytes per unsharded parameter element (4 on the CPU, sizeof(T) on the GPU); gradients
  // are fp32 on both. replicated (DDP / ZeRO-1): the unsharded buffers live all run.
  UnitLifecycle(std::string who, FlatUnitLayout flat, bool replicated, double param_bytes, MemoryTracker* mem)
      : who_(std::move(who)), flat_(std::move(flat)), replicated_(replicated), param_bytes_(param_bytes), mem_(mem) {
    if (!replicated_) return;
    mem_->alloc(MemCategory::params, padded() * param_bytes_);
    mem_->alloc(MemCategory::grads, padded() * kF32);
    params_live_ = grads_live_ = true;
  }

  const FlatUnitLayout& flat() const { return flat_; }
  bool replicated() const { return replicated_; }
  bool params_live() const { return params_live_; }
  bool grads_live() const { return grads_live_; }
  std::int64_t kept_numel() const { return kept_numel_; }
  double kept_bytes() const { return double(kept_numel_) * param_bytes_; }

  // All-gather over `group_size` ranks into the unsharded parameters: true when the caller must
  // allocate their buffer first (not replicated).
  bool gather(int group_size) {
    FSDP_CHECK(group_size * flat_.shard_numel == flat_.padded_numel, who_ + ": all-gather group size != shards");
    if (replicated_) return false;
    FSDP_CHECK(!params_live_, who_ + ": all-gather of a unit that is already unsharded");
    params_live_ = true;
    mem_->alloc(MemCategory::transient, padded() * param_bytes_);
    return true;
  }
  // Frees the unsharded parameters (the caller skips this when replicated), keeping slice keep_index of keep_ranks > 1:
  // returns the kept slice's element count (0: nothing kept), which the caller copies before it frees.
  std::int64_t release(int keep_ranks, int keep_index) {
    FSDP_CHECK(params_live_, who_ + ": release of a unit that is not unsharded");
    FSDP_CHECK(kept_numel_ == 0, who_ + ": a kept copy from an earlier release");
    if (keep_ranks > 1) {
      FSDP_CHECK(flat_.padded_numel % keep_ranks == 0 && keep_index >= 0 && keep_index < keep_ranks,
                 who_ + ": a kept copy that does not split the unit");
      kept_numel_ = flat_.padded_numel / keep_ranks;
      mem_->alloc(MemCategory::transient, kept_bytes());
    }
    mem_->free(MemCategory::transient, padded() * param_bytes_);
    params_live_ = false;
    return kept_numel_;
  }
  // Backward's all-gather of the kept copy over the reshard group: the caller allocates the unsharded
  // buffer, gathers, then frees the kept copy (whose element count this returns).
  std::int64_t gather_kept(int group_size) {
    FSDP_CHECK(!replicated_ && !params_live_ && kept_numel_ > 0, who_ + ": all-gather of no kept copy");
    FSDP_CHECK(kept_numel_ * group_size == flat_.padded_numel, who_ + ": reshard group size != the kept share");
    mem_->alloc(MemCategory::transient, padded() * param_bytes_);
    mem_->free(MemCategory::transient, kept_bytes());
    const std::int64_t n = std::exchange(kept_numel_, 0);
    params_live_ = true;
    return n;
  }
  void check_params() const { FSDP_CHECK(params_live_, who_ + ": parameters used while sharded"); }

  // The unsharded gradients: true when they come alive now (the caller allocates and zeroes them).
  bool touch_grads() {
    if (grads_live_) return false;
    mem_->alloc(MemCategory::transient, padded() * kF32);
    return grads_live_ = true;
  }
  // After their reduction: true when the caller frees them, false when it zeroes them (replicated).
  bool end_grads() {
    if (replicated_) return false;
    mem_->free(MemCategory::transient, padded() * kF32);
    grads_live_ = false;
    return true;
  }
  void check_reduce_scatter(int group_size) const {
    FSDP_CHECK(grads_live_, who_ + ": reduce-scatter without gradients");
    FSDP_CHECK(group_size * flat_.shard_numel == flat_.padded_numel, who_ + ": reduce-scatter group size != shards");
  }
  void check_all_reduce_full() const {
    FSDP_CHECK(grads_live_ && flat_.shard_numel == flat_.padded_numel, who_ + ": DDP all-reduce needs whole gradients");
  }
  void check_master_whole() const {
    FSDP_CHECK(replicated_ && flat_.shard_numel == flat_.padded_numel, who_ + ": only DDP keeps the master whole");
  }

 private:
  static constexpr double kF32 = 4.0;
  double padded() const { return double(flat_.padded_numel); }

  std::string who_;
  FlatUnitLayout flat_;
  bool replicated_;
  double param_bytes_;
  MemoryTracker* mem_;
  bool params_live_ = false, grads_live_ = false;
  std::int64_t kept_numel_ = 0;  // the kept copy's elements, 0 when none
};

}  // namespace fsdpx
