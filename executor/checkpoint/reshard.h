// executor/checkpoint/reshard.h — moves sharded optimizer state between data-parallel layouts: a
// checkpoint saved with N shard owners loads on M, and with another FSDP unit grouping. A unit's flat
// buffer is its modules' parameters in module order and units cover the modules in forward order
// (executor/model/param_layout.cpp, core/plan.h), so element i of unit u is element base(u) + i of
// the whole model; shards are ranges of those logical indices. Padding at the end of the last shard
// differs with dp_shard: dropped on the way in, zero on the way out. Pure functions. Leaves out TP/PP.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "executor/runtime/trainer.h"

namespace fsdpx {

// The FSDP layout the checkpoint tests and tools assume when no trainer is at hand: each unit padded
// to a multiple of dp_shard, shard r = [r·s, (r+1)·s) with s = ceil(numel / dp_shard) (the flat
// parameter padding of FSDP; executor-notes §5.2). Arrays are zero-filled.
TrainerState even_shard_layout(const std::vector<std::int64_t>& unit_numel, int dp_shard);

// State `saved` re-cut to the ranks, shard offsets and shard lengths of `layout` (usually a fresh
// trainer's state()); step, data position and seed come from `saved`. Throws ConfigError naming
// `origin` when the model sizes disagree or the saved shards do not cover every element once.
TrainerState reshard_state(const TrainerState& saved, const TrainerState& layout, const std::string& origin);

}  // namespace fsdpx
