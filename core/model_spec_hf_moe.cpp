// core/model_spec_hf_moe.cpp — the expert keys of MixtralConfig, Qwen2MoeConfig and Qwen3MoeConfig, and a
// whole DeepseekV3Config, as transformers' modelling code uses them (modeling_mixtral.py
// MixtralSparseMoeBlock, modeling_qwen2_moe.py Qwen2MoeSparseMoeBlock, modeling_qwen3_moe.py, and
// modeling_deepseek_v3.py DeepseekV3Attention, DeepseekV3MoE, DeepseekV3TopkRouter). Leaves out MoE layers
// interleaved with dense ones (decoder_sparse_step > 1, mlp_only_layers, moe_layer_freq > 1: refused) and
// DeepSeek's multi-token-prediction module.
#include "core/model_spec_hf_moe.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/model_spec_moe.h"
#include "core/rope_scaling_json.h"

namespace fsdpx::detail {

// Defined in core/model_spec.cpp.
double read_rope_theta(JsonObject& o, std::string_view key);
double read_norm_eps(JsonObject& o, std::string_view key);

namespace {

constexpr IntRange kCount{0, input_range::kExperts.max};
constexpr IntRange kDenseLayers{0, input_range::kLayers.max};

bool present(JsonObject& o, std::string_view key) { return o.has(key) && !o.raw(key).is_null(); }

// Transformers adds the load-balancing loss only when output_router_logits is true
// (MixtralForCausalLM.forward: loss += router_aux_loss_coef * aux_loss); otherwise its weight is 0.
double hf_aux_loss_coef(JsonObject& o) {
  const double coef = o.optional_number_in("router_aux_loss_coef", input_range::kMoeCoefficient).value_or(0.001);
  const bool on = o.has("output_router_logits") && o.optional_boolean("output_router_logits").value_or(false);
  return on ? coef : 0.0;
}

// Qwen2MoeDecoderLayer: a sparse block where (layer + 1) % decoder_sparse_step == 0 and the layer is not
// in mlp_only_layers. fsdpx models every layer sparse.
void refuse_interleaved_qwen_layers(JsonObject& o) {
  if (o.optional_integer_in("decoder_sparse_step", input_range::kLayers).value_or(1) != 1)
    o.fail("decoder_sparse_step", "MoE layers interleaved with dense ones are not modelled (expected 1)");
  if (present(o, "mlp_only_layers") && !o.array("mlp_only_layers").empty())
    o.fail("mlp_only_layers", "dense layers among the MoE layers are not modelled (expected [])");
  if (o.has("mlp_only_layers")) o.ignore("mlp_only_layers");
}

void read_qwen_moe(JsonObject& o, HfFamily family, MoeSpec& e) {
  e.experts = o.integer_in("num_experts", input_range::kExperts);
  e.top_k = o.integer_in("num_experts_per_tok", input_range::kExperts);
  e.expert_ffn_hidden = o.integer_in("moe_intermediate_size", input_range::kFfnHidden);
  e.norm_topk_prob = o.optional_boolean("norm_topk_prob").value_or(false);  // both config classes: False
  refuse_interleaved_qwen_layers(o);
  if (family == HfFamily::qwen2_moe) {
    // Qwen2MoeSparseMoeBlock: one shared expert, scaled by sigmoid(shared_expert_gate(x)).
    e.shared_ffn_hidden = o.integer_in("shared_expert_intermediate_size", input_range::kFfnHidden);
    e.shared_experts = 1;
    e.shared_expert_gate = true;
  }
}

}  // namespace

void read_hf_moe_keys(JsonObject& o, HfFamily family, ModelSpec& m) {
  MoeSpec& e = m.moe;
  e.scoring = RouterScoring::softmax;
  if (m.bias == LinearBias::all)  // attention_bias and mlp_bias both true: the experts are bias-free
    o.fail("mlp_bias", "biases on the expert MLPs are not modelled (expected false)");
  if (family == HfFamily::mixtral) {
    // MixtralSparseMoeBlock: softmax over the experts, top-k, weights renormalised; each expert is
    // intermediate_size wide.
    e.experts = o.integer_in("num_local_experts", input_range::kExperts);
    e.top_k = o.integer_in("num_experts_per_tok", input_range::kExperts);
    e.expert_ffn_hidden = m.ffn_hidden;
    e.norm_topk_prob = true;
    if (o.optional_number_in("router_jitter_noise", NumberRange{0.0, 1.0}).value_or(0.0) != 0.0)
      o.fail("router_jitter_noise", "multiplicative router jitter in training is not modelled (expected 0)");
  } else {
    read_qwen_moe(o, family, e);
  }
  m.qk_norm = family == HfFamily::qwen3_moe;  // Qwen3MoeAttention: q_norm, k_norm over head_dim
  e.aux_loss_coef = hf_aux_loss_coef(o);
  const std::string experts = o.path_of(family == HfFamily::mixtral ? "num_local_experts" : "num_experts");
  check_moe_layout(m, o.file(), {experts, o.path_of("num_experts_per_tok"), experts, o.path_of("num_hidden_layers"),
                                 o.path_of("shared_expert_intermediate_size"), o.path_of("head_dim")});
}

namespace {

// DeepseekV3Attention: q_a_proj, q_a_layernorm, q_b_proj (or q_proj without q_lora_rank), kv_a_proj_with_mqa,
// kv_a_layernorm, kv_b_proj, o_proj; biases only with attention_bias, which fsdpx refuses.
void read_deepseek_mla(JsonObject& o, ModelSpec& m) {
  MlaSpec& a = m.mla;
  a.q_lora_rank = 0;
  if (present(o, "q_lora_rank")) a.q_lora_rank = o.integer_in("q_lora_rank", input_range::kLatentRank);
  else if (o.has("q_lora_rank")) o.ignore("q_lora_rank");  // null: DeepSeek-V2-Lite's direct q_proj
  a.kv_lora_rank = o.integer_in("kv_lora_rank", input_range::kLatentRank);
  a.qk_rope_head_dim = o.integer_in("qk_rope_head_dim", input_range::kHeadDim);
  a.qk_nope_head_dim = o.integer_in("qk_nope_head_dim", input_range::kHeadDim);
  a.v_head_dim = o.integer_in("v_head_dim", input_range::kHeadDim);
  if (o.optional_boolean("attention_bias").value_or(false))
    o.fail("attention_bias", "biases on the latent attention projections are not modelled (expected false)");
  m.heads = o.integer_in("num_attention_heads", input_range::kHeads);
  // MLA gives every head its own key and value from the latent: num_key_value_heads is not read by the model.
  if (o.has("num_key_value_heads")) o.ignore("num_key_value_heads");
  m.kv_heads = m.heads;
  m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;  // the query/key head size (DeepseekV3Config qk_head_dim)
  if (present(o, "qk_head_dim") && o.integer("qk_head_dim") != m.head_dim)
    o.fail("qk_head_dim", fmt::format("expected qk_nope_head_dim + qk_rope_head_dim = {}", m.head_dim));
  if (present(o, "head_dim") && o.integer("head_dim") != a.qk_rope_head_dim)
    o.fail("head_dim", fmt::format("DeepseekV3Config sets head_dim = qk_rope_head_dim ({})", a.qk_rope_head_dim));
}

// DeepseekV3MoE and DeepseekV3TopkRouter: sigmoid scores plus e_score_correction_bias choose top-k experts
// within topk_group of n_group groups; weights renormalised (norm_topk_prob) and scaled by
// routed_scaling_factor; n_shared_experts shared experts of moe_intermediate_size each.
void read_deepseek_moe(JsonObject& o, ModelSpec& m) {
  MoeSpec& e = m.moe;
  e.experts = o.integer_in("n_routed_experts", input_range::kExperts);
  e.top_k = o.integer_in("num_experts_per_tok", input_range::kExperts);
  e.expert_ffn_hidden = o.integer_in("moe_intermediate_size", input_range::kFfnHidden);
  e.shared_experts = o.optional_integer_in("n_shared_experts", kCount).value_or(0);
  e.shared_ffn_hidden = e.shared_experts > 0 ? e.expert_ffn_hidden : 0;
  e.dense_layers = o.optional_integer_in("first_k_dense_replace", kDenseLayers).value_or(0);
  if (o.optional_integer_in("moe_layer_freq", input_range::kLayers).value_or(1) != 1)
    o.fail("moe_layer_freq", "MoE layers interleaved with dense ones are not modelled (expected 1)");
  if (o.has("scoring_func")) o.choice("scoring_func", {"sigmoid"});  // DeepseekV3TopkRouter: sigmoid only
  if (o.has("topk_method")) o.choice("topk_method", {"noaux_tc"});   // the bias-corrected group top-k
  e.scoring = RouterScoring::sigmoid;
  e.score_correction_bias = true;
  e.norm_topk_prob = o.optional_boolean("norm_topk_prob").value_or(true);
  e.groups = o.optional_integer_in("n_group", input_range::kExperts).value_or(1);
  e.topk_groups = o.optional_integer_in("topk_group", input_range::kExperts).value_or(1);
  e.routed_scaling = o.optional_number_in("routed_scaling_factor", input_range::kMoeCoefficient).value_or(1.0);
  e.aux_loss_coef = o.optional_number_in("aux_loss_alpha", input_range::kMoeCoefficient).value_or(0.0);
}

// rope_theta and rope_scaling (DeepSeek-V3: type "yarn"), read as for the Llama family
// (core/rope_scaling_json.h): the frequencies and cos/sin scale (executor/model/rope_table.h) and, with
// mscale_all_dim, the softmax scale (DeepseekV3Attention, yarn_apply_mscale).
void read_deepseek_rope(JsonObject& o, ModelSpec& m) {
  m.rope_theta = present(o, "rope_theta") ? read_rope_theta(o, "rope_theta") : 10000.0;
  if (!present(o, "rope_scaling")) {
    if (o.has("rope_scaling")) o.ignore("rope_scaling");
    return;
  }
  JsonObject r = o.object("rope_scaling");
  m.rope_scaling = read_hf_rope_scaling(r, m.max_seq);
  r.finish();
}

}  // namespace

ModelSpec parse_hf_deepseek_v3(JsonObject& o) {
  ModelSpec m;
  m.arch = Arch::llama;
  m.hidden = o.integer_in("hidden_size", input_range::kHidden);
  m.layers = o.integer_in("num_hidden_layers", input_range::kLayers);
  m.ffn_hidden = o.integer_in("intermediate_size", input_range::kFfnHidden);  // the dense leading layers
  m.vocab = o.integer_in("vocab_size", input_range::kVocab);
  m.max_seq = o.integer_in("max_position_embeddings", input_range::kMaxSeq);
  m.tied_embeddings = o.optional_boolean("tie_word_embeddings").value_or(false);
  if (o.has("hidden_act")) o.choice("hidden_act", {"silu"});
  m.ffn_kind = FfnKind::swiglu;
  m.bias = LinearBias::none;
  m.norm_eps = present(o, "rms_norm_eps") ? read_norm_eps(o, "rms_norm_eps") : 1e-6;
  read_deepseek_mla(o, m);
  read_deepseek_moe(o, m);
  read_deepseek_rope(o, m);
  check_moe_layout(m, o.file(), {o.path_of("n_routed_experts"), o.path_of("num_experts_per_tok"), o.path_of("n_group"),
                                 o.path_of("first_k_dense_replace"), o.path_of("n_shared_experts"),
                                 o.path_of("qk_nope_head_dim")});
  return m;
}

}  // namespace fsdpx::detail
