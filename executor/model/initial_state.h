// executor/model/initial_state.h — the training state a run starts from, computed once for every backend:
// a unit shard's fp32 master weights (init.h's pure function of (seed, module, element) in the rank's
// tensor-parallel layout) and the LoRA adapters' (lora_layout.h), with zero Adam moments (a unit's left
// empty, which its upload reads as zeros: issue 29, 10 GB of host zeros copied for llama3.2-1b). A backend's
// init_params loads these through the same hooks that load a checkpoint (rank_fsdp_units.h's
// load_initial_states over RankSkeleton::load_unit; load_adapter_state), so the CPU and CUDA backends
// start from the same values by construction. Leaves out expert-parallel units (expert_shards.h inits
// their two parts) and pretrained weights.
#pragma once

#include <cstdint>

#include "executor/model/lora_layout.h"
#include "executor/runtime/param_layout.h"
#include "executor/runtime/train_state.h"

namespace fsdpx {

// Elements [shard_offset, shard_offset + f.shard_numel) of unit f's flat buffer in `layout` (padding 0);
// exp_avg and exp_avg_sq empty (zero).
UnitShardState initial_unit_state(const ParamLayout& layout, const FlatUnitLayout& f, std::int64_t shard_offset,
                                  std::uint64_t seed);

// The same into `s`, whose params buffer is reused: a loop over a rank's units (rank_fsdp_units.h) faults
// its pages in once, not once per unit (issue 29: a serial pass over 5 GB for llama3.2-1b).
void fill_initial_unit_state(const ParamLayout& layout, const FlatUnitLayout& f, std::int64_t shard_offset,
                             std::uint64_t seed, UnitShardState& s);

// The whole adapter buffer [l.total] (A Kaiming-uniform, B zero).
AdapterState initial_adapter_state(const LoraLayout& l, std::uint64_t seed);

}  // namespace fsdpx
