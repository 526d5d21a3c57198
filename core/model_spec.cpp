// core/model_spec.cpp — fsdpx's own model schema (strict: unknown keys, wrong types and non-positive
// sizes are errors naming the file and JSON path) and the dispatch to the Hugging Face reader by
// content. Leaves out any checkpoint or tokenizer reading: the cost models need only shapes, the
// executor also the RoPE base, RoPE scaling and norm epsilon.
#include "core/model_spec.h"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "core/json_reader.h"
#include "core/model_spec_moe.h"
#include "core/rope_scaling_json.h"

namespace fsdpx {

namespace detail {
// Defined in core/model_spec_hf.cpp (Hugging Face config.json reader).
ModelSpec parse_hf_model_spec(const nlohmann::json& j, const std::string& file);

// Shared by both readers: heads split evenly into KV groups, and hidden into heads when head_dim is
// not given. Paths name the keys of the format being read so the message points into the file.
void check_head_layout(const ModelSpec& m, const std::string& file, const std::string& kv_heads_path,
                       const std::string& heads_path, bool head_dim_given) {
  if (m.heads % m.kv_heads != 0)
    throw_config_error(file, kv_heads_path,
                       fmt::format("heads ({}) must be divisible by kv_heads ({})", m.heads, m.kv_heads));
  if (!head_dim_given && m.hidden % m.heads != 0)
    throw_config_error(file, heads_path,
                       fmt::format("hidden ({}) must be divisible by heads ({}) when head_dim is not given",
                                   m.hidden, m.heads));
}

// Shared by both readers. A base <= 0 has no meaning (angle t·theta^(-2i/d)); an epsilon >= 1 would
// swamp the normalised variance of unit-scale activations.
double read_rope_theta(JsonObject& o, std::string_view key) { return o.number_in(key, input_range::kRopeTheta); }

double read_norm_eps(JsonObject& o, std::string_view key) { return o.number_in(key, input_range::kNormEps); }

// An upper bound on the parameter count from the shapes alone (every linear layer with a bias, three
// MLP matrices, untied head, a position table), in double so that no shape within range overflows.
// Keeping it below kMaxModelParams keeps every count, byte total and FLOP figure derived from the model
// exact in 64-bit integers and finite in double.
}  // namespace detail

void check_model_size(const ModelSpec& m, const std::string& file, const std::string& path) {
  const double h = double(m.hidden), q = double(m.heads) * double(m.head_dim);
  const double kv = double(m.kv_heads) * double(m.head_dim), f = double(m.ffn_hidden);
  const double per_block = 2 * h * q + 2 * h * kv + 3 * h * f + q + 2 * kv + 2 * f + 6 * h;
  const double params = double(m.layers) * per_block + 2 * double(m.vocab) * h + double(m.max_seq) * h + 2 * h +
                        detail::moe_param_bound(m);
  if (params > input_range::kMaxModelParams)
    throw_config_error(file, path,
                       fmt::format("the model has up to {:.3g} parameters, more than the supported {:.0e} "
                                   "(docs/input-ranges.md)", params, input_range::kMaxModelParams));
}

namespace {

constexpr std::array<std::pair<Arch, const char*>, 2> kArchNames{
    {{Arch::llama, "llama"}, {Arch::gpt, "gpt"}}};
constexpr std::array<std::pair<FfnKind, const char*>, 3> kFfnNames{
    {{FfnKind::swiglu, "swiglu"}, {FfnKind::gelu, "gelu"}, {FfnKind::squared_relu, "squared_relu"}}};
constexpr std::array<std::pair<LinearBias, const char*>, 3> kBiasNames{
    {{LinearBias::none, "none"}, {LinearBias::qkv, "qkv"}, {LinearBias::all, "all"}}};

template <typename E, std::size_t N>
E enum_from_name(const std::array<std::pair<E, const char*>, N>& names, const std::string& s) {
  for (const auto& [e, n] : names)
    if (s == n) return e;
  FSDP_CHECK(false, "name was validated by JsonObject::choice: " + s);
  return names[0].first;
}

template <typename E, std::size_t N>
const char* enum_name(const std::array<std::pair<E, const char*>, N>& names, E e) {
  for (const auto& [v, n] : names)
    if (v == e) return n;
  FSDP_CHECK(false, "enum value without a name");
  return "";
}

ModelSpec parse_own_model_spec(const nlohmann::json& j, const std::string& file) {
  JsonObject o(j, file);
  ModelSpec m;
  m.name = o.string("name");
  m.arch = enum_from_name(kArchNames, o.choice("arch", {"llama", "gpt"}));
  m.layers = o.integer_in("layers", input_range::kLayers);
  m.hidden = o.integer_in("hidden", input_range::kHidden);
  m.heads = o.integer_in("heads", input_range::kHeads);
  m.kv_heads = o.integer_in("kv_heads", input_range::kHeads);
  const auto head_dim = o.optional_integer_in("head_dim", input_range::kHeadDim);
  m.ffn_hidden = o.integer_in("ffn_hidden", input_range::kFfnHidden);
  m.ffn_kind = enum_from_name(kFfnNames, o.choice("ffn_kind", {"swiglu", "gelu", "squared_relu"}));
  m.vocab = o.integer_in("vocab", input_range::kVocab);
  m.max_seq = o.integer_in("max_seq", input_range::kMaxSeq);
  m.tied_embeddings = o.boolean("tied_embeddings");
  // Default bias follows the architecture: Llama has none, GPT-2 biases every linear layer.
  m.bias = m.arch == Arch::gpt ? LinearBias::all : LinearBias::none;
  if (o.has("bias")) m.bias = enum_from_name(kBiasNames, o.choice("bias", {"none", "qkv", "all"}));
  if (o.has("rope_theta")) {
    if (m.arch != Arch::llama) o.fail("rope_theta", "only arch llama has RoPE (gpt learns positions)");
    m.rope_theta = detail::read_rope_theta(o, "rope_theta");
  }
  if (o.has("rope_scaling")) {
    if (m.arch != Arch::llama) o.fail("rope_scaling", "only arch llama has RoPE (gpt learns positions)");
    m.rope_scaling = detail::read_own_rope_scaling(o.object("rope_scaling"));
  }
  if (o.has("norm_eps")) m.norm_eps = detail::read_norm_eps(o, "norm_eps");
  detail::read_own_moe_keys(o, m);
  o.optional_string("source");  // documentation only: where the numbers come from
  o.finish();
  detail::check_head_layout(m, file, "/kv_heads", "/heads", head_dim.has_value());
  m.head_dim = head_dim.value_or(m.hidden / m.heads);
  detail::check_moe_layout(m, file, {"/moe/experts", "/moe/top_k", "/moe/groups", "/moe/dense_layers",
                                     "/moe/shared_ffn_hidden", "/head_dim"});
  check_model_size(m, file);
  return m;
}

bool looks_like_hugging_face(const nlohmann::json& j) {
  return j.is_object() && (j.contains("architectures") || j.contains("model_type")) && !j.contains("arch");
}

}  // namespace

const char* arch_name(Arch a) { return enum_name(kArchNames, a); }
std::int64_t up_projection_width(FfnKind f, std::int64_t ffn) { return f == FfnKind::swiglu ? 2 * ffn : ffn; }

const char* ffn_kind_name(FfnKind f) { return enum_name(kFfnNames, f); }
const char* linear_bias_name(LinearBias b) { return enum_name(kBiasNames, b); }

ModelSpec parse_model_spec(const nlohmann::json& j, const std::string& file) {
  if (looks_like_hugging_face(j)) return detail::parse_hf_model_spec(j, file);
  return parse_own_model_spec(j, file);
}

// rope_theta and rope_scaling only for llama: the reader rejects them for gpt.
nlohmann::json model_spec_to_json(const ModelSpec& m) {
  nlohmann::json j{{"name", m.name},
                   {"arch", arch_name(m.arch)},
                   {"layers", m.layers},
                   {"hidden", m.hidden},
                   {"heads", m.heads},
                   {"kv_heads", m.kv_heads},
                   {"head_dim", m.head_dim},
                   {"ffn_hidden", m.ffn_hidden},
                   {"ffn_kind", ffn_kind_name(m.ffn_kind)},
                   {"vocab", m.vocab},
                   {"max_seq", m.max_seq},
                   {"tied_embeddings", m.tied_embeddings},
                   {"bias", linear_bias_name(m.bias)}};
  if (m.arch == Arch::llama) j["rope_theta"] = m.rope_theta;
  if (m.arch == Arch::llama && m.rope_scaling.kind != RopeScalingKind::none)
    j["rope_scaling"] = detail::rope_scaling_to_json(m.rope_scaling);
  j["norm_eps"] = m.norm_eps;
  detail::moe_keys_to_json(m, j);
  return j;
}

}  // namespace fsdpx
