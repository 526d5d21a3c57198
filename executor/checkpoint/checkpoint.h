// executor/checkpoint/checkpoint.h — sharded training checkpoints: one directory per step
// (`step-000006/`) holding manifest.json (format, model fingerprint, step, data position, seed,
// dp_shard, per unit its numel and its modules with offsets and sizes, each shard file's byte size and
// CRC-32) plus one `rank-NNNNN.bin` per shard owner (shard_file.h). Written into
// `step-000006.tmp-<pid>/`, fsynced, renamed, then the parent fsynced, so a crash leaves either the old
// set or the new one (the llm.c DONE_<step> marker idea, here by rename). Loading verifies sizes and
// checksums and falls back to the newest good step. Leaves out pruning old checkpoints and async saving.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/plan.h"
#include "executor/runtime/train_state.h"

namespace fsdpx {

// Format 2 lists each unit's modules; format 1 (unit sizes only) is still read (reshard.h says when
// it can be resharded).
inline constexpr const char* kCheckpointFormat = "fsdpx-checkpoint/2";
inline constexpr const char* kCheckpointFormat1 = "fsdpx-checkpoint/1";

// Identifies what a checkpoint can be loaded into: the model only, not the parallel degrees nor the
// unit grouping (reshard.h maps both by module), so a state saved with N ranks loads with M. 16 hex
// digits (FNV-1a 64 of the model's JSON). Module sizes are checked against the model's by
// reshard_state, which names a module that differs (e.g. after a change of the parameter layout).
std::string plan_fingerprint(const Plan& plan);

std::string checkpoint_dir_name(std::int64_t step);  // "step-000006"

// Saves `s` (only replica 0's shards are in it) under root/step-<step>; creates root if needed and
// replaces an existing directory of the same step. Returns the directory path.
std::string save_checkpoint(const std::string& root, const TrainerState& s, const std::string& fingerprint);
// Deletes the temporary directories of saves that died before their rename (this host's, whose process
// is gone); save_checkpoint calls it after each successful save.
void remove_stale_temporaries(const std::string& root);

// Reads one checkpoint directory, verifying the manifest (each unit's modules tile it, no module in
// two units), the fingerprint, every file's size and CRC-32 and its unit sizes; every rank's units get
// the manifest's module lists (none for format 1). Throws ConfigError "checkpoint <dir>: <file>:
// <what>" on the first problem.
TrainerState read_checkpoint(const std::string& dir, const std::string& fingerprint);

// Complete checkpoint directories under root (temporary ones skipped), newest step first.
std::vector<std::pair<std::int64_t, std::string>> list_checkpoints(const std::string& root);

struct LoadedCheckpoint {
  TrainerState state;
  std::string dir;
  std::vector<std::string> rejected;  // one message per newer checkpoint that failed verification
};

// The newest checkpoint under root that verifies; nullopt when none does (rejected messages are
// then in `rejected_out` when given).
std::optional<LoadedCheckpoint> load_latest_checkpoint(const std::string& root, const std::string& fingerprint,
                                                       std::vector<std::string>* rejected_out = nullptr);

}  // namespace fsdpx
