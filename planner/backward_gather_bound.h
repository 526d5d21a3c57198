// planner/backward_gather_bound.h — a memory lower bound for one configured plan (its wrapping and
// reshard chosen) without pipelining: when the first backward op of a block unit U starts
// (program/lower_units.cpp backward_segment), the lowering holds U gathered (its all-gather's bytes,
// kept_gathered.h unit_gather_bytes), U's unsharded gradient (params x the dtype the lowering holds it in,
// allocated at that op's start or earlier under accumulation), that op's working bytes (at least those of
// U's last block), the saved activations of every module up to U's last block (backward runs in reverse,
// nothing of them freed yet), the model state and fixed overheads (memory_bound.h's, which count no
// gradient shard that appears only with a reduction), and the allocator's headroom on the step-allocated
// part. The shape bound (memory_bound.h) counts one block gathered at most, so a wrapping of k blocks per
// unit (per_block k2, k4, SimpleFSDP's buckets) holds k times that and more: this bound prunes such
// configurations before simulation (planner/refine.cpp). Units holding a non-block module (embedding,
// head, final norm: the tied table may be gathered elsewhere) are left out, as are pipelines, MoE models,
// LoRA and unsharded parameters (the bound is then memory_bound.h's alone). count_certain_gathers() adds
// the other units' gathered parameters the engine certainly holds at that op (simulator/certain_order.h,
// on the lowered plan): the next unit's prefetched all-gather once its dependencies and the all-gather
// stream are done before U's backward (prefetch depth 1 or more, a cap of 2 or more), and every unit kept
// gathered since forward. Leaves out the reductions' buffers, which depend on timing and only add.
#pragma once

#include <array>
#include <vector>

#include "core/plan.h"
#include "planner/memory_bound.h"
#include "planner/pipelined_kept_bound.h"

namespace fsdpx {

// The same bound for one configured plan under many recompute patterns (refine's options): what does
// not depend on the pattern once. `plan` must outlive the model.
class ConfiguredMemoryBound {
 public:
  explicit ConfiguredMemoryBound(const Plan& plan);
  // The larger of memory_bound.h's bound and the backward-gather bound above, for `recompute` (one mode
  // per block).
  double total(const std::vector<RecomputeMode>& recompute) const;
  // Lowers the plan (two micro-batches at most: the first one's backward is the same op graph as in the
  // whole step) and adds, per checked unit, the other units' gathers certainly live at its first backward
  // op. The op graph does not depend on recompute, so the facts hold for every pattern total() is given.
  void count_certain_gathers();
  // What total() would be if count_certain_gathers() found what the lowering's rules give at most (the
  // unit backwarded next, prefetched, and the units kept gathered since forward), without lowering: a
  // filter for when lowering can change an answer, never a bound.
  double guessed_total(const std::vector<RecomputeMode>& recompute) const;

 private:
  double backward_gather_bytes(const std::vector<RecomputeMode>& recompute, const std::vector<double>& other) const;

  const Plan* plan_;
  MemoryBoundModel shape_;
  PipelinedKeptBound kept_;                      // a pipelined plan keeping its units gathered
  bool applies_ = false;
  double resident_bytes_ = 0;                    // state and fixed overheads
  double embedding_saved_bytes_ = 0;             // module 0's saved activations
  std::array<SegmentMemory, 4> block_{};         // per RecomputeMode, one block's bytes
  std::vector<int> last_block_;                  // per checked unit: its last block (0-based)
  std::vector<double> held_bytes_;               // per checked unit: gathered + unsharded gradient bytes
  std::vector<int> unit_;                        // per checked unit: its index in the plan
  std::vector<double> other_gathered_bytes_;     // per checked unit: count_certain_gathers()'s bytes
  std::vector<double> guessed_other_bytes_;      // per checked unit: guessed_total()'s
};

}  // namespace fsdpx
