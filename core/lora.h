// core/lora.h — LoRA fine-tuning settings of a plan (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large
// Language Models", §4.1): the base weights are frozen and each targeted projection W [out, in] gains
// trainable A [r, in] and B [out, r] with output W x + (alpha / r) B A x. Targets name the projections of
// a block: q, k, v (rows of the fused qkv), o (attn_out), gate, up (rows of mlp_up; gate only for SwiGLU),
// down (mlp_down). Leaves out adapters on the embedding and the head, and other adapter families.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/model_spec.h"

namespace fsdpx {

class JsonObject;
struct Plan;

enum class LoraTarget { q, k, v, o, gate, up, down };
inline constexpr int kLoraTargetCount = 7;
const char* lora_target_name(LoraTarget t);

struct LoraSettings {
  std::int64_t rank = 16;
  double alpha = 32;
  double dropout = 0;  // on the adapter input (peft's lora_dropout); the executors run 0 only
  std::vector<LoraTarget> targets{LoraTarget::q, LoraTarget::v};  // kept in LoraTarget order, no repeats
  double scale() const { return alpha / double(rank); }
  bool has_target(LoraTarget t) const;
};

// One adapted projection of one block (whole, before tensor parallelism): in and out features.
struct LoraProjection {
  LoraTarget target = LoraTarget::q;
  std::int64_t in = 0, out = 0;
};
// The projections a block adapts, in LoraTarget order.
std::vector<LoraProjection> lora_projections(const ModelSpec& m, const LoraSettings& s);
// Trainable adapter parameters of the whole model: layers · Σ r (in + out).
double lora_params(const ModelSpec& m, const LoraSettings& s);
// Adapter parameters of one block.
double lora_block_params(const ModelSpec& m, const LoraSettings& s);

// Strict reading of the plan's "lora" object (path "/lora"); `m` checks that the targets exist.
LoraSettings parse_lora(JsonObject o, const ModelSpec& m);
nlohmann::json lora_to_json(const LoraSettings& s);
// A plan's LoRA against its parallelism: tensor and pipeline parallelism are not supported with LoRA
// yet (ConfigError naming "/lora").
void validate_lora(const Plan& p, const std::string& file);
// "q,v" -> targets; throws ConfigError naming `what` (a CLI option) for an unknown or repeated name.
std::vector<LoraTarget> parse_lora_targets(const std::string& list, const std::string& what);

}  // namespace fsdpx
