// core/model_spec_hf.cpp — reads Hugging Face config.json files for LlamaForCausalLM,
// MistralForCausalLM, Qwen2ForCausalLM, Phi3ForCausalLM and GPT2LMHeadModel, and the attention of the
// mixture-of-experts families (their experts and DeepSeek-V3: core/model_spec_hf_moe.cpp): shapes, RoPE base and Llama 3.1 RoPE
// scaling, norm epsilon. Informational keys are accepted and math-changing ones refused by the policy in
// core/hf_config_keys.h; any other key is an error. A sliding window in use caps max_seq at the window
// (full causal attention is exact up to it). Leaves out quantized checkpoints.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "core/hf_config_keys.h"
#include "core/json_reader.h"
#include "core/model_spec_hf_moe.h"
#include "core/model_spec.h"
#include "core/rope_scaling_json.h"

namespace fsdpx {

namespace detail {
// Defined in core/model_spec.cpp.
void check_head_layout(const ModelSpec& m, const std::string& file, const std::string& kv_heads_path,
                       const std::string& heads_path, bool head_dim_given);
double read_rope_theta(JsonObject& o, std::string_view key);
double read_norm_eps(JsonObject& o, std::string_view key);
ModelSpec parse_hf_model_spec(const nlohmann::json& j, const std::string& file);
}  // namespace detail

namespace {

using detail::HfFamily;

struct HfArchitecture {
  std::string_view architecture;  // "architectures"[0]
  std::string_view model_type;
  HfFamily family;
};

// Phi3ForCausalLM computes Llama's block: its packed qkv_proj and gate_up_proj hold the same weights as
// q/k/v and gate/up (modeling_phi3.py Phi3Attention, Phi3MLP split them), so shapes and counts are Llama's.
constexpr std::array<HfArchitecture, 9> kSupported{{
    {"LlamaForCausalLM", "llama", HfFamily::llama},
    {"MistralForCausalLM", "mistral", HfFamily::mistral},
    {"Qwen2ForCausalLM", "qwen2", HfFamily::qwen2},
    {"Phi3ForCausalLM", "phi3", HfFamily::phi3},
    {"GPT2LMHeadModel", "gpt2", HfFamily::gpt2},
    {"MixtralForCausalLM", "mixtral", HfFamily::mixtral},
    {"Qwen2MoeForCausalLM", "qwen2_moe", HfFamily::qwen2_moe},
    {"Qwen3MoeForCausalLM", "qwen3_moe", HfFamily::qwen3_moe},
    {"DeepseekV3ForCausalLM", "deepseek_v3", HfFamily::deepseek_v3},
}};

const HfArchitecture& find_architecture(JsonObject& o) {
  if (o.has("architectures")) {
    const auto& a = o.raw("architectures");
    if (!a.is_array() || a.size() != 1 || !a[0].is_string())
      o.fail("architectures", fmt::format("expected an array with one class name, got {}", json_excerpt(a)));
    const auto name = a[0].get<std::string>();
    for (const auto& s : kSupported)
      if (s.architecture == name) return s;
    if (auto why = detail::unmodelled_architecture(name)) o.fail("architectures", *why);
    o.fail("architectures", fmt::format("unsupported architecture {}; supported: LlamaForCausalLM, "
                                        "MistralForCausalLM, Qwen2ForCausalLM, Phi3ForCausalLM, GPT2LMHeadModel, "
                                        "MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, "
                                        "DeepseekV3ForCausalLM",
                                        json_excerpt(a[0])));
  }
  const auto type = o.string("model_type");
  for (const auto& s : kSupported)
    if (s.model_type == type) return s;
  if (auto why = detail::unmodelled_architecture(type)) o.fail("model_type", *why);
  o.fail("model_type", fmt::format("unsupported model_type {}; supported: llama, mistral, qwen2, phi3, gpt2, "
                                   "mixtral, qwen2_moe, qwen3_moe, deepseek_v3",
                                   json_excerpt(nlohmann::json(type))));
}

void check_model_type(JsonObject& o, const HfArchitecture& a) {
  if (!o.has("model_type")) return;
  const auto type = o.string("model_type");
  if (type != a.model_type)
    o.fail("model_type", fmt::format("{} does not match architecture {} (expected \"{}\")",
                                     json_excerpt(nlohmann::json(type)), a.architecture, a.model_type));
}


// Config-class defaults for keys a config.json leaves out: LlamaConfig, MistralConfig and Qwen2Config
// rms_norm_eps 1e-6 and RoPE base 10000; GPT2Config layer_norm_epsilon 1e-5 (transformers
// configuration_*.py). fsdpx's own schema defaults norm_eps to 1e-5 instead (core/model_spec.h).
constexpr double kHfRopeTheta = 10000.0;
constexpr double kHfRmsNormEps = 1e-6;
constexpr double kHfLayerNormEps = 1e-5;

bool present(JsonObject& o, std::string_view key) { return o.has(key) && !o.raw(key).is_null(); }

// An optional size where JSON null means "use the default" (HF writes null for unset).
std::optional<std::int64_t> nullable_size(JsonObject& o, std::string_view key, IntRange range) {
  if (o.has(key) && !present(o, key)) {
    o.ignore(key);
    return std::nullopt;
  }
  return o.optional_integer_in(key, range);
}

// transformers < 5 writes rope_theta and rope_scaling at the top level; 5 moves both into
// rope_parameters (modeling_rope_utils.py standardize_rope_params). Both layouts present and different
// would leave the rotation ambiguous.
struct HfRope {
  double theta = kHfRopeTheta;
  RopeScaling scaling;
};

HfRope hf_rope(JsonObject& o, std::int64_t max_position_embeddings) {
  std::optional<double> top_theta, nested_theta;
  std::optional<RopeScaling> top_scaling, nested_scaling;
  if (present(o, "rope_theta")) top_theta = detail::read_rope_theta(o, "rope_theta");
  if (present(o, "rope_scaling")) {
    JsonObject scaling = o.object("rope_scaling");
    top_scaling = detail::read_hf_rope_scaling(scaling, max_position_embeddings);
    scaling.finish();
  }
  if (present(o, "rope_parameters")) {
    JsonObject params = o.object("rope_parameters");
    if (params.has("rope_theta")) nested_theta = detail::read_rope_theta(params, "rope_theta");
    if (params.has("partial_rotary_factor") && params.number("partial_rotary_factor") != 1.0)
      params.fail("partial_rotary_factor", "RoPE on part of each head is not modelled");
    if (params.has("rope_type") || params.has("type"))
      nested_scaling = detail::read_hf_rope_scaling(params, max_position_embeddings);
    params.finish();
  }
  if (top_theta && nested_theta && *top_theta != *nested_theta)
    o.fail("rope_parameters", fmt::format("rope_theta {} differs from the top-level rope_theta {}",
                                          *nested_theta, *top_theta));
  if (top_scaling && nested_scaling && *top_scaling != *nested_scaling)
    o.fail("rope_parameters", "its RoPE scaling differs from the top-level rope_scaling");
  return {nested_theta.value_or(top_theta.value_or(kHfRopeTheta)),
          nested_scaling.value_or(top_scaling.value_or(RopeScaling{}))};
}

double hf_norm_eps(JsonObject& o, std::string_view key, double fallback) {
  return present(o, key) ? detail::read_norm_eps(o, key) : fallback;
}

// "_name_or_path" when present, else the file stem; for ".../<model>/config.json" the folder name.
std::string hf_model_name(JsonObject& o, const std::string& file) {
  if (o.has("_name_or_path")) {
    auto name = o.string("_name_or_path");
    if (!name.empty()) return name;
  }
  const std::filesystem::path p(file);
  if (p.stem() == "config" && p.has_parent_path() && !p.parent_path().filename().empty())
    return p.parent_path().filename().string();
  return p.stem().string();
}

LinearBias llama_bias(JsonObject& o, HfFamily family) {
  // Qwen2Attention hard-codes bias=True on q/k/v and False on o_proj (modeling_qwen2.py); so does
  // Qwen2MoeAttention (modeling_qwen2_moe.py).
  if (family == HfFamily::qwen2 || family == HfFamily::qwen2_moe) return LinearBias::qkv;
  const bool attention = o.optional_boolean("attention_bias").value_or(false);
  const bool mlp = o.optional_boolean("mlp_bias").value_or(false);
  if (attention == mlp) return attention ? LinearBias::all : LinearBias::none;
  // Llama's attention_bias also biases o_proj, which LinearBias::qkv does not describe.
  o.fail(attention ? "attention_bias" : "mlp_bias",
         "attention_bias and mlp_bias must be equal (fsdpx models no bias, or bias on every linear layer)");
}

ModelSpec parse_llama_family(JsonObject& o, HfFamily family) {
  ModelSpec m;
  m.arch = Arch::llama;
  m.hidden = o.integer_in("hidden_size", input_range::kHidden);
  m.layers = o.integer_in("num_hidden_layers", input_range::kLayers);
  m.heads = o.integer_in("num_attention_heads", input_range::kHeads);
  // HF writes null for unset sizes: null means the default. num_key_value_heads' default is MHA.
  m.kv_heads = nullable_size(o, "num_key_value_heads", input_range::kHeads).value_or(m.heads);
  m.ffn_hidden = o.integer_in("intermediate_size", input_range::kFfnHidden);
  m.vocab = o.integer_in("vocab_size", input_range::kVocab);
  m.max_seq = o.integer_in("max_position_embeddings", input_range::kMaxSeq);
  m.tied_embeddings = o.optional_boolean("tie_word_embeddings").value_or(false);  // class default False
  if (o.has("hidden_act")) o.choice("hidden_act", {"silu"});                      // class default "silu"
  m.ffn_kind = FfnKind::swiglu;  // LlamaMLP: down(act(gate(x)) * up(x)); with SiLU that is SwiGLU
  m.bias = llama_bias(o, family);
  const HfRope rope = hf_rope(o, m.max_seq);
  m.rope_theta = rope.theta;
  m.rope_scaling = rope.scaling;
  m.norm_eps = hf_norm_eps(o, "rms_norm_eps", kHfRmsNormEps);
  const auto head_dim = nullable_size(o, "head_dim", input_range::kHeadDim);
  detail::check_head_layout(m, o.file(), "/num_key_value_heads", "/num_attention_heads",
                            head_dim.has_value());
  m.head_dim = head_dim.value_or(m.hidden / m.heads);
  // With seq <= window every query sees all earlier keys, so full causal attention is exact there.
  if (const auto window = detail::sliding_window_in_use(o, family)) m.max_seq = std::min(m.max_seq, *window);
  return m;
}

ModelSpec parse_gpt2(JsonObject& o) {
  ModelSpec m;
  m.arch = Arch::gpt;
  m.hidden = o.integer_in("n_embd", input_range::kHidden);
  m.layers = o.integer_in("n_layer", input_range::kLayers);
  m.heads = o.integer_in("n_head", input_range::kHeads);
  m.kv_heads = m.heads;
  // n_positions is the learned position table; old configs only carry n_ctx (same meaning).
  m.max_seq = o.integer_in(o.has("n_positions") ? "n_positions" : "n_ctx", input_range::kMaxSeq);
  m.vocab = o.integer_in("vocab_size", input_range::kVocab);
  // GPT2MLP: n_inner, or 4*n_embd when it is null or absent.
  m.ffn_hidden = nullable_size(o, "n_inner", input_range::kFfnHidden).value_or(4 * m.hidden);
  if (o.has("activation_function"))
    o.choice("activation_function", {"gelu_new", "gelu", "gelu_fast", "gelu_pytorch_tanh"});
  m.ffn_kind = FfnKind::gelu;
  m.tied_embeddings = o.optional_boolean("tie_word_embeddings").value_or(true);  // lm_head = wte
  m.bias = LinearBias::all;
  m.norm_eps = hf_norm_eps(o, "layer_norm_epsilon", kHfLayerNormEps);
  detail::check_head_layout(m, o.file(), "/n_head", "/n_head", false);
  m.head_dim = m.hidden / m.heads;
  if (o.has("n_ctx")) o.ignore("n_ctx");  // the same as n_positions where both are present
  return m;
}

}  // namespace

ModelSpec detail::parse_hf_model_spec(const nlohmann::json& j, const std::string& file) {
  JsonObject o(j, file);
  const HfArchitecture& a = find_architecture(o);
  check_model_type(o, a);
  detail::refuse_unmodelled_keys(o, a.family);
  ModelSpec m = a.family == HfFamily::gpt2          ? parse_gpt2(o)
                : a.family == HfFamily::deepseek_v3 ? detail::parse_hf_deepseek_v3(o)
                                                    : parse_llama_family(o, a.family);
  if (a.family == HfFamily::mixtral || a.family == HfFamily::qwen2_moe || a.family == HfFamily::qwen3_moe)
    detail::read_hf_moe_keys(o, a.family, m);
  m.name = hf_model_name(o, file);
  detail::accept_informational_keys(o, a.family);
  o.finish();
  check_model_size(m, file);
  return m;
}

}  // namespace fsdpx
