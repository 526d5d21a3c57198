// executor/session/full_weights.h — `fsdpx run --init-weights / --save-init-weights / --save-weights`: the full fp32
// parameters as one safetensors file (executor/checkpoint/param_tensors.h names the tensors), loaded by
// sharding them into the trainer's TrainerState layout and saved from Trainer::gather_full_params.
// Leaves out optimizer moments (a checkpoint, --checkpoint-dir, carries those) and bf16 weight files.
#pragma once

#include <cstdint>
#include <string>

#include "executor/session/trainer.h"

namespace fsdpx {

// Replaces the trainer's parameters with the file's and zeroes the Adam moments (meant for a fresh
// trainer, before its first step); step and data position are kept. ConfigError naming the file for a
// missing, extra or misshapen tensor.
void load_full_weights(Trainer& trainer, const std::string& path);

// Writes the trainer's current parameters (atomically), with the model name and `step` as metadata.
void save_full_weights(const Trainer& trainer, const std::string& path, std::int64_t step);

}  // namespace fsdpx
