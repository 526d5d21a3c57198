// core/hf_config_keys.h — the one place that says which Hugging Face config.json keys fsdpx accepts
// without reading (informational: bookkeeping, generation defaults, initialisation, dropout), which
// keys would change the model's math and are refused unless their value is the one fsdpx models, and
// which published architectures are refused and what they need that fsdpx lacks.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/json_reader.h"

namespace fsdpx::detail {

enum class HfFamily { llama, mistral, qwen2, phi3, gpt2, mixtral, qwen2_moe, qwen3_moe, deepseek_v3 };

// Marks every informational key of `family` that `o` holds as read (see kInformational in the .cpp).
void accept_informational_keys(JsonObject& o, HfFamily family);

// Fails naming the key when a value would change the math: use_mrope true, partial_rotary_factor != 1,
// layer_types other than full attention, mixture-of-experts keys in a dense family, logit soft-capping keys,
// GPT-2 attention scaling variants.
void refuse_unmodelled_keys(JsonObject& o, HfFamily family);

// Sliding-window span in tokens when the config turns it on (Mistral: sliding_window not null; Qwen2:
// use_sliding_window true), else nullopt. Reads sliding_window, use_sliding_window, max_window_layers.
std::optional<std::int64_t> sliding_window_in_use(JsonObject& o, HfFamily family);

// For a published architecture (or model_type) fsdpx does not model: what it lacks, one line.
std::optional<std::string_view> unmodelled_architecture(std::string_view name);

}  // namespace fsdpx::detail
