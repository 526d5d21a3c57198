// executor/session/full_weights.h — `fsdpx run --init-weights / --save-init-weights / --save-weights`: the full fp32
// parameters as one safetensors file (executor/checkpoint/param_tensors.h names the tensors), loaded by
// sharding them into the trainer's TrainerState layout and saved from Trainer::gather_full_params; LoRA's
// adapters as named tensors (--save-init-adapters) and merged into trained weights (W + (alpha / r) B A).
// Leaves out optimizer moments (a checkpoint, --checkpoint-dir, carries those) and bf16 weight files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "executor/checkpoint/safetensors.h"
#include "executor/model/lora.h"
#include "executor/session/checkpoint_plan.h"
#include "executor/session/trainer.h"

namespace fsdpx {

// Replaces the trainer's parameters with the file's and zeroes the Adam moments (meant for a fresh
// trainer, before its first step); step and data position are kept. ConfigError naming the file for a
// missing, extra or misshapen tensor.
void load_full_weights(Trainer& trainer, const std::string& path);

// Writes the trainer's current parameters (atomically), with the model name and `step` as metadata.
void save_full_weights(const Trainer& trainer, const std::string& path, std::int64_t step);
// The same for parameters gathered another way (one process per rank: process_weights.h); `adapters` are
// the LoRA adapters merged into them when the run has a lora section.
void save_full_params(const RunSettings& run, std::vector<float> full, const std::vector<float>& adapters,
                      const std::string& path, std::int64_t step);

// LoRA adapters (the flat buffer of executor/model/lora.h) as one F32 tensor per matrix:
// "block.<i>.<target>.lora_A" [r, in] and "block.<i>.<target>.lora_B" [out, r] (targets as core/lora.h
// names them), with the rank, alpha and scale as metadata.
SafetensorsFile adapters_to_safetensors(const LoraLayout& l, std::span<const float> adapters, double alpha);
// Writes the trainer's adapters that way (atomically); the plan must have a lora section.
void save_adapter_weights(const Trainer& trainer, const std::string& path, std::int64_t step);

// A LoRA checkpoint's weights merged: params += (alpha / r) B A (nothing for a full fine-tuning run).
void merge_trained_adapters(TrainedWeights& w);

}  // namespace fsdpx
