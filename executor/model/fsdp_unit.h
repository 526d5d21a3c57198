// executor/model/fsdp_unit.h — one FSDP unit on one rank, written once over a device policy (the CPU's
// cpu_backend/host_unit_device.h, CUDA's cuda_backend/cuda_unit.h): its resident fp32 master shard, Adam
// moments and sharded gradient accumulator (plus, where the device computes in 16 bits, a copy of the
// shard in the parameter dtype, the all-gather input, which AdamW writes); the unsharded parameters from
// all-gather to release, the unsharded fp32 gradients from the first backward to their reduction, and the
// reduced shard on its way to the accumulator. The flat layout is the modules back to back, padded to a
// multiple of the shard count (runtime/param_layout.h, as FSDP's FlatParameter, Zhao et al. 2023, arXiv
// 2304.11277 §3.2.1). DDP and ZeRO-1 keep the unsharded buffers all run ("replicated"). Gradients reduce
// in fp32 or, where the device allows it, in a bf16 copy (FSDP2's MixedPrecisionPolicy.reduce_dtype),
// and accumulate in fp32. Under expert parallelism the unit is in two parts (model/expert_shards.h):
// the dense part over dp_shard, the routed experts over efsdp, gathered and reduced by their twin ops;
// the state is the dense shard then the expert shard. The policy allocates, copies, casts and
// communicates and runs the AdamW kernel; its calls run in order (CUDA: on the backend's current op's
// stream). Leaves out rate limiting (the step program's dependencies bound the live units).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/errors.h"
#include "executor/model/expert_shards.h"
#include "executor/runtime/adamw.h"
#include "executor/runtime/grad_norm_ranges.h"
#include "executor/runtime/memory_tracker.h"
#include "executor/runtime/param_layout.h"
#include "executor/runtime/train_state.h"
#include "executor/runtime/unit_lifecycle.h"

namespace fsdpx {

template <class Device>
class FsdpUnitT {
  using Param = typename Device::Param;  // the unsharded parameters' element type
  using Comm = typename Device::Comm;
  using Bf16 = typename Device::Bf16;    // the words of a bf16 gradient reduction
  template <class E>
  using Array = typename Device::template Array<E>;

 public:
  // `shard_index` of padded_numel / shard_numel shards; `replicated`: DDP / ZeRO-1; `reduce`: fp32, or
  // bf16 where Device::kReduceBf16. `mem` counts the unit's bytes by category.
  FsdpUnitT(FlatUnitLayout flat, int shard_index, bool replicated, DType reduce, MemoryTracker* mem, Device dev)
      : flat_(flat), life_(Device::kName, std::move(flat), replicated, dev.param_bytes, mem), mem_(mem),
        dev_(std::move(dev)), reduce_bf16_(check_reduce(reduce)) {
    allocate_state(flat_.shard_numel);
    shard_offset_ = std::int64_t(shard_index) * flat_.shard_numel;
    if (!replicated) return;  // DDP / ZeRO-1: unsharded parameters and gradients live for the whole run
    full_params_ = dev_.template alloc<Param>(flat_.padded_numel);
    full_grads_ = dev_.template alloc<float>(flat_.padded_numel);
    dev_.zero(full_grads_.data(), flat_.padded_numel);
  }
  // Expert parallelism: `flat` (the rank's local experts) in two parts; the state parts.state_numel() long.
  FsdpUnitT(FlatUnitLayout flat, ExpertShards parts, DType reduce, MemoryTracker* mem, Device dev)
      : flat_(expert_state_view(flat, parts)), parts_{parts}, dense_runs_(part_runs(parts.dense)),
        expert_runs_(part_runs(parts.expert)),
        life_(Device::kName, expert_dense_view(std::move(flat), parts), false, dev.param_bytes, mem), mem_(mem),
        dev_(std::move(dev)), reduce_bf16_(check_reduce(reduce)) {
    allocate_state(parts.state_numel());
    shard_offset_ = -1;  // two parts: no single offset (the trainer maps each element: session/expert_state.h)
  }
  FsdpUnitT(const FsdpUnitT&) = delete;
  FsdpUnitT& operator=(const FsdpUnitT&) = delete;

  // The unit's layout; shard_numel is the state's length (both parts under expert parallelism).
  const FlatUnitLayout& flat() const { return flat_; }
  const ExpertShards* expert_shards() const { return parts_.empty() ? nullptr : &parts_.front(); }
  // The state's ranges AdamW steps (model/optimizer_ranges.h: all but buffers; rank_fsdp_units.h sets them).
  void set_stepped(ShardRanges r) { stepped_ = std::move(r); }
  std::int64_t shard_offset() const { return shard_offset_; }
  // Host state in and out (the device's copies are done when these return); the parameter copy follows.
  void upload(const UnitShardState& s) {
    const std::int64_t n = flat_.shard_numel;
    const auto fits = [n](const std::vector<float>& v) { return std::int64_t(v.size()) == n || v.empty(); };
    FSDP_CHECK(std::int64_t(s.params.size()) == n && fits(s.exp_avg) && fits(s.exp_avg_sq),
               std::string(Device::kName) + ": state size");
    dev_.upload(s, master(), exp_avg(), exp_avg_sq(), param_copy(), n);
  }
  UnitShardState download() const {
    UnitShardState s;
    s.unit_numel = flat_.numel;
    s.shard_offset = shard_offset_;
    dev_.download(master_.data(), exp_avg_.data(), exp_avg_sq_.data(), flat_.shard_numel, s);
    return s;
  }
  float* master() { return master_.data(); }  // [shard_numel] each
  float* exp_avg() { return exp_avg_.data(); }
  float* exp_avg_sq() { return exp_avg_sq_.data(); }
  Param* param_copy() { return Device::kParamCopy ? param_copy_.data() : nullptr; }  // AdamW writes it
  float* grad_shard() { return grad_acc_.data(); }  // fp16 loss scaling unscales it in place
  const float* grad_shard() const { return grad_acc_.data(); }
  // AdamW on the stepped ranges (buffers stay as they are), the parameter copy written alongside.
  void adamw(const OptimizerSettings& o, const AdamWStep& s) {
    Param* copy = param_copy();
    for (const auto& [b, e] : stepped_)
      dev_.adamw(o, s, master() + b, exp_avg() + b, exp_avg_sq() + b, grad_shard() + b, copy ? copy + b : nullptr,
                 e - b);
  }

  // Parameters: the shard all-gathered into the unsharded buffer (allocated unless replicated).
  void gather(Comm& comm) {
    if (!parts_.empty()) return gather_split(comm);
    if (life_.gather(comm.size())) full_params_ = dev_.template alloc<Param>(flat_.padded_numel);
    dev_.all_gather(comm, param_source(), full_params_.data(), flat_.shard_numel);
    round_gathered();
  }
  // Expert parallelism: the experts' part over efsdp (the program's twin op, ahead of gather, which places
  // it; without an efsdp op, one rank, gather takes it from the state).
  void gather_experts(Comm& efsdp) {
    const ExpertShards& p = parts_.at(0);
    FSDP_CHECK(efsdp.size() == p.expert_ranks && !experts_gathered_live_, who() + ": the experts' all-gather");
    experts_gathered_ = dev_.template alloc<Param>(p.expert_shard * p.expert_ranks);
    experts_gathered_live_ = true;
    dev_.all_gather(efsdp, param_source() + p.dense_shard, experts_gathered_.data(), p.expert_shard);
  }
  // Frees the unsharded parameters. keep_ranks = g > 1 (FSDP2's int reshard_after_forward): slice
  // keep_index of g stays for backward (kept_bytes()), a shard of the reshard group's world as FSDP2's
  // post-forward mesh holds it.
  void release(int keep_ranks = 0, int keep_index = 0) {
    if (life_.replicated()) return;
    FSDP_CHECK(parts_.empty() || keep_ranks <= 1, who() + ": no kept copy with expert parallelism");
    if (!parts_.empty() && life_.params_live()) count_experts(dev_.param_bytes, false);
    if (const std::int64_t n = life_.release(keep_ranks, keep_index)) {
      kept_ = dev_.template alloc<Param>(n);
      dev_.copy(kept_.data(), full_params_.data() + keep_index * n, n);
      dev_.record(kept_ready_);
    }
    dev_.free(full_params_);
  }
  // Backward's all-gather from the kept copy over the reshard group (its g ranks, this rank at
  // keep_index), which it frees: FSDP2 unshards over the post-forward mesh. The kept values are the
  // gathered (fp16-rounded) ones already.
  void gather_kept(Comm& reshard) {
    FSDP_CHECK(parts_.empty(), who() + ": no kept copy with expert parallelism");
    const std::int64_t n = life_.gather_kept(reshard.size());
    full_params_ = dev_.template alloc<Param>(flat_.padded_numel);
    dev_.wait(kept_ready_);  // the program orders this after a compute op ahead of the release (prefetch)
    dev_.all_gather(reshard, kept_.data(), full_params_.data(), n);
    dev_.free(kept_);
  }
  double kept_bytes() const { return life_.kept_bytes(); }
  bool params_live() const { return life_.params_live(); }
  const Param* module_params(int k) const {  // module k of flat().modules inside the unsharded buffer
    life_.check_params();
    return full_params_.data() + flat_.module_offsets[std::size_t(k)];
  }
  // DDP: the unsharded parameters are the master copy.
  void copy_master_to_replica() {
    FSDP_CHECK(parts_.empty(), who() + ": no replicated master with expert parallelism");
    life_.check_master_whole();
    dev_.copy(full_params_.data(), param_source(), flat_.padded_numel);
    round_gathered();
  }

  // Gradients: the unsharded fp32 buffer (zeroed when it comes alive), then reduced.
  float* module_grads(int k) {
    if (life_.touch_grads()) {
      full_grads_ = dev_.template alloc<float>(flat_.padded_numel);
      dev_.zero(full_grads_.data(), flat_.padded_numel);
      if (!parts_.empty()) count_experts(kF32, true);
    }
    return full_grads_.data() + flat_.module_offsets[std::size_t(k)];
  }
  bool grads_live() const { return life_.grads_live(); }
  // Sum over the shard group into the reduced shard.
  void reduce_scatter(Comm& comm) {
    if constexpr (Device::kReduceBf16)
      if (reduce_bf16_) return reduce_scatter_as<Bf16>(comm);
    reduce_scatter_as<float>(comm);
  }
  // The experts' part over efsdp, ahead of reduce_scatter's dense part.
  void reduce_scatter_experts(Comm& efsdp) {
    if constexpr (Device::kReduceBf16)
      if (reduce_bf16_) return reduce_scatter_experts_as<Bf16>(efsdp);
    reduce_scatter_experts_as<float>(efsdp);
  }
  // DDP: the sum of the whole unit, which then is the shard.
  void all_reduce_full(Comm& comm) {
    FSDP_CHECK(parts_.empty(), who() + ": no DDP with expert parallelism");
    life_.check_all_reduce_full();
    const std::int64_t n = flat_.padded_numel;  // == shard_numel
    dev_.round_fp16(full_grads_.data(), n);
    reduced_live_ = true;
    if constexpr (Device::kReduceBf16) {
      if (reduce_bf16_) {  // the bf16 copy, reduced in place, is the reduced shard
        reduced16_ = bf16_copy(full_grads_.data(), n);
        done_with_full_grads();
        return dev_.all_reduce(comm, reduced16_.data(), n);
      }
    }
    dev_.all_reduce(comm, full_grads_.data(), n);
    reduced_ = alloc_counted<float>(n);
    dev_.copy(reduced_.data(), full_grads_.data(), n);
    done_with_full_grads();
  }
  // HSDP: the sum of the reduced shard across replicas.
  void all_reduce_reduced(Comm& comm) {
    FSDP_CHECK(parts_.empty(), who() + ": no replicas with expert parallelism");
    FSDP_CHECK(reduced_live_, who() + ": all-reduce across replicas before the reduce-scatter");
    if constexpr (Device::kReduceBf16)
      if (reduce_bf16_) return dev_.all_reduce(comm, reduced16_.data(), flat_.shard_numel);
    dev_.all_reduce(comm, reduced_.data(), flat_.shard_numel);
  }
  // Adds the reduced shard to the accumulator (widened to fp32 first); sets *non_finite to 1 (device
  // memory on a GPU) when it holds a NaN or an infinity.
  void finish_reduction(int* non_finite) {
    FSDP_CHECK(reduced_live_, who() + ": nothing reduced");
    const std::int64_t n = flat_.shard_numel;
    if constexpr (Device::kReduceBf16) {
      if (reduce_bf16_) {  // the accumulator and the finiteness check are fp32
        reduced_ = alloc_counted<float>(n);
        dev_.widen_bf16(reduced_.data(), reduced16_.data(), n);
        free_counted(reduced16_, n);
      }
    }
    dev_.accumulate_check_finite(grad_acc_.data(), reduced_.data(), n, non_finite);
    free_counted(reduced_, n);
    reduced_live_ = false;
  }

 private:
  static constexpr double kF32 = 4.0;  // bytes per fp32 element
  static std::string who() { return Device::kName; }
  static bool check_reduce(DType reduce) {
    FSDP_CHECK(reduce == DType::fp32 || (Device::kReduceBf16 && reduce == DType::bf16),
               who() + (Device::kReduceBf16 ? ": gradients reduce in fp32 or bf16" : ": gradients reduce in fp32"));
    return reduce == DType::bf16;
  }
  // The resident state [shard]: fp32 master, moments and gradient accumulator, and the parameter copy.
  void allocate_state(std::int64_t shard) {
    master_ = dev_.template alloc<float>(shard);
    exp_avg_ = dev_.template alloc<float>(shard);
    exp_avg_sq_ = dev_.template alloc<float>(shard);
    grad_acc_ = dev_.template alloc<float>(shard);
    dev_.zero(grad_acc_.data(), shard);
    if (Device::kParamCopy) param_copy_ = dev_.template alloc<Param>(shard);
    mem_->alloc(MemCategory::params, double(shard) * (kF32 + (Device::kParamCopy ? dev_.param_bytes : 0.0)));
    mem_->alloc(MemCategory::optimizer, 2.0 * double(shard) * kF32);
    mem_->alloc(MemCategory::grads, double(shard) * kF32);
  }
  // The all-gather input: the parameter copy, or the fp32 master itself.
  const Param* param_source() const {
    if constexpr (Device::kParamCopy) return param_copy_.data();
    else return master_.data();
  }
  // fp16 plans on a device without a parameter copy: the gathered values are fp16 values.
  void round_gathered() {
    if constexpr (!Device::kParamCopy) dev_.round_fp16(full_params_.data(), flat_.padded_numel);
  }
  void count_experts(double bytes_per_element, bool alloc) {
    const double bytes = double(parts_.front().expert.size()) * bytes_per_element;
    alloc ? mem_->alloc(MemCategory::transient, bytes) : mem_->free(MemCategory::transient, bytes);
  }
  template <class E>
  Array<E> alloc_counted(std::int64_t n) {
    mem_->alloc(MemCategory::transient, double(n) * double(sizeof(E)));
    return dev_.template alloc<E>(n);
  }
  template <class E>
  void free_counted(Array<E>& a, std::int64_t n) {
    dev_.free(a);
    mem_->free(MemCategory::transient, double(n) * double(sizeof(E)));
  }
  template <class E>
  static Array<E>& words(Array<float>& f32, Array<Bf16>& b16) {  // the reduction's buffer of words E
    if constexpr (std::is_same_v<E, float>) return f32;
    else return b16;
  }
  // A counted bf16 copy of n fp32 gradients.
  Array<Bf16> bf16_copy(const float* g, std::int64_t n) {
    Array<Bf16> copy = alloc_counted<Bf16>(n);
    if constexpr (Device::kReduceBf16) dev_.cast_bf16(copy.data(), g, n);
    return copy;
  }
  // After the reduction: the unsharded gradients freed, or zeroed for the next step (replicated).
  void done_with_full_grads() {
    if (!parts_.empty()) count_experts(kF32, false);
    if (life_.end_grads()) dev_.free(full_grads_);
    else dev_.zero(full_grads_.data(), flat_.padded_numel);
  }
  // Reduce-scatter in the words E (fp32, or a bf16 copy, after which the fp32 gradients are done with).
  template <class E>
  void reduce_scatter_as(Comm& comm) {
    if (!parts_.empty()) return reduce_scatter_split<E>(comm);
    life_.check_reduce_scatter(comm.size());
    const std::int64_t n = flat_.shard_numel, padded = flat_.padded_numel;
    dev_.round_fp16(full_grads_.data(), padded);  // fp16 plans: a gradient beyond fp16's range is an infinity
    Array<E>& out = words<E>(reduced_, reduced16_);
    if constexpr (std::is_same_v<E, float>) {
      out = alloc_counted<float>(n);
      dev_.reduce_scatter(comm, full_grads_.data(), out.data(), n);
      done_with_full_grads();
    } else {
      Array<Bf16> copy = bf16_copy(full_grads_.data(), padded);
      done_with_full_grads();
      out = alloc_counted<Bf16>(n);
      dev_.reduce_scatter(comm, copy.data(), out.data(), n);
      free_counted(copy, padded);
    }
    reduced_live_ = true;
  }

  // Expert parallelism: the parts move as runs of consecutive unit elements (expert_shards.h).
  // to_unit: dst[unit_at + i] = src[part_at + i] (unpack), else dst[part_at + i] = src[unit_at + i] (pack).
  template <class E>
  void copy_runs(const std::vector<PartRun>& runs, const E* src, E* dst, bool to_unit) {
    for (const PartRun& r : runs)
      dev_.copy(dst + (to_unit ? r.unit_at : r.part_at), src + (to_unit ? r.part_at : r.unit_at), r.count);
  }
  // The dense part over dp_shard into its staging, then both parts to their places in the unit.
  void gather_split(Comm& comm) {
    const ExpertShards& p = parts_.front();
    life_.gather(comm.size());
    count_experts(dev_.param_bytes, true);
    full_params_ = dev_.template alloc<Param>(flat_.padded_numel);
    Array<Param> dense = dev_.template alloc<Param>(p.dense_shard * p.dense_ranks);
    dev_.all_gather(comm, param_source(), dense.data(), p.dense_shard);
    copy_runs(dense_runs_, dense.data(), full_params_.data(), true);
    dev_.free(dense);
    const bool own = p.expert_ranks == 1;  // no efsdp op: the state holds every local expert
    FSDP_CHECK(own || p.expert.empty() || experts_gathered_live_, who() + ": the dense all-gather before the experts'");
    copy_runs(expert_runs_, own ? param_source() + p.dense_shard : experts_gathered_.data(), full_params_.data(), true);
    if (experts_gathered_live_) dev_.free(experts_gathered_);
    experts_gathered_live_ = false;
    round_gathered();
  }
  // A part's gradients [padded] packed from the unsharded fp32 gradients (padding zero), in the words E.
  template <class E>
  Array<E> packed_grads(const std::vector<PartRun>& runs, std::int64_t padded) {
    dev_.round_fp16(full_grads_.data(), flat_.padded_numel);
    Array<float> packed = dev_.template alloc<float>(padded);
    dev_.zero(packed.data(), padded);
    copy_runs(runs, static_cast<const float*>(full_grads_.data()), packed.data(), false);
    if constexpr (std::is_same_v<E, float>) {
      return packed;
    } else {
      Array<Bf16> copy = dev_.template alloc<Bf16>(padded);
      dev_.cast_bf16(copy.data(), packed.data(), padded);
      dev_.free(packed);
      return copy;
    }
  }
  template <class E>
  void reduce_scatter_experts_as(Comm& efsdp) {
    const ExpertShards& p = parts_.at(0);
    FSDP_CHECK(life_.grads_live() && efsdp.size() == p.expert_ranks && !experts_reduced_live_,
               who() + ": the experts' reduce-scatter");
    Array<E> packed = packed_grads<E>(expert_runs_, p.expert_shard * p.expert_ranks);
    Array<E>& out = words<E>(experts_reduced_, experts_reduced16_);
    out = dev_.template alloc<E>(p.expert_shard);
    experts_reduced_live_ = true;
    dev_.reduce_scatter(efsdp, packed.data(), out.data(), p.expert_shard);
    dev_.free(packed);
  }
  // The dense part over dp_shard; the experts' reduced shard joins it (reduced by their twin op, or, with
  // a one-rank efsdp group, this rank's own: the ep group's tokens all reached its experts).
  template <class E>
  void reduce_scatter_split(Comm& comm) {
    const ExpertShards& p = parts_.front();
    life_.check_reduce_scatter(comm.size());
    Array<E> packed = packed_grads<E>(dense_runs_, p.dense_shard * p.dense_ranks);
    Array<E>& out = words<E>(reduced_, reduced16_);
    out = alloc_counted<E>(flat_.shard_numel);
    dev_.reduce_scatter(comm, packed.data(), out.data(), p.dense_shard);
    dev_.free(packed);
    Array<E>& experts = words<E>(experts_reduced_, experts_reduced16_);
    if (p.expert_ranks == 1) {
      experts = packed_grads<E>(expert_runs_, p.expert_shard);
      experts_reduced_live_ = true;
    }
    FSDP_CHECK(p.expert_shard == 0 || experts_reduced_live_, who() + ": the dense reduce-scatter before the experts'");
    if (experts_reduced_live_) {
      dev_.copy(out.data() + p.dense_shard, static_cast<const E*>(experts.data()), p.expert_shard);
      dev_.free(experts);
    }
    experts_reduced_live_ = false;
    reduced_live_ = true;
    done_with_full_grads();
  }

  FlatUnitLayout flat_;
  std::vector<ExpertShards> parts_;  // one under expert parallelism, else none
  std::vector<PartRun> dense_runs_, expert_runs_;
  ShardRanges stepped_;
  UnitLifecycle life_;  // which unsharded buffers are alive, and their bytes
  MemoryTracker* mem_;
  Device dev_;
  bool reduce_bf16_;
  std::int64_t shard_offset_ = 0;
  Array<float> master_, exp_avg_, exp_avg_sq_, grad_acc_;  // [shard_numel], resident
  Array<Param> param_copy_;                                 // [shard_numel] when Device::kParamCopy
  Array<Param> full_params_;                                // [padded_numel]
  Array<float> full_grads_;                                 // [padded_numel]
  Array<Param> kept_;  // [padded / g]: the copy kept between forward and backward, or empty
  typename Device::Event kept_ready_;  // kept_ written (CUDA: on release's stream)
  Array<float> reduced_;     // [shard_numel] fp32 reduced shard (or the widened bf16 one)
  Array<Bf16> reduced16_;    // [shard_numel] the bf16 reduced shard
  Array<Param> experts_gathered_;                           // [expert_shard · efsdp]
  Array<float> experts_reduced_;                            // [expert_shard]
  Array<Bf16> experts_reduced16_;
  bool reduced_live_ = false, experts_gathered_live_ = false, experts_reduced_live_ = false;
};

}  // namespace fsdpx
