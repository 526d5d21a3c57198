// core/model_spec_moe.cpp — fsdpx's own schema for mixture-of-experts MLPs ("moe"), multi-head latent
// attention ("mla") and per-head query/key norms ("qk_norm"); the layout rules both readers share; and the
// reasons the simulator still refuses some of these parts (issue 30). YaRN is RoPE scaling
// (core/rope_scaling_json.h).
// Leaves out the Hugging Face keys (core/model_spec_hf_moe.cpp).
#include "core/model_spec_moe.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/input_ranges.h"
#include "core/json_reader.h"

namespace fsdpx {

bool has_moe_parts(const ModelSpec& m) { return m.is_moe() || m.is_mla() || m.qk_norm; }

std::optional<std::string> unplanned_model_reason(const ModelSpec& m) { return unsimulated_model_reason(m); }

// Latent attention and qk_norm are costed (cost_models/compute_mla.cpp); YaRN (RopeScaling) changes RoPE's
// frequencies and the softmax scale, computed once, not the per-token work. Nothing is refused today; the hook stays
// for the next part that is read before it is modelled.
std::optional<std::string> unsimulated_model_reason(const ModelSpec&) { return std::nullopt; }

void refuse_unsimulated_model(const ModelSpec& m, const std::string& file, const std::string& path) {
  if (const auto why = unsimulated_model_reason(m))
    throw_config_error(file, path, fmt::format("model {}: {}", m.name, *why));
}

void refuse_unplanned_model(const ModelSpec& m, const std::string& file, const std::string& path) {
  if (const auto why = unplanned_model_reason(m))
    throw_config_error(file, path, fmt::format("model {}: {}", m.name, *why));
}

namespace detail {
namespace {

constexpr IntRange kCount{0, input_range::kExperts.max};
constexpr IntRange kDenseLayers{0, input_range::kLayers.max};

MoeSpec read_own_moe(JsonObject o) {
  MoeSpec e;
  e.experts = o.integer_in("experts", input_range::kExperts);
  e.top_k = o.integer_in("top_k", input_range::kExperts);
  e.expert_ffn_hidden = o.integer_in("expert_ffn_hidden", input_range::kFfnHidden);
  e.shared_experts = o.optional_integer_in("shared_experts", kCount).value_or(0);
  e.shared_ffn_hidden = o.optional_integer_in("shared_ffn_hidden", input_range::kFfnHidden).value_or(0);
  e.shared_expert_gate = o.optional_boolean("shared_expert_gate").value_or(false);
  e.dense_layers = o.optional_integer_in("dense_layers", kDenseLayers).value_or(0);
  e.scoring = o.choice("scoring", {"softmax", "sigmoid"}) == "sigmoid" ? RouterScoring::sigmoid
                                                                       : RouterScoring::softmax;
  e.norm_topk_prob = o.boolean("norm_topk_prob");
  e.score_correction_bias = o.optional_boolean("score_correction_bias").value_or(false);
  e.groups = o.optional_integer_in("groups", input_range::kExperts).value_or(1);
  e.topk_groups = o.optional_integer_in("topk_groups", input_range::kExperts).value_or(1);
  e.routed_scaling = o.optional_number_in("routed_scaling", input_range::kMoeCoefficient).value_or(1.0);
  e.capacity_factor = o.optional_number_in("capacity_factor", input_range::kCapacityFactor).value_or(0.0);
  e.aux_loss_coef = o.optional_number_in("aux_loss_coef", input_range::kMoeCoefficient).value_or(0.0);
  o.finish();
  return e;
}

MlaSpec read_own_mla(JsonObject o) {
  MlaSpec a;
  a.q_lora_rank = o.optional_integer_in("q_lora_rank", input_range::kLatentRank).value_or(0);
  a.kv_lora_rank = o.integer_in("kv_lora_rank", input_range::kLatentRank);
  a.qk_rope_head_dim = o.integer_in("qk_rope_head_dim", input_range::kHeadDim);
  a.qk_nope_head_dim = o.integer_in("qk_nope_head_dim", input_range::kHeadDim);
  a.v_head_dim = o.integer_in("v_head_dim", input_range::kHeadDim);
  o.finish();
  return a;
}

nlohmann::json moe_to_json(const MoeSpec& e) {
  nlohmann::json j{{"experts", e.experts},
                   {"top_k", e.top_k},
                   {"expert_ffn_hidden", e.expert_ffn_hidden},
                   {"shared_experts", e.shared_experts},
                   {"shared_expert_gate", e.shared_expert_gate},
                   {"dense_layers", e.dense_layers},
                   {"scoring", e.scoring == RouterScoring::sigmoid ? "sigmoid" : "softmax"},
                   {"norm_topk_prob", e.norm_topk_prob},
                   {"score_correction_bias", e.score_correction_bias},
                   {"groups", e.groups},
                   {"topk_groups", e.topk_groups},
                   {"routed_scaling", e.routed_scaling},
                   {"aux_loss_coef", e.aux_loss_coef}};
  if (e.shared_experts > 0) j["shared_ffn_hidden"] = e.shared_ffn_hidden;
  if (e.capacity_factor > 0) j["capacity_factor"] = e.capacity_factor;
  return j;
}

}  // namespace

// The counts (cost_models/moe_params.h) model these parts on Llama-style blocks: SwiGLU experts without
// biases, latent projections without biases.
void read_own_moe_keys(JsonObject& o, ModelSpec& m) {
  if (o.has("moe")) m.moe = read_own_moe(o.object("moe"));
  if (o.has("mla")) m.mla = read_own_mla(o.object("mla"));
  m.qk_norm = o.optional_boolean("qk_norm").value_or(false);
  for (const char* key : {"moe", "mla", "qk_norm"}) {
    if (!o.has(key) || !has_moe_parts(m)) continue;
    if (m.arch != Arch::llama || m.ffn_kind != FfnKind::swiglu)
      o.fail(key, "modelled for arch llama with swiglu MLPs only");
    if ((m.is_mla() && m.bias != LinearBias::none) || (m.is_moe() && m.bias == LinearBias::all))
      o.fail(key, "experts and latent projections are modelled without biases (bias none, or qkv without mla)");
  }
}

void moe_keys_to_json(const ModelSpec& m, nlohmann::json& j) {
  if (m.is_moe()) j["moe"] = moe_to_json(m.moe);
  if (m.is_mla())
    j["mla"] = {{"q_lora_rank", m.mla.q_lora_rank},           {"kv_lora_rank", m.mla.kv_lora_rank},
                {"qk_rope_head_dim", m.mla.qk_rope_head_dim}, {"qk_nope_head_dim", m.mla.qk_nope_head_dim},
                {"v_head_dim", m.mla.v_head_dim}};
  if (m.is_mla() && m.mla.q_lora_rank == 0) j["mla"].erase("q_lora_rank");
  if (m.qk_norm) j["qk_norm"] = true;
}

void check_moe_layout(const ModelSpec& m, const std::string& file, const MoeKeyPaths& paths) {
  if (m.is_mla() && m.head_dim != m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim)
    throw_config_error(file, paths.head_dim,
                       fmt::format("head_dim ({}) must equal qk_nope_head_dim + qk_rope_head_dim ({} + {})",
                                   m.head_dim, m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim));
  if (!m.is_moe()) return;
  const MoeSpec& e = m.moe;
  if (e.top_k > e.experts)
    throw_config_error(file, paths.top_k, fmt::format("top_k ({}) exceeds the {} experts", e.top_k, e.experts));
  if (e.experts % e.groups != 0 || e.topk_groups > e.groups)
    throw_config_error(file, paths.groups, fmt::format("{} experts in {} groups, {} used per token: expected "
                                                       "groups to divide experts and topk_groups <= groups",
                                                       e.experts, e.groups, e.topk_groups));
  if (e.topk_groups * (e.experts / e.groups) < e.top_k)
    throw_config_error(file, paths.groups, fmt::format("{} groups of {} experts hold fewer than top_k ({})",
                                                       e.topk_groups, e.experts / e.groups, e.top_k));
  if (e.dense_layers >= m.layers)
    throw_config_error(file, paths.dense_layers,
                       fmt::format("{} dense layers leave no MoE layer of {}", e.dense_layers, m.layers));
  if ((e.shared_experts > 0) != (e.shared_ffn_hidden > 0) || (e.shared_expert_gate && e.shared_experts == 0))
    throw_config_error(file, paths.shared_ffn_hidden,
                       "shared experts need their width (and a shared-expert gate needs shared experts)");
}

double moe_param_bound(const ModelSpec& m) {
  const double h = double(m.hidden);
  double extra = 0;
  if (m.is_moe()) {
    const MoeSpec& e = m.moe;
    const double per_layer = 3 * h * (double(e.experts) * double(e.expert_ffn_hidden) +
                                      double(e.shared_experts) * double(e.shared_ffn_hidden)) +
                             2 * h * double(e.experts) + h;
    extra += double(m.layers) * per_layer;
  }
  if (m.is_mla()) {
    const MlaSpec& a = m.mla;
    const double heads = double(m.heads);
    const double qk = double(a.qk_nope_head_dim + a.qk_rope_head_dim);
    extra += double(m.layers) *
             (double(a.q_lora_rank) * (h + 1 + heads * qk) + h * heads * qk +
              double(a.kv_lora_rank + a.qk_rope_head_dim) * h + double(a.kv_lora_rank) +
              double(a.kv_lora_rank) * heads * double(a.qk_nope_head_dim + a.v_head_dim) +
              heads * double(a.v_head_dim) * h);
  }
  return extra;
}

}  // namespace detail
}  // namespace fsdpx
