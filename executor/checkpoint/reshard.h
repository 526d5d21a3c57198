// executor/checkpoint/reshard.h — moves sharded optimizer state between data-parallel layouts: a
// checkpoint saved with N shard owners and one FSDP unit grouping loads on M owners and another
// grouping. Every unit lists the plan modules it holds and where (UnitShardState::modules), so values
// move by (module, element within the module), whatever the order of the units or of the modules in
// a unit (a tied embedding sits in the head's unit, usually the last). Padding at the end of the last
// shard differs with dp_shard: dropped on the way in, zero on the way out. Pure functions. Leaves
// out TP/PP.
//
// A saved state without module lists (checkpoint format 1) is read as units that, joined, are the
// model's modules in forward order. Plan validation guarantees that order unless the head is tied to
// the embedding (core/plan_validate.cpp: the embedding then sits anywhere in the head's unit), so
// such a state is accepted for an untied model only and rejected with a ConfigError otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "executor/runtime/train_state.h"

namespace fsdpx {

// The FSDP layout the checkpoint tests and tools assume when no trainer is at hand: each unit padded
// to a multiple of dp_shard, shard r = [r·s, (r+1)·s) with s = ceil(numel / dp_shard) (the flat
// parameter padding of FSDP's FlatParameter, Zhao et al. 2023, arXiv 2304.11277 §3.2.1). Arrays are zero-filled. `units[u]` lists unit u's
// modules back to back from offset 0 (FSDP_CHECK otherwise).
TrainerState even_shard_layout(const std::vector<std::vector<UnitModule>>& units, int dp_shard);
// The same without module lists (the shape of a format-1 checkpoint).
TrainerState even_shard_layout(const std::vector<std::int64_t>& unit_numel, int dp_shard);

// Throws ConfigError "<where>: ..." unless `modules` are non-empty, uniquely named within the unit,
// and tile [0, unit_numel) back to back in order (FlatUnitLayout's packing).
void check_unit_modules(const std::vector<UnitModule>& modules, std::int64_t unit_numel, const std::string& where);

// State `saved` re-cut to the ranks, units, shard offsets and shard lengths of `layout` (usually a
// fresh trainer's state(), which must carry module lists); step, data position and seed come from
// `saved`. Throws ConfigError naming `origin` when a saved module is missing, unknown or of another
// size than in `layout` (naming the module), when the saved shards do not cover every element once,
// or for a state without module lists that cannot be read in forward order (see above).
TrainerState reshard_state(const TrainerState& saved, const TrainerState& layout, const std::string& origin);

}  // namespace fsdpx
