// core/model_spec.h — a decoder-only transformer: llama (RMSNorm, RoPE, SwiGLU, GQA) or gpt
// (LayerNorm, GELU MLP, learned positions). Loads fsdpx's own JSON and Hugging Face config.json files
// (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel), detected by content.
// Leaves out mixture-of-experts, sliding-window attention, multimodal towers and RoPE scaling: Llama
// 3.1/3.2's rope_scaling ("llama3": factor 8 or 32 above original_max_position_embeddings 8192) is
// ignored, which is exact for training sequences of up to 8192 tokens and not beyond.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace fsdpx {

enum class Arch { llama, gpt };
enum class FfnKind { swiglu, gelu, squared_relu };
// Which linear layers carry a bias vector: none (Llama), only Q/K/V (Qwen2), all (GPT-2).
enum class LinearBias { none, qkv, all };

struct ModelSpec {
  std::string name;
  Arch arch = Arch::llama;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;    // usually hidden / heads; Hugging Face configs may set it apart
  std::int64_t ffn_hidden = 0;  // intermediate size of the MLP
  FfnKind ffn_kind = FfnKind::swiglu;
  std::int64_t vocab = 0;
  std::int64_t max_seq = 0;
  bool tied_embeddings = false;
  LinearBias bias = LinearBias::none;
  // RoPE base (llama only; gpt has learned positions): angle t·theta^(-2i/head_dim). 10000 is RoFormer's
  // and Llama 2's base (Su et al. 2021, arXiv:2104.09864); Llama 3 uses 500000, Qwen2 1000000.
  double rope_theta = 10000.0;
  // Epsilon inside RMSNorm (llama) or LayerNorm (gpt): 1e-5 for GPT-2, Llama 2/3 and Mistral; 1e-6 Qwen2.
  double norm_eps = 1e-5;

  std::int64_t q_dim() const { return heads * head_dim; }
  std::int64_t kv_dim() const { return kv_heads * head_dim; }
};

// Parses either format; `file` is used in error messages. Throws ConfigError naming file and path.
ModelSpec parse_model_spec(const nlohmann::json& j, const std::string& file);
// fsdpx's own schema as JSON (round-trips through parse_model_spec).
nlohmann::json model_spec_to_json(const ModelSpec& m);

const char* arch_name(Arch a);
const char* ffn_kind_name(FfnKind f);
// Output width of the MLP's up projection for ffn_hidden `ffn`: gate and up side by side for SwiGLU
// (Shazeer 2020, "GLU Variants Improve Transformer", §2), else `ffn`.
std::int64_t up_projection_width(FfnKind f, std::int64_t ffn);
const char* linear_bias_name(LinearBias b);

}  // namespace fsdpx
