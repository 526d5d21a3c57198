// executor/checkpoint/shard_file.h — one rank's saved optimizer state as bytes: magic "FSDPXCKP",
// uint32 version (1), uint32 rank, uint32 unit count, uint32 reserved, then per unit int64 unit_numel,
// int64 shard_offset, int64 shard_numel and the fp32 arrays params, exp_avg, exp_avg_sq; all
// little-endian (module lists are not in it: the manifest holds them, checkpoint.h). Durable writes are
// core/output_file.h's. Leaves out compression.
#pragma once

#include <string>
#include <string_view>

#include "executor/runtime/train_state.h"

namespace fsdpx {

std::string encode_rank_state(const RankState& r);
// Throws ConfigError "<where>: ..." on a bad magic, a truncated or oversized payload.
RankState decode_rank_state(std::string_view bytes, const std::string& where);

// The whole file, or ConfigError.
std::string read_file_bytes(const std::string& path);

}  // namespace fsdpx
