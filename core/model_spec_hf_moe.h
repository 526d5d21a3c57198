// core/model_spec_hf_moe.h — Hugging Face config.json readers for the mixture-of-experts families:
// Mixtral, Qwen2-MoE and Qwen3-MoE (their attention is Llama's, read by model_spec_hf.cpp, then the expert
// keys here) and DeepSeek-V3 (multi-head latent attention and DeepSeekMoE, read here whole). Leaves out
// the multi-token-prediction module (num_nextn_predict_layers) and MoE layers interleaved with dense ones.
#pragma once

#include "core/hf_config_keys.h"
#include "core/json_reader.h"
#include "core/model_spec.h"

namespace fsdpx::detail {

// The expert keys of a Mixtral, Qwen2-MoE or Qwen3-MoE config into m.moe (and qk_norm for Qwen3-MoE).
void read_hf_moe_keys(JsonObject& o, HfFamily family, ModelSpec& m);
// A DeepseekV3ForCausalLM config (shapes, RoPE base, YaRN factor, norm epsilon; not the name).
ModelSpec parse_hf_deepseek_v3(JsonObject& o);

}  // namespace fsdpx::detail
