// planner/memory_bound.h — an analytic lower bound on the simulator's peak memory for a plan, used to
// prune before simulating: sharded model state (FSDP2 accounting) + fixed overheads + the activations
// every module saves for one micro-batch + the head's gathered parameters (all alive when the last
// forward op starts, program/lower.cpp; without pipelining every unit the plan keeps gathered after forward
// instead, when it keeps any) + allocator headroom on that sum. Under pipeline parallelism the
// worst pipeline rank's: its units' state, the gathered unit of a chunk's last block, and the most its
// schedule keeps at once (a walk of its passes, program/pipeline_schedule.h): activations in flight at a
// forward, or at a backward's start with that op's working bytes and gradient (all the chunk's
// accumulated gradients at its later backward passes, in the dtype the lowering holds them). Leaves out
// other gathered units, prefetch buffers and the reductions' buffers, which only add to the peak, so the
// bound never exceeds what the simulator reports (tests/planner checks this).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/plan.h"
#include "planner/pass_states.h"
#include "program/segment_work.h"

namespace fsdpx {

struct MemoryBound {
  double state_bytes = 0;        // params + grads + optimizer shards
  double activation_bytes = 0;   // saved for backward (one micro-batch of every module, or the stage's
                                 // peak), or under PP the accumulated unsharded gradients if more
  double fixed_bytes = 0;        // CUDA context + NCCL buffers
  double gathered_bytes = 0;     // the head's parameters, unsharded for its forward
  double headroom_bytes = 0;     // allocator headroom on the sum above
  double total() const { return state_bytes + activation_bytes + fixed_bytes + gathered_bytes + headroom_bytes; }
};

// Independent of the units (only their sum of parameters matters) and of prefetch. Identical blocks
// share one activation figure per recompute mode.
MemoryBound memory_lower_bound(const Plan& plan);

// Bytes per parameter of a unit's unsharded gradient as the lowering holds it (program/lower.cpp
// autograd_grad_bytes_): fsdpx's flat units one reduce-dtype buffer, PyTorch FSDP autograd's in the param
// dtype. The planner bounds a shape with the least reduce dtype of its space (shape_bound.cpp).
double autograd_grad_bytes(const Plan& plan);


// What MemoryBoundModel holds whatever the data-parallel degrees: units, parameters (after tp and ep), the
// per-mode block memory, the pipeline passes and what a backward pass adds, and per recompute pattern each
// pipeline rank's activation peak (memoised: add_partial asks again for the shapes of one key). It reads the
// plan's model, precision, stack, fp8, lora, reduce_grads, sequence, micro-batch and accumulation, units
// (modules and stages), recompute, and of its parallelism everything but dp_replicate, dp_shard and
// data_parallel, of which only whether parameters are sharded (data_placement): memory_bound_key. Not
// thread-safe (the memo of patterns).
class MemoryBoundPart {
 public:
  MemoryBoundPart(const Plan& plan, bool every_mode);
  // Per pipeline rank, the activation bytes of memory_bound.h for one mode per block.
  const std::vector<double>& activations(const Plan& plan, const std::vector<RecomputeMode>& recompute) const;

 private:
  friend class MemoryBoundModel;
  void rank_terms(const Plan& plan);

  std::vector<double> params_;                     // per unit
  std::size_t vpp_ = 1;
  std::vector<std::size_t> unit_slot_;             // per unit: rank * vpp + chunk
  std::vector<double> params_sum_;                 // per rank * vpp + chunk
  std::vector<double> state_sum_;                  // the same of unit_state_params (an MoE model's experts
                                                   // x ep / cp: their sharded state, program/moe_block.h)
  std::vector<double> unit_gather_;                // per unit: its all-gather's bytes (kept_gathered.h)
  std::vector<double> last_gather_;                // per rank * vpp + chunk: its last block's gather bytes
  std::vector<double> last_working_;               // per rank * vpp + chunk: its last block's backward
                                                   // working bytes (pipelines only)
  std::vector<double> backward_extra_;             // per rank * vpp + chunk: what a backward pass's first
                                                   // op adds at least (working bytes, its gradient)
  std::array<SegmentMemory, 4> block_{};           // per RecomputeMode
  std::array<bool, 4> known_{};                    // block_ holds that mode's bytes
  std::vector<std::vector<int>> unit_blocks_;      // per unit: its blocks (0-based)
  std::vector<SegmentMemory> unit_rest_;           // per unit: its non-block modules' bytes
  std::vector<double> later_extra_;                // per rank * vpp + chunk: what a later backward pass's
                                                   // first op holds at least (all the chunk's gradients)
  std::shared_ptr<const PassStates> pass_states_;  // per pipeline rank: micro-batches held per chunk (saved,
                                                   // then weight-pass) at its forwards, at the start of each
                                                   // chunk's first whole backward pass and of its later ones
                                                   // (pass_states.h; null without a walked schedule)
  mutable std::map<std::vector<RecomputeMode>, std::vector<double>> activations_;  // per pattern, per rank
};

// Everything MemoryBoundPart reads (above): plans with equal keys share one part.
std::string memory_bound_key(const Plan& plan, bool every_mode);
// Parts by memory_bound_key, for one search's shapes (shape_order.h).
using MemoryBoundMemo = std::map<std::string, std::shared_ptr<const MemoryBoundPart>>;

// The same bound for one plan under many recompute patterns (the planner's partial family): what does
// not depend on the pattern (units, parameters, per-mode block memory, the pipeline passes) once, and what
// depends on neither the pattern nor the data-parallel degrees (MemoryBoundPart) once per key of `memo`.
// `plan` must outlive the model; bound() takes the plan's own modes, or every mode when `every_mode`.
class MemoryBoundModel {
 public:
  MemoryBoundModel(const Plan& plan, bool every_mode, MemoryBoundMemo* memo = nullptr);
  MemoryBound bound(const std::vector<RecomputeMode>& recompute) const;  // one mode per block

 private:
  const Plan* plan_;
  std::shared_ptr<const MemoryBoundPart> part_;
  std::vector<MemoryBound> base_;                  // per pipeline rank: state, fixed and gathered bytes
};

}  // namespace fsdpx
