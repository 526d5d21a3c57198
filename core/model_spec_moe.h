// core/model_spec_moe.h — the mixture-of-experts and latent-attention parts of a ModelSpec (MoeSpec,
// MlaSpec, qk_norm) in fsdpx's own schema, their consistency checks, and the reasons the simulator
// still refuses some of them. Whether a target trains MoE blocks is the planner's (planner/ep_degrees.h). The Hugging Face readers live in core/model_spec_hf_moe.cpp. Leaves out any cost: the
// parameter and FLOP counts are cost_models/moe_params.h.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/model_spec.h"

namespace fsdpx {

class JsonObject;  // core/json_reader.h

// True when `m` has a part beyond fsdpx's dense Llama/GPT blocks (routed experts, latent attention,
// qk_norm): its parameters are counted by cost_models/moe_params.h, not params.h. YaRN is RoPE scaling
// (ModelSpec::rope_scaling), no new part: it changes no count.
bool has_moe_parts(const ModelSpec& m);
// Why the planner does not take `m` whatever the target (nullopt: it models it), one line; today the
// simulator's reasons. A target that does not train MoE blocks is refused in planner/ep_degrees.h.
std::optional<std::string> unplanned_model_reason(const ModelSpec& m);
// ConfigError "<file>: <path>: <reason>" when unplanned_model_reason has one.
void refuse_unplanned_model(const ModelSpec& m, const std::string& file, const std::string& path);
// Why a plan of `m` cannot be lowered and simulated (nullopt: it can). Mixture-of-experts blocks can
// (program/moe_block.h), and so can latent attention, qk_norm and YaRN: nothing is refused today.
std::optional<std::string> unsimulated_model_reason(const ModelSpec& m);
void refuse_unsimulated_model(const ModelSpec& m, const std::string& file, const std::string& path);

namespace detail {

// fsdpx schema: the optional keys "moe", "mla", and "qk_norm" of a model file.
void read_own_moe_keys(JsonObject& o, ModelSpec& m);
void moe_keys_to_json(const ModelSpec& m, nlohmann::json& j);

// Cross-field rules, each failing with the file and the path `paths` gives for the key (the two readers
// name different keys): top_k <= experts, experts divisible into groups, topk_groups * (experts / groups)
// >= top_k, dense_layers < layers, shared width given with shared experts, MLA head dims adding up.
struct MoeKeyPaths {
  std::string experts, top_k, groups, dense_layers, shared_ffn_hidden, head_dim;
};
void check_moe_layout(const ModelSpec& m, const std::string& file, const MoeKeyPaths& paths);

// Parameters the MoE and MLA parts may add beyond check_model_size's dense bound (double, an upper bound).
double moe_param_bound(const ModelSpec& m);

}  // namespace detail
}  // namespace fsdpx
