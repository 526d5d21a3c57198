// executor/checkpoint/hf_export.h — a trained fsdpx model as a Hugging Face checkpoint: config.json
// and model.safetensors (F32) with transformers' parameter names, for LlamaForCausalLM (llama, no bias or
// bias everywhere), Qwen2ForCausalLM (llama with q/k/v bias) and GPT2LMHeadModel (gpt). fsdpx's fused
// tensors are split (qkv -> q/k/v_proj, SwiGLU mlp_up -> gate/up_proj) and GPT-2's Conv1D weights are
// stored [in, out]. Leaves out tokenizer files (fsdpx trains on bytes: token id = byte), bf16 output and
// MoE or latent-attention models (refused).
#pragma once

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "core/model_spec.h"
#include "executor/checkpoint/safetensors.h"

namespace fsdpx {

struct HfCheckpoint {
  nlohmann::json config;     // config.json
  SafetensorsFile weights;   // model.safetensors
};

// `full`: [make_param_layout(m).total] fp32 in layout order. ConfigError "export-hf: ..." when the model
// has no transformers equivalent (squared-ReLU MLP, GELU llama, GQA or an odd head_dim in GPT-2...).
HfCheckpoint to_hugging_face(const ModelSpec& m, std::span<const float> full);

// Writes out_dir/config.json and out_dir/model.safetensors, each whole (creating out_dir).
void write_hugging_face(const std::string& out_dir, const HfCheckpoint& c);

}  // namespace fsdpx
