// executor/checkpoint/checkpoint.h — sharded training checkpoints, saved and loaded by one process or by
// every process of a multi-process job: one directory per step (`step-000006/`) holding manifest.json
// (format, model fingerprint, step, data position, seed, dp_shard, fp16's loss scaler state when the plan
// scales the loss, per unit its numel and its modules with offsets and sizes, each file's byte size and
// CRC-32, and the manifest's own CRC-32) plus one `rank-NNNNN.bin` per shard owner (shard_file.h) and, for
// a LoRA run, `adapters.safetensors` (the adapters and their moments, adapter_file.h). Written into a
// staging directory, fsynced, renamed, then the parent fsynced, so a crash leaves either the old set or
// the new one (the llm.c DONE_<step> marker idea, here by rename). Loading verifies everything and falls
// back to the newest good step. Leaves out pruning old checkpoints, async saving and reading only the
// shards a process needs (each reads them all).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "executor/runtime/train_state.h"

namespace fsdpx {

// Format 2 lists each unit's modules; format 1 (unit sizes only) is still read (reshard.h says when
// it can be resharded).
inline constexpr const char* kCheckpointFormat = "fsdpx-checkpoint/2";
inline constexpr const char* kCheckpointFormat1 = "fsdpx-checkpoint/1";

// Checkpoints are matched to a model by a fingerprint string (executor/session/checkpoint_plan.h
// plan_fingerprint); this layer compares it and never reads the plan.
std::string checkpoint_dir_name(std::int64_t step);  // "step-000006"

// What a save or a load needs from a job whose shard owners may run in several processes (PyTorch DCP's
// layout: each process writes the shards it holds, one manifest commits them): an element-wise sum over the
// processes (Trainer::sum_over_processes), which process leads (writes the manifest and commits, proposes
// the checkpoint to load), and the name every process gives the staging directory ("" in a one-process
// run: this host and pid). Checkpoints then live on storage every process sees.
struct CheckpointGroup {
  std::function<std::vector<std::uint64_t>(const std::vector<std::uint64_t>&)> sum =
      [](const std::vector<std::uint64_t>& words) { return words; };
  bool leader = true;
  std::string job_token;  // [0-9a-f]+, the same in every process of the job
};

// "rank-00003.bin": the shard file of a shard owner.
std::string shard_file_name(int rank);

// Creates root if needed and checks that a save can create its directory and files there, so that an
// unusable --checkpoint-dir is reported before any training step. Throws WriteError.
void prepare_checkpoint_dir(const std::string& root);

// Saves a step under root/step-<step> (checkpoint_save.cpp): every process calls it with `local`, the shard
// owners it hosts (Trainer::local_state(); the leader hosts rank 0). Each writes its shard files into the
// staging directory and fsyncs them; the manifest, with every file's size and CRC-32 and its own checksum,
// is written and the directory renamed into place only after every process reported its files durable.
// Replaces an existing directory of the same step. All processes return the directory or all throw
// WriteError; a failed save removes its staging directory.
std::string save_checkpoint(const std::string& root, const TrainerState& local, const std::string& fingerprint,
                            const CheckpointGroup& group = {});
// Deletes the staging directories of saves that died before their commit: this host's one-process saves
// whose process is gone, and job saves of steps up to `committed_step`. A save calls it after committing.
void remove_stale_temporaries(const std::string& root, std::int64_t committed_step);

// Reads one checkpoint directory, verifying the manifest (its checksum, each unit's modules tile it, no
// module in two units, the step its directory is named for), the fingerprint, every file's size and
// CRC-32 and its unit sizes, and that the shard files hold every element once (checkpoint_verify.h);
// every rank's units get the manifest's module lists (none for format 1). Throws ConfigError
// "checkpoint <dir>: <file>: <what>" on the first problem.
TrainerState read_checkpoint(const std::string& dir, const std::string& fingerprint);

// Complete checkpoint directories under root (temporary ones skipped), newest step first. A "step-N"
// whose N is beyond int64 is left out, with a message in `ignored` when given.
std::vector<std::pair<std::int64_t, std::string>> list_checkpoints(const std::string& root,
                                                                   std::vector<std::string>* ignored = nullptr);

struct LoadedCheckpoint {
  TrainerState state;
  std::string dir;
  std::vector<std::string> rejected;  // one message per newer checkpoint that failed verification
};

// The newest checkpoint under root that verifies in every process of the group (each reads every shard
// file; the caller reshards to its own layout); nullopt when none does (rejected messages are then in
// `rejected_out` when given). A collective when the group has several processes.
std::optional<LoadedCheckpoint> load_latest_checkpoint(const std::string& root, const std::string& fingerprint,
                                                       std::vector<std::string>* rejected_out = nullptr,
                                                       const CheckpointGroup& group = {});

}  // namespace fsdpx
