// executor/checkpoint/checkpoint_verify.h — what makes a checkpoint directory trustworthy before any of
// it is loaded: the manifest's own checksum (a one-bit change anywhere in it is seen), the step its
// directory name promises, and a shard set that holds every element of every unit exactly once (no
// shard missing, none listed twice). A directory that fails is rejected as a whole, so loading falls
// back to the previous good checkpoint. Leaves out the checks against the model (reshard.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "executor/runtime/train_state.h"

namespace fsdpx {

// CRC-32 of the manifest without its "checksum" key, compact JSON with sorted keys, as 8 hex digits.
std::string manifest_checksum(const nlohmann::json& manifest);
// Throws ConfigError "<where>: /checksum: ..." when the manifest's checksum key is there and differs.
// Manifests written before the key existed have none.
void check_manifest_checksum(const nlohmann::json& manifest, const std::string& where);

// "step-000006" -> 6; nullopt for any other name and for a number beyond int64.
std::optional<std::int64_t> step_of_dir_name(std::string_view name);

// The saved shard owners are ranks 0..dp_shard-1, each once, and for every unit their shards, ordered by
// offset, are back to back from 0 and reach the unit's end (the last may run into padding). Throws
// ConfigError "<where>: ...".
void check_shard_set(const TrainerState& s, const std::string& where);

}  // namespace fsdpx
