// core/model_spec.h — a decoder-only transformer: llama (RMSNorm, RoPE, SwiGLU, GQA) or gpt
// (LayerNorm, GELU MLP, learned positions). Loads fsdpx's own JSON and Hugging Face config.json files
// (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel), detected by content.
// Models Llama 3.1's RoPE frequency scaling (rope_type "llama3"). Leaves out mixture-of-experts,
// sliding-window attention (a model whose window is in use gets max_seq = the window, where full causal
// attention is exact), multimodal towers and the other RoPE scaling types (linear, dynamic NTK, YaRN).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace fsdpx {

enum class Arch { llama, gpt };
enum class FfnKind { swiglu, gelu, squared_relu };
// Which linear layers carry a bias vector: none (Llama), only Q/K/V (Qwen2), all (GPT-2).
enum class LinearBias { none, qkv, all };

// Llama 3.1 RoPE frequency scaling (rope_type "llama3"): inverse frequencies whose wavelength exceeds
// original_max_seq / low_freq_factor are divided by factor, those below original_max_seq /
// high_freq_factor are kept, and those between are interpolated (meta-llama/llama-models
// models/llama3/reference_impl/model.py apply_scaling; transformers modeling_rope_utils.py
// _compute_llama3_parameters). Llama 3.1: factor 8, low 1, high 4, original 8192; Llama 3.2: factor 32.
enum class RopeScalingKind { none, llama3 };
struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::none;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 1.0;
  std::int64_t original_max_seq = 0;  // tokens: the context length before scaling
};
// Written out (no defaulted comparison): CUDA sources include this header as C++17.
inline bool operator==(const RopeScaling& a, const RopeScaling& b) {
  return a.kind == b.kind && a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
         a.high_freq_factor == b.high_freq_factor && a.original_max_seq == b.original_max_seq;
}
inline bool operator!=(const RopeScaling& a, const RopeScaling& b) { return !(a == b); }

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
  RopeScaling rope_scaling;  // llama only
  // Epsilon inside RMSNorm (llama) or LayerNorm (gpt): 1e-5 for GPT-2, Llama 2/3 and Mistral; 1e-6 Qwen2.
  double norm_eps = 1e-5;

  std::int64_t q_dim() const { return heads * head_dim; }
  std::int64_t kv_dim() const { return kv_heads * head_dim; }
};

// Parses either format; `file` is used in error messages. Throws ConfigError naming file and path.
ModelSpec parse_model_spec(const nlohmann::json& j, const std::string& file);
// Rejects a model whose shapes, each within its range (core/input_ranges.h), add up to more parameters
// than input_range::kMaxModelParams (ConfigError "<file>: <path>: ..."; the model's root path). Every
// reader calls it.
void check_model_size(const ModelSpec& m, const std::string& file, const std::string& path = "/");
// fsdpx's own schema as JSON (round-trips through parse_model_spec).
nlohmann::json model_spec_to_json(const ModelSpec& m);

const char* arch_name(Arch a);
const char* ffn_kind_name(FfnKind f);
// Output width of the MLP's up projection for ffn_hidden `ffn`: gate and up side by side for SwiGLU
// (Shazeer 2020, "GLU Variants Improve Transformer", §2), else `ffn`.
std::int64_t up_projection_width(FfnKind f, std::int64_t ffn);
const char* linear_bias_name(LinearBias b);

}  // namespace fsdpx
