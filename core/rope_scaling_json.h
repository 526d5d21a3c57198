// core/rope_scaling_json.h — reads and writes RoPE scaling (core/model_spec.h RopeScaling) in fsdpx's
// schema ("rope_scaling": {"type": "llama3" | "yarn", ...}) and in Hugging Face's (rope_scaling /
// rope_parameters with rope_type). "default" (no scaling), "llama3" and "yarn" are modelled; any other type
// is an error naming the key, so a config is never run with frequencies it did not ask for.
#pragma once

#include <cstdint>

#include <nlohmann/json_fwd.hpp>

#include "core/json_reader.h"
#include "core/model_spec.h"

namespace fsdpx::detail {

// fsdpx schema: {"type": "llama3", "factor", "low_freq_factor", "high_freq_factor", "original_max_seq"} or
// {"type": "yarn", "factor", "original_max_seq", and optionally "beta_fast", "beta_slow", "mscale",
// "mscale_all_dim", "attention_factor", "truncate" (absent: Hugging Face's defaults)}.
RopeScaling read_own_rope_scaling(JsonObject o);
nlohmann::json rope_scaling_to_json(const RopeScaling& s);

// Hugging Face: reads "rope_type" (or the older "type") and that type's keys from `o` (a rope_scaling or
// rope_parameters object). `max_position_embeddings` is YaRN's original_max_position_embeddings where
// absent (transformers' standardize_rope_params). Other keys are left for the caller.
RopeScaling read_hf_rope_scaling(JsonObject& o, std::int64_t max_position_embeddings);

}  // namespace fsdpx::detail
