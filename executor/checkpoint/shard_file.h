// executor/checkpoint/shard_file.h — one rank's saved optimizer state as bytes: magic "FSDPXCKP",
// uint32 version (1), uint32 rank, uint32 unit count, uint32 reserved, then per unit int64 unit_numel,
// int64 shard_offset, int64 shard_numel and the fp32 arrays params, exp_avg, exp_avg_sq; all
// little-endian (module lists are not in it: the manifest holds them, checkpoint.h). And durable file
// writes (write, fsync, directory fsync). Leaves out compression.
#pragma once

#include <string>
#include <string_view>

#include "executor/runtime/train_state.h"

namespace fsdpx {

std::string encode_rank_state(const RankState& r);
// Throws ConfigError "<where>: ..." on a bad magic, a truncated or oversized payload.
RankState decode_rank_state(std::string_view bytes, const std::string& where);

// Writes `bytes` to `path` and fsyncs it (ConfigError on failure, naming the path and errno text).
void write_file_durable(const std::string& path, std::string_view bytes);
// fsync of a directory, so that the names created or renamed in it survive a crash (POSIX rename
// is atomic but only durable once the parent directory is synced; ext4 and XFS behave so).
void fsync_directory(const std::string& path);
// The whole file, or ConfigError.
std::string read_file_bytes(const std::string& path);

}  // namespace fsdpx
