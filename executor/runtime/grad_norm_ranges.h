// executor/runtime/grad_norm_ranges.h — which elements of a rank's gradient shard of one unit the global
// gradient norm counts: every element on tp rank 0; on the other tp ranks only those of tensors split
// across the tp group, since a tensor every tp rank holds whole (norms, row-parallel biases) would
// otherwise be counted tp times (as Megatron-LM's optimizer filters them: NVIDIA/Megatron-LM
// megatron/core/optimizer/optimizer.py get_main_grads_for_grad_norm, param_is_not_tensor_parallel_duplicate).
// Leaves out pipeline ranks' tied copies, which the rank skeleton skips whole.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "executor/runtime/param_layout.h"

namespace fsdpx {

// [begin, end) element ranges of a shard, ascending and disjoint.
using ShardRanges = std::vector<std::pair<std::int64_t, std::int64_t>>;

// The counted ranges of shard `shard_index` (of flat.shard_numel elements) of unit `flat` laid out by
// this tp rank's `layout`.
ShardRanges grad_norm_ranges(const ParamLayout& layout, const FlatUnitLayout& flat, int shard_index, int tp_rank);

}  // namespace fsdpx
