// executor/checkpoint/adapter_file.h — a LoRA run's adapters in a checkpoint, apart from the frozen base's
// shard files: `adapters.safetensors` with three F32 tensors of the whole flat adapter buffer
// (executor/model/lora.h order) — "params", "exp_avg" and "exp_avg_sq" (AdamW's moments) — written by the
// leading process (every rank holds the same adapters) and listed in the manifest with its size and CRC-32
// (checkpoint.h). Leaves out per-adapter tensor names (the plan's lora section gives the layout).
#pragma once

#include <string>
#include <string_view>

#include "executor/runtime/train_state.h"

namespace fsdpx {

inline constexpr const char* kAdapterFileName = "adapters.safetensors";

std::string encode_adapter_state(const AdapterState& s);
// Strict: exactly the three tensors, 1-D, of `numel` elements each; ConfigError "<where>: ..." otherwise.
AdapterState decode_adapter_state(std::string_view bytes, std::int64_t numel, const std::string& where);

}  // namespace fsdpx
