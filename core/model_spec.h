// core/model_spec.h — a decoder-only transformer: llama (RMSNorm, RoPE, SwiGLU, GQA) or gpt
// (LayerNorm, GELU MLP, learned positions). Loads fsdpx's own JSON and Hugging Face config.json files
// (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel; mixture-of-experts:
// MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, DeepseekV3ForCausalLM with its latent
// attention), detected by content. Models Llama 3.1's RoPE frequency scaling (rope_type "llama3") and YaRN
// ("yarn", DeepSeek-V3). Leaves out sliding-window attention (a model whose window is in use gets max_seq =
// the window, where full causal attention is exact), multimodal towers and the other RoPE scaling types
// (linear, dynamic NTK, LongRoPE).
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
// YaRN (rope_type "yarn"; Peng et al. 2023, arXiv:2309.00071 §3.2-3.4; transformers modeling_rope_utils.py
// _compute_yarn_parameters): inverse frequencies slowed by `factor`, except those that turn more than
// beta_slow times over original_max_seq, blended by a linear ramp up to beta_fast turns and kept beyond;
// cos/sin scaled by an attention factor (given, or 0.1·ln(factor)·mscale + 1 over the same with
// mscale_all_dim). DeepSeek-V3: factor 40, original 4096, beta 32 / 1, mscale 1, mscale_all_dim 1.
enum class RopeScalingKind { none, llama3, yarn };
struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::none;
  double factor = 1.0;
  double low_freq_factor = 1.0;       // llama3 only
  double high_freq_factor = 1.0;      // llama3 only
  std::int64_t original_max_seq = 0;  // tokens: the context length before scaling
  double beta_fast = 32.0;            // yarn: turns over original_max_seq above which a frequency is kept
  double beta_slow = 1.0;             // yarn: turns below which it is divided by factor
  double mscale = 0.0;                // yarn: 0 when absent (transformers treats 0 and absent alike)
  double mscale_all_dim = 0.0;        // yarn: 0 when absent; DeepSeek's softmax scale reads it too
  double attention_factor = 0.0;      // yarn: the cos/sin scale as given; 0: computed from factor and mscales
  bool truncate = true;               // yarn: the ramp's ends rounded out to whole dims (floor, ceil)
};
// Written out (no defaulted comparison): CUDA sources include this header as C++17.
inline bool operator==(const RopeScaling& a, const RopeScaling& b) {
  return a.kind == b.kind && a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
         a.high_freq_factor == b.high_freq_factor && a.original_max_seq == b.original_max_seq &&
         a.beta_fast == b.beta_fast && a.beta_slow == b.beta_slow && a.mscale == b.mscale &&
         a.mscale_all_dim == b.mscale_all_dim && a.attention_factor == b.attention_factor &&
         a.truncate == b.truncate;
}
inline bool operator!=(const RopeScaling& a, const RopeScaling& b) { return !(a == b); }

// Router scoring of a mixture-of-experts layer: softmax over all experts (Mixtral, Qwen-MoE) or a sigmoid
// per expert (DeepSeek-V3, arXiv:2412.19437 §2.1.2).
enum class RouterScoring { softmax, sigmoid };

// Mixture-of-experts MLPs (core/model_spec_moe.h reads and writes them). Every routed and shared expert is a
// SwiGLU MLP without biases (modeling_mixtral.py MixtralBlockSparseTop2MLP, modeling_qwen3_moe.py
// Qwen3MoeMLP, modeling_deepseek_v3.py DeepseekV3MLP); the router is one hidden x experts matrix.
struct MoeSpec {
  std::int64_t experts = 0;            // routed experts per MoE layer; 0: a dense model
  std::int64_t top_k = 0;              // routed experts each token passes through
  std::int64_t expert_ffn_hidden = 0;  // intermediate size of one routed expert
  std::int64_t shared_experts = 0;     // experts every token passes through (DeepSeekMoE, Qwen2-MoE)
  std::int64_t shared_ffn_hidden = 0;  // intermediate size of one shared expert
  bool shared_expert_gate = false;     // Qwen2-MoE: sigmoid(x w), w hidden x 1, scales the shared expert
  std::int64_t dense_layers = 0;       // leading blocks with a dense ffn_hidden MLP (first_k_dense_replace)
  RouterScoring scoring = RouterScoring::softmax;
  bool norm_topk_prob = false;         // the top-k weights renormalised to sum to 1
  bool score_correction_bias = false;  // DeepSeek-V3: a per-expert bias for selection only (§2.1.2)
  std::int64_t groups = 1;             // DeepSeek-V3 group-limited routing: expert groups (n_group) ...
  std::int64_t topk_groups = 1;        // ... of which each token may use topk_groups
  double routed_scaling = 1.0;         // routed output scale (DeepSeek-V3 routed_scaling_factor 2.5)
  double capacity_factor = 0.0;        // tokens an expert takes, x its fair share; 0: dropless
  double aux_loss_coef = 0.0;          // load-balancing loss weight (0: none, or aux-loss-free)
};

// DeepSeek's multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1; modeling_deepseek_v3.py
// DeepseekV3Attention): queries through a q_lora_rank bottleneck, keys and values from one kv_lora_rank
// latent plus a shared qk_rope_head_dim RoPE key.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;   // 0: queries projected from hidden directly
  std::int64_t kv_lora_rank = 0;  // 0: not MLA
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

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
  RopeScaling rope_scaling;  // llama only (DeepSeek-V3's YaRN included)
  // Epsilon inside RMSNorm (llama) or LayerNorm (gpt): 1e-5 for GPT-2, Llama 2/3 and Mistral; 1e-6 Qwen2.
  double norm_eps = 1e-5;
  // RMSNorm of each head's queries and keys before RoPE (Qwen3: q_norm, k_norm of head_dim weights).
  bool qk_norm = false;
  MoeSpec moe;  // experts == 0: dense MLPs
  MlaSpec mla;  // kv_lora_rank == 0: multi-head (or grouped-query) attention

  bool is_moe() const { return moe.experts > 0; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
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
