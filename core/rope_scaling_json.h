// core/rope_scaling_json.h — reads and writes RoPE scaling (core/model_spec.h RopeScaling) in fsdpx's
// schema ("rope_scaling": {"type": "llama3", ...}) and in Hugging Face's (rope_scaling / rope_parameters
// with rope_type). Only "default" (no scaling) and "llama3" are modelled; any other type is an error
// naming the key, so a config is never run with frequencies it did not ask for.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "core/json_reader.h"
#include "core/model_spec.h"

namespace fsdpx::detail {

// fsdpx schema: {"type": "llama3", "factor", "low_freq_factor", "high_freq_factor", "original_max_seq"}.
RopeScaling read_own_rope_scaling(JsonObject o);
nlohmann::json rope_scaling_to_json(const RopeScaling& s);

// Hugging Face: reads "rope_type" (or the older "type") and, for "llama3", factor, low_freq_factor,
// high_freq_factor and original_max_position_embeddings from `o` (a rope_scaling or rope_parameters
// object). Other keys are left for the caller.
RopeScaling read_hf_rope_scaling(JsonObject& o);

}  // namespace fsdpx::detail
