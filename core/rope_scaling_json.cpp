// core/rope_scaling_json.cpp — strict reading of RoPE scaling parameters in both schemas. Validation
// follows transformers' modeling_rope_utils.py _validate_llama3_parameters and
// _validate_yarn_rope_parameters (factor >= 1, the frequency band ordered) and refuses what they only warn
// about: high_freq_factor <= low_freq_factor would divide by zero in the interpolation, and beta_fast <
// beta_slow would turn YaRN's ramp around. YaRN's optional keys take transformers' defaults
// (_compute_yarn_parameters: beta_fast 32, beta_slow 1, truncate true, the attention factor computed).
#include "core/rope_scaling_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/input_ranges.h"

namespace fsdpx::detail {
namespace {

struct Llama3Keys {
  std::string_view factor, low, high, original;
};
constexpr Llama3Keys kOwnKeys{"factor", "low_freq_factor", "high_freq_factor", "original_max_seq"};
constexpr Llama3Keys kHfKeys{"factor", "low_freq_factor", "high_freq_factor",
                             "original_max_position_embeddings"};

RopeScaling read_llama3(JsonObject& o, const Llama3Keys& k) {
  RopeScaling s;
  s.kind = RopeScalingKind::llama3;
  s.factor = o.positive_number(k.factor);
  if (s.factor < 1) o.fail(k.factor, fmt::format("expected a factor >= 1, got {}", s.factor));
  s.low_freq_factor = o.positive_number(k.low);
  s.high_freq_factor = o.positive_number(k.high);
  if (!(s.high_freq_factor > s.low_freq_factor))
    o.fail(k.high, fmt::format("must exceed {} ({}): the band between them is interpolated", k.low,
                               s.low_freq_factor));
  s.original_max_seq = o.positive_integer(k.original);
  return s;
}

// YaRN's keys past the factor and the original context. transformers reads beta_fast and beta_slow with
// `or` (0 and null mean the default) and mscale, mscale_all_dim by truthiness (0 means absent); fsdpx takes
// null as absent and refuses a zero beta, which no source writes.
RopeScaling read_yarn(JsonObject& o, std::string_view original_key, std::optional<std::int64_t> original_default) {
  RopeScaling s;
  s.kind = RopeScalingKind::yarn;
  s.factor = o.number_in("factor", input_range::kYarnFactor);
  if (original_default && !(o.has(original_key) && !o.raw(original_key).is_null())) {
    if (o.has(original_key)) o.ignore(original_key);
    s.original_max_seq = *original_default;
  } else {
    s.original_max_seq = o.integer_in(original_key, input_range::kMaxSeq);
  }
  s.beta_fast = o.optional_number_in("beta_fast", input_range::kYarnBeta).value_or(32.0);
  s.beta_slow = o.optional_number_in("beta_slow", input_range::kYarnBeta).value_or(1.0);
  if (s.beta_fast < s.beta_slow)
    o.fail("beta_fast", fmt::format("must be at least beta_slow ({}): the ramp runs from beta_fast turns down to "
                                    "beta_slow", s.beta_slow));
  s.mscale = o.optional_number_in("mscale", input_range::kYarnMscale).value_or(0.0);
  s.mscale_all_dim = o.optional_number_in("mscale_all_dim", input_range::kYarnMscale).value_or(0.0);
  s.attention_factor = o.optional_number_in("attention_factor", input_range::kYarnAttentionFactor).value_or(0.0);
  if (o.has("truncate") && o.raw("truncate").is_null()) o.ignore("truncate");
  else s.truncate = o.optional_boolean("truncate").value_or(true);
  return s;
}

}  // namespace

RopeScaling read_own_rope_scaling(JsonObject o) {
  const bool yarn = o.choice("type", {"llama3", "yarn"}) == "yarn";
  const RopeScaling s = yarn ? read_yarn(o, "original_max_seq", std::nullopt) : read_llama3(o, kOwnKeys);
  o.finish();
  return s;
}

nlohmann::json rope_scaling_to_json(const RopeScaling& s) {
  if (s.kind == RopeScalingKind::yarn) {
    nlohmann::json j{{"type", "yarn"},          {"factor", s.factor},       {"original_max_seq", s.original_max_seq},
                     {"beta_fast", s.beta_fast}, {"beta_slow", s.beta_slow}, {"truncate", s.truncate}};
    if (s.mscale > 0) j["mscale"] = s.mscale;
    if (s.mscale_all_dim > 0) j["mscale_all_dim"] = s.mscale_all_dim;
    if (s.attention_factor > 0) j["attention_factor"] = s.attention_factor;
    return j;
  }
  return {{"type", "llama3"},
          {"factor", s.factor},
          {"low_freq_factor", s.low_freq_factor},
          {"high_freq_factor", s.high_freq_factor},
          {"original_max_seq", s.original_max_seq}};
}

RopeScaling read_hf_rope_scaling(JsonObject& o, std::int64_t max_position_embeddings) {
  // transformers accepts "type" from configs written before rope_type existed (standardize_rope_params).
  const bool has_type = o.has("rope_type");
  const std::string_view key = has_type || !o.has("type") ? "rope_type" : "type";
  if (has_type && o.has("type") && o.raw("type") != o.raw("rope_type"))
    o.fail("type", "differs from rope_type");
  if (has_type && o.has("type")) o.ignore("type");
  const std::string type = o.string(key);
  if (type == "default") return {};
  if (type == "llama3") return read_llama3(o, kHfKeys);
  if (type == "yarn") return read_yarn(o, kHfKeys.original, max_position_embeddings);
  o.fail(key, fmt::format("RoPE scaling \"{}\" is not modelled (it changes the rotary frequencies; fsdpx "
                          "models \"default\", Llama 3.1's \"llama3\" and \"yarn\")",
                          type));
}

}  // namespace fsdpx::detail
