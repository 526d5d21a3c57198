// executor/model/optimizer_ranges.h — which elements of a rank's state of one unit the optimizer steps:
// all but the buffers' (TensorSlot::buffer: DeepSeek-V3's e_score_correction_bias, which transformers
// registers as a buffer, so torch.optim.AdamW never sees it and its weight decay never shrinks a loaded
// bias). The state keeps them, so checkpoints hold and load them as before; their gradient is zero. For
// both backends (CPU and CUDA AdamW over each range), with the unit in one shard or in its two expert-
// parallel parts (expert_shards.h). Leaves out DeepSeek-V3's own bias update (auxiliary-loss-free balancing,
// §2.1.2 of the DeepSeek-V3 report).
#pragma once

#include <cstdint>

#include "executor/model/expert_shards.h"
#include "executor/runtime/grad_norm_ranges.h"

namespace fsdpx {

// The stepped [begin, end) ranges of the state [shard_offset, shard_offset + shard_numel) of unit `flat`
// laid out by `layout` (ascending, disjoint; the whole state when the unit holds no buffer).
ShardRanges stepped_ranges(const ParamLayout& layout, const FlatUnitLayout& flat, std::int64_t shard_offset,
                           std::int64_t shard_numel);
// The same for a unit in two parts: the state is the dense shard, then the expert shard (buffers are dense).
ShardRanges stepped_ranges(const ParamLayout& layout, const FlatUnitLayout& flat, const ExpertShards& parts);

}  // namespace fsdpx
