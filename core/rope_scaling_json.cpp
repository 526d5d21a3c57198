// core/rope_scaling_json.cpp — strict reading of RoPE scaling parameters in both schemas. Validation
// follows transformers' modeling_rope_utils.py _validate_llama3_parameters (factor >= 1, the frequency
// band ordered) and refuses what it only warns about: high_freq_factor <= low_freq_factor would divide
// by zero in the interpolation.
#include "core/rope_scaling_json.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

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

}  // namespace

RopeScaling read_own_rope_scaling(JsonObject o) {
  o.choice("type", {"llama3"});
  const RopeScaling s = read_llama3(o, kOwnKeys);
  o.finish();
  return s;
}

nlohmann::json rope_scaling_to_json(const RopeScaling& s) {
  return {{"type", "llama3"},
          {"factor", s.factor},
          {"low_freq_factor", s.low_freq_factor},
          {"high_freq_factor", s.high_freq_factor},
          {"original_max_seq", s.original_max_seq}};
}

RopeScaling read_hf_rope_scaling(JsonObject& o) {
  // transformers accepts "type" from configs written before rope_type existed (standardize_rope_params).
  const bool has_type = o.has("rope_type");
  const std::string_view key = has_type || !o.has("type") ? "rope_type" : "type";
  if (has_type && o.has("type") && o.raw("type") != o.raw("rope_type"))
    o.fail("type", "differs from rope_type");
  if (has_type && o.has("type")) o.ignore("type");
  const std::string type = o.string(key);
  if (type == "default") return {};
  if (type == "llama3") return read_llama3(o, kHfKeys);
  o.fail(key, fmt::format("RoPE scaling \"{}\" is not modelled (it changes the rotary frequencies; fsdpx "
                          "models \"default\" and Llama 3.1's \"llama3\")",
                          type));
}

}  // namespace fsdpx::detail
