// executor/cpu_backend/fsdp_unit.h — one FSDP unit on one rank: its fp32 master shard with Adam moments and
// sharded gradient accumulator (resident), the unsharded parameter buffer (from all-gather to last use),
// the unsharded gradient buffer (from first backward to reduction) and the reduced gradient shard on
// its way to the accumulator. The flat layout is the modules back to back, padded to a multiple of the
// shard count (executor/runtime/param_layout.h, as FSDP's FlatParameter, Zhao et al. 2023, arXiv 2304.11277 §3.2.1). DDP and ZeRO-1 keep the unsharded
// buffers for the whole run ("replicated"). Leaves out low-precision copies: the CPU computes in fp32; under
// an fp16 plan the unsharded parameters and gradients are rounded to fp16 values (set_fp16). Under expert
// parallelism a unit's routed experts are sharded over their own group (expert_shards.h): their gather and
// reduction are separate ops, ahead of the rest's.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "executor/comm/communicator.h"
#include "executor/model/expert_shards.h"
#include "executor/runtime/grad_norm_ranges.h"
#include "executor/runtime/param_layout.h"
#include "executor/runtime/memory_tracker.h"
#include "executor/runtime/train_state.h"
#include "executor/runtime/unit_lifecycle.h"

namespace fsdpx {

class FsdpUnit {
 public:
  // `shard_index` of `flat.padded_numel / flat.shard_numel` shards; `replicated`: DDP / ZeRO-1.
  FsdpUnit(FlatUnitLayout flat, int shard_index, bool replicated, MemoryTracker* mem);
  // Expert parallelism: `flat` (the rank's local experts) in two parts (expert_shards.h); the state is
  // parts.state_numel() long, dense shard then expert shard.
  FsdpUnit(FlatUnitLayout flat, ExpertShards parts, MemoryTracker* mem);
  FsdpUnit(const FsdpUnit&) = delete;
  FsdpUnit& operator=(const FsdpUnit&) = delete;
  FsdpUnit(FsdpUnit&&) = default;

  // The unit's layout; shard_numel is the state's length (both parts under expert parallelism).
  const FlatUnitLayout& flat() const { return flat_; }
  const ExpertShards* expert_shards() const { return parts_.empty() ? nullptr : &parts_.front(); }
  // The state's ranges AdamW steps (executor/model/optimizer_ranges.h: all but buffers), set by the backend.
  const ShardRanges& stepped() const { return stepped_; }
  void set_stepped(ShardRanges r) { stepped_ = std::move(r); }
  UnitShardState& state() { return state_; }
  const UnitShardState& state() const { return state_; }
  float* grad_shard() { return grad_acc_.data(); }  // [shard_numel]
  const float* grad_shard() const { return grad_acc_.data(); }

  // Parameters: the master shard all-gathered into the unsharded buffer (allocated unless replicated).
  void gather(Communicator& comm);
  // Expert parallelism: the experts' part over efsdp (the program's twin op, ahead of gather); gather then
  // places it. Without an efsdp group (one rank) gather takes it from the state.
  void gather_experts(Communicator& efsdp);
  // Frees the unsharded buffer. keep_ranks = g > 1 (FSDP2's int reshard_after_forward): slice
  // `keep_index` of g of the unsharded parameters stays for backward (kept_bytes()), a shard of the
  // reshard group's world as FSDP2's post-forward mesh holds it.
  void release_params(int keep_ranks = 0, int keep_index = 0);
  // Backward's all-gather from the kept copy over the reshard group (`reshard`: its g ranks, this rank
  // at keep_index), which it frees: FSDP2 unshards over the post-forward mesh.
  void gather_kept(Communicator& reshard);
  double kept_bytes() const { return life_.kept_bytes(); }
  bool params_live() const { return life_.params_live(); }
  const float* module_params(int k) const;  // module k of flat().modules inside the unsharded buffer
  // DDP: the unsharded parameters are the master copy.
  void copy_master_to_replica();
  // fp16 compute (FSDP's MixedPrecision(param_dtype=float16)): the unsharded parameters hold fp16 values
  // from their gather on, and the unsharded gradients are rounded to fp16 before their reduction (the
  // reduction itself stays fp32), so that a gradient beyond fp16's range arrives as an infinity.
  void set_fp16(bool on) { fp16_ = on; }

  // Gradients: the unsharded buffer (zeroed when it comes alive), then reduced to `reduced`.
  float* module_grads(int k);
  bool grads_live() const { return life_.grads_live(); }
  void reduce_scatter(Communicator& comm);  // sum over the shard group into the reduced shard
  void reduce_scatter_experts(Communicator& efsdp);  // the experts' part, ahead of reduce_scatter
  void all_reduce_full(Communicator& comm);  // DDP: sum of the whole unit, which then is the shard
  void all_reduce_reduced(Communicator& comm);  // HSDP: sum of the reduced shard across replicas
  // Adds the reduced shard to the accumulator; false when it holds a NaN or an infinity.
  bool finish_reduction();

 private:
  void done_with_full_grads();
  void allocate_state(std::int64_t shard);
  void gather_split(Communicator& comm);
  void reduce_scatter_split(Communicator& comm);
  FlatUnitLayout flat_;
  std::vector<ExpertShards> parts_;  // one under expert parallelism, else none
  ShardRanges stepped_;
  std::vector<float> experts_gathered_, experts_reduced_;  // [expert_shard·efsdp], [expert_shard]
  UnitLifecycle life_;  // which unsharded buffers are alive, and their bytes
  MemoryTracker* mem_;
  UnitShardState state_;
  std::vector<float> grad_acc_;  // [shard_numel] sharded fp32 gradient accumulator
  std::vector<float> full_params_, full_grads_, reduced_;  // [padded], [padded], [shard]
  std::vector<float> kept_;  // [padded / g]: the copy kept between forward and backward, or empty
  bool fp16_ = false;
};

}  // namespace fsdpx
