// core/hf_config_keys.cpp — key policy for Hugging Face config.json files. Informational keys come
// from transformers' PretrainedConfig (configuration_utils.py) and the LlamaConfig, MistralConfig,
// Qwen2Config, Phi3Config, GPT2Config, MixtralConfig, Qwen2MoeConfig, Qwen3MoeConfig and DeepseekV3Config classes; each group says why it cannot change what fsdpx computes.
// Leaves out values fsdpx reads itself (shapes, rope_theta, rope_scaling, norm epsilons: model_spec_hf.cpp).
#include "core/hf_config_keys.h"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>
#include <string>

namespace fsdpx::detail {
namespace {

enum FamilyMask : unsigned {
  kLlama = 1, kMistral = 2, kQwen2 = 4, kGpt2 = 8, kPhi3 = 16,
  kMixtral = 32, kQwen2Moe = 64, kQwen3Moe = 128, kDeepseekV3 = 256,
};
constexpr unsigned kMoe = kMixtral | kQwen2Moe | kQwen3Moe | kDeepseekV3;
constexpr unsigned kQwenMoe = kQwen2Moe | kQwen3Moe;
constexpr unsigned kAll = kLlama | kMistral | kQwen2 | kPhi3 | kGpt2 | kMoe;
constexpr unsigned kLlamaLike = kLlama | kMistral | kQwen2 | kPhi3 | kMoe;

unsigned mask_of(HfFamily f) {
  switch (f) {
    case HfFamily::llama: return kLlama;
    case HfFamily::mistral: return kMistral;
    case HfFamily::qwen2: return kQwen2;
    case HfFamily::phi3: return kPhi3;
    case HfFamily::gpt2: return kGpt2;
    case HfFamily::mixtral: return kMixtral;
    case HfFamily::qwen2_moe: return kQwen2Moe;
    case HfFamily::qwen3_moe: return kQwen3Moe;
    case HfFamily::deepseek_v3: return kDeepseekV3;
  }
  return 0;
}

struct InformationalKeys {
  unsigned families;
  std::string_view why;  // documentation: why the keys cannot change the model's math
  std::initializer_list<std::string_view> keys;
};

// clang-format off
const std::array<InformationalKeys, 10> kInformational{{
    {kAll, "PretrainedConfig bookkeeping, token ids and generation defaults: read by tokenizers and generate()",
     {"_name_or_path", "architectures", "model_type", "torch_dtype", "dtype", "transformers_version",
      "return_dict", "output_hidden_states", "output_attentions", "torchscript", "use_bfloat16",
      "tf_legacy_loss", "pruned_heads", "chunk_size_feed_forward", "is_encoder_decoder", "is_decoder",
      "cross_attention_hidden_size", "add_cross_attention", "tie_encoder_decoder", "finetuning_task",
      "id2label", "label2id", "num_labels", "problem_type", "tokenizer_class", "prefix", "bos_token_id",
      "pad_token_id", "eos_token_id", "sep_token_id", "decoder_start_token_id", "task_specific_params",
      "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
      "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty",
      "length_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids",
      "num_return_sequences", "use_cache"}},
    {kAll, "initialisation of fresh weights (fsdpx initialises its own, executor/model/param_init)",
     {"initializer_range"}},
    {kLlamaLike, "dropout: a training-time regulariser fsdpx does not apply; shapes, FLOPs and memory are "
     "unchanged", {"attention_dropout"}},
    {kGpt2, "dropout (as above) and GPT2DoubleHeadsModel's sequence-summary head, absent from the LM",
     {"resid_pdrop", "embd_pdrop", "attn_pdrop", "summary_type", "summary_use_proj", "summary_activation",
      "summary_proj_to_labels", "summary_first_dropout", "reorder_and_upcast_attn"}},
    {kMoe, "output_router_logits: whether forward returns the router logits and, in transformers, adds the "
     "auxiliary loss (read by core/model_spec_hf_moe.cpp with router_aux_loss_coef where the family has one)",
     {"output_router_logits"}},
    {kDeepseekV3, "DeepseekV3Config (configuration_deepseek_v3.py): inference expert-parallel size (ep_size); the "
     "multi-token-prediction module (num_nextn_predict_layers: left out, as the 671B count leaves it out); the fp8 "
     "block format of the published weights (quantization_config: shapes unchanged, fsdpx trains in its own "
     "precision); interleaved RoPE layout (rope_interleave: the same rotation, pairs stored apart); derived head "
     "sizes (head_dim = qk_rope_head_dim, qk_head_dim = nope + rope, checked by the reader); remote-code class names",
     {"ep_size", "num_nextn_predict_layers", "quantization_config", "rope_interleave", "auto_map"}},
    {kDeepseekV3, "the sequence-wise form of the balance loss (seq_aux; §2.1.2 of arXiv:2412.19437): the same "
     "loss weight, computed per sequence", {"seq_aux"}},
    {kLlama | kDeepseekV3, "pretraining_tp splits each matmul into slices that sum to the same product "
     "(modeling_llama.py before transformers 4.45)", {"pretraining_tp"}},
    {kLlamaLike, "tensor- and pipeline-parallel plans for transformers' own sharding", {"base_model_tp_plan",
     "base_model_pp_plan"}},
    {kPhi3, "Phi3Config (configuration_phi3.py): residual and embedding dropout (as above); the pre-extension "
     "context that only LongRoPE scaling reads (rope_scaling, read by fsdpx, refuses that type); the remote-code "
     "class names of checkpoints published before transformers 4.40 built Phi-3 itself",
     {"resid_pdrop", "embd_pdrop", "original_max_position_embeddings", "auto_map"}},
}};

// Keys that turn on something fsdpx does not model in `families`, whatever their value; "why" ends the
// message. The mixture-of-experts families read their own expert keys (core/model_spec_hf_moe.cpp).
struct RefusedKey {
  unsigned families;
  std::string_view key;
  std::string_view why;
};
constexpr unsigned kDense = kAll & ~kMoe;
constexpr std::string_view kNoExperts =
    "mixture-of-experts keys in a dense architecture (MoE is read for Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V3)";
const std::array<RefusedKey, 8> kRefused{{
    {kDense, "num_local_experts", kNoExperts},
    {kDense, "num_experts", kNoExperts},
    {kDense, "num_experts_per_tok", kNoExperts},
    {kDense, "moe_intermediate_size", kNoExperts},
    {kDense | kMixtral | kQwenMoe, "n_routed_experts", kNoExperts},
    {kDense | kMixtral | kQwenMoe, "kv_lora_rank", "latent attention is read for DeepSeek-V3 only"},
    {kAll, "attn_logit_softcapping", "attention logit soft-capping is not modelled"},
    {kAll, "final_logit_softcapping", "final logit soft-capping is not modelled"},
}};
// clang-format on

struct Unmodelled {
  std::string_view architecture, model_type;
  std::string_view missing;
};
const std::array<Unmodelled, 5> kUnmodelled{{
    {"Gemma2ForCausalLM", "gemma2",
     "Gemma-2 is not modelled: fsdpx lacks attention and final logit soft-capping, alternating local "
     "sliding-window layers, GeGLU MLPs (gelu_pytorch_tanh), norms after attention and MLP, and "
     "embeddings scaled by sqrt(hidden_size)"},
    {"GemmaForCausalLM", "gemma",
     "Gemma is not modelled: fsdpx lacks GeGLU MLPs (gelu_pytorch_tanh) and embeddings scaled by "
     "sqrt(hidden_size)"},
    {"Qwen3ForCausalLM", "qwen3",
     "Qwen-3 is not modelled: fsdpx lacks its RMSNorm of each head's queries and keys before RoPE (q_norm and "
     "k_norm, head_dim weights each per layer: modeling_qwen3.py Qwen3Attention)"},
    {"Olmo2ForCausalLM", "olmo2",
     "OLMo-2 is not modelled: fsdpx lacks its norms after attention and MLP instead of before them "
     "(post_attention_layernorm, post_feedforward_layernorm) and its RMSNorm of the whole query and key "
     "projections (q_norm, k_norm: modeling_olmo2.py)"},
    {"Qwen2VLForConditionalGeneration", "qwen2_vl",
     "Qwen2-VL is multimodal: fsdpx lacks the vision tower and multimodal RoPE (mrope_section)"},
}};

}  // namespace

void accept_informational_keys(JsonObject& o, HfFamily family) {
  for (const auto& group : kInformational)
    if (group.families & mask_of(family))
      for (auto k : group.keys)
        if (o.has(k)) o.ignore(k);
}

void refuse_unmodelled_keys(JsonObject& o, HfFamily family) {
  for (const auto& r : kRefused)
    if ((r.families & mask_of(family)) && o.has(r.key) && !o.raw(r.key).is_null()) o.fail(r.key, r.why);
  if (family == HfFamily::gpt2) {
    // GPT2Attention: scores divided by sqrt(head_dim) (scale_attn_weights, default true) and not also by
    // the layer index (scale_attn_by_inverse_layer_idx, default false) -- what fsdpx computes.
    if (!o.optional_boolean("scale_attn_weights").value_or(true))
      o.fail("scale_attn_weights", "unscaled attention scores are not modelled (fsdpx divides by sqrt(head_dim))");
    if (o.optional_boolean("scale_attn_by_inverse_layer_idx").value_or(false))
      o.fail("scale_attn_by_inverse_layer_idx", "attention scaled by 1/(layer index + 1) is not modelled");
    return;
  }
  if (o.optional_boolean("use_mrope").value_or(false))
    o.fail("use_mrope", "multimodal RoPE (Qwen2-VL's mrope_section) is not modelled; fsdpx models 1-D RoPE");
  if (o.has("partial_rotary_factor") && o.number("partial_rotary_factor") != 1.0)
    o.fail("partial_rotary_factor", "RoPE on part of each head is not modelled; fsdpx rotates the whole head");
  if (o.has("layer_types") && !o.raw("layer_types").is_null())
    for (const auto& [v, path] : o.array("layer_types"))
      if (*v != "full_attention")
        throw_config_error(o.file(), path,
                           fmt::format("layer type {} is not modelled; fsdpx models \"full_attention\" layers",
                                       v->dump()));
}

std::optional<std::int64_t> sliding_window_in_use(JsonObject& o, HfFamily family) {
  if (family == HfFamily::gpt2 || family == HfFamily::deepseek_v3) return std::nullopt;
  // Qwen2Config (and Qwen2Moe/Qwen3MoeConfig): the window applies only with use_sliding_window, from layer
  // max_window_layers on.
  bool on = true;
  if (mask_of(family) & (kQwen2 | kQwenMoe)) {
    on = o.optional_boolean("use_sliding_window").value_or(false);
    if (o.has("max_window_layers")) o.ignore("max_window_layers");
  }
  if (!o.has("sliding_window") || o.raw("sliding_window").is_null()) return std::nullopt;
  const std::int64_t window = o.positive_integer("sliding_window");
  return on ? std::optional(window) : std::nullopt;
}

std::optional<std::string_view> unmodelled_architecture(std::string_view name) {
  for (const auto& u : kUnmodelled)
    if (u.architecture == name || u.model_type == name) return u.missing;
  return std::nullopt;
}

}  // namespace fsdpx::detail
