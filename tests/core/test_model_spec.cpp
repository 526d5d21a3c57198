// tests/core/test_model_spec.cpp — model specs in fsdpx's schema and in Hugging Face config.json form.
// Shapes are checked against published parameter counts through an independent closed form (below),
// so a misread key (tied embeddings, KV heads, biases, n_inner) fails. Leaves FLOP/memory formulas to
// the cost-model tests.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/config_paths.h"
#include "core/input_ranges.h"
#include "core/json_reader.h"
#include "core/model_spec.h"

namespace fsdpx {
namespace {

const std::string kData = FSDPX_TEST_DATA_DIR;
const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Parameter count written out per layer from the architectures' definitions (HF modeling_llama.py,
// modeling_qwen2.py, modeling_gpt2.py), independent of cost_models/params.
std::int64_t param_count(const ModelSpec& m) {
  const std::int64_t h = m.hidden, q = m.q_dim(), kv = m.kv_dim(), f = m.ffn_hidden;
  const std::int64_t embed = m.vocab * h * (m.tied_embeddings ? 1 : 2);
  if (m.arch == Arch::llama) {
    const std::int64_t attn = h * q + 2 * h * kv + q * h + (m.bias == LinearBias::qkv ? q + 2 * kv : 0);
    return m.layers * (attn + 3 * h * f + 2 * h) + embed + h;  // 2 RMSNorms per layer + final
  }
  // GPT-2 block: c_attn (h x 3h + 3h), c_proj (h x h + h), c_fc (h x f + f), mlp c_proj (f x h + h),
  // two LayerNorms (2h each); plus learned positions and the final LayerNorm.
  const std::int64_t block = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;
  return m.layers * block + embed + m.max_seq * h + 2 * h;
}

nlohmann::json llama_json() {
  return nlohmann::json::parse(R"({"name": "t", "arch": "llama", "layers": 2, "hidden": 256, "heads": 8,
    "kv_heads": 2, "ffn_hidden": 512, "ffn_kind": "swiglu", "vocab": 1000, "max_seq": 128,
    "tied_embeddings": false})");
}

}  // namespace

TEST_CASE("own schema: fields, defaults and the derived head_dim") {
  const ModelSpec m = parse_model_spec(llama_json(), "t.json");
  CHECK(m.name == "t");
  CHECK(m.arch == Arch::llama);
  CHECK(m.head_dim == 32);  // 256 / 8
  CHECK(m.kv_dim() == 64);
  CHECK(m.bias == LinearBias::none);  // llama default
  CHECK(m.rope_theta == 10000.0);      // RoFormer / Llama 2 base
  CHECK(m.norm_eps == 1e-5);

  auto j = llama_json();
  j["rope_theta"] = 500000;  // an integer is a number too
  j["norm_eps"] = 1e-6;
  const ModelSpec l3 = parse_model_spec(j, "t.json");
  CHECK(l3.rope_theta == 500000.0);
  CHECK(l3.norm_eps == 1e-6);
  CHECK(model_spec_to_json(l3)["rope_theta"] == 500000.0);
  CHECK(model_spec_to_json(l3)["norm_eps"] == 1e-6);

  j = llama_json();
  j["arch"] = "gpt";
  j["ffn_kind"] = "gelu";
  CHECK(parse_model_spec(j, "t.json").bias == LinearBias::all);  // gpt default
  j["bias"] = "qkv";
  j["source"] = "documentation only";
  CHECK(parse_model_spec(j, "t.json").bias == LinearBias::qkv);
  CHECK_FALSE(model_spec_to_json(parse_model_spec(j, "t.json")).contains("rope_theta"));  // gpt: no RoPE
  j["rope_theta"] = 10000;
  CHECK(contains(error_of([&] { parse_model_spec(j, "t.json"); }), "t.json: /rope_theta: only arch llama"));

  // An explicit head_dim lifts the hidden % heads requirement (q_dim != hidden).
  j = llama_json();
  j["hidden"] = 250;
  CHECK(contains(error_of([&] { parse_model_spec(j, "t.json"); }), "t.json: /heads: hidden (250)"));
  j["head_dim"] = 64;
  const ModelSpec wide = parse_model_spec(j, "t.json");
  CHECK(wide.head_dim == 64);
  CHECK(wide.q_dim() == 512);
}

TEST_CASE("heads not divisible by kv_heads names /kv_heads and both numbers") {
  auto j = llama_json();
  j["kv_heads"] = 3;
  const auto msg = error_of([&] { parse_model_spec(j, "m.json"); });
  INFO(msg);
  CHECK(contains(msg, "m.json: /kv_heads:"));
  CHECK(contains(msg, "(8)"));
  CHECK(contains(msg, "(3)"));
}

TEST_CASE("own schema rejects unknown keys, bad enums, wrong types and non-positive sizes") {
  const std::map<std::string, nlohmann::json> edits{
      {"/hiden", 256}, {"/arch", "mamba"}, {"/ffn_kind", "relu"}, {"/layers", "2"},
      {"/vocab", 0},   {"/max_seq", -1},   {"/bias", "some"},     {"/tied_embeddings", 1},
      {"/rope_theta", 0}, {"/rope_theta", "5e5"}, {"/norm_eps", 0}, {"/norm_eps", 1.0}, {"/norm_eps", -1e-5}};
  for (const auto& [path, value] : edits) {
    auto j = llama_json();
    j[nlohmann::json::json_pointer(path)] = value;
    const auto msg = error_of([&] { parse_model_spec(j, "m.json"); });
    INFO(path << " -> " << msg);
    CHECK(contains(msg, "m.json: " + path + ":"));
  }
  auto j = llama_json();
  j.erase("heads");
  CHECK(contains(error_of([&] { parse_model_spec(j, "m.json"); }), "m.json: /heads: missing"));
  // "arch" decides the format: a stray HF key in an fsdpx file is an unknown key, not a format switch.
  j = llama_json();
  j["model_type"] = "llama";
  CHECK(contains(error_of([&] { parse_model_spec(j, "m.json"); }), "/model_type: unknown key"));
}

TEST_CASE("bad-input fixtures fail with file and path") {
  const std::map<std::string, std::string> cases{{"unknown_key.json", "/layer_norm"},
                                                 {"wrong_type.json", "/layers"},
                                                 {"missing_field.json", "/vocab"},
                                                 {"non_positive.json", "/hidden"},
                                                 {"heads_kv.json", "/kv_heads"},
                                                 {"truncated.json", "invalid JSON"},
                                                 {"hf_unsupported.json", "/architectures"},
                                                 {"hf_missing_field.json", "/intermediate_size"},
                                                 {"hf_heads_kv.json", "/num_key_value_heads"},
                                                 {"bad_rope_theta.json", "/rope_theta"},
                                                 {"bad_norm_eps.json", "/norm_eps"}};
  for (const auto& [file, part] : cases) {
    const std::string path = kData + "/bad/" + file;
    const auto msg = error_of([&] { load_model(path); });
    INFO(file << " -> " << msg);
    CHECK(msg.find(path + ": ") == 0);
    CHECK(contains(msg, part));
  }
}

TEST_CASE("every shipped model loads, round-trips and matches its published parameter count") {
  // Published totals: HF model cards / safetensors metadata; GPT-3 from Brown et al. 2020 Table 2.1.
  const std::map<std::string, double> published{
      {"llama3.2-1b", 1235814400},   {"llama3.1-8b", 8030261248},
      {"llama3.1-70b", 70553706496}, {"llama3.1-405b", 405853388800},
      {"llama2-7b", 6738415616},     {"llama2-13b", 13015864320},
      {"llama2-70b", 68976648192},   {"mistral-7b", 7241732096},
      {"qwen2-7b", 7615616512},      {"gpt2-124m", 124439808},
      {"gpt2-1.5b", 1557611200},       {"gpt3-175b", 175.0e9}};
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kConfigs + "/models")) {
    const std::string path = entry.path().string();
    INFO(path);
    const ModelSpec m = load_model(path);
    CHECK(m.name == entry.path().stem().string());
    const ModelSpec back = parse_model_spec(model_spec_to_json(m), "roundtrip");
    CHECK(model_spec_to_json(back) == model_spec_to_json(m));
    if (auto it = published.find(m.name); it != published.end()) {
      const double rel = std::abs(double(param_count(m)) - it->second) / it->second;
      INFO("params " << param_count(m) << " vs published " << it->second << ", rel diff " << rel);
      CHECK(rel < (m.name == "gpt3-175b" ? 5e-3 : 1e-12));  // GPT-3's 175.0B is rounded
    }
    ++loaded;
  }
  CHECK(loaded >= int(published.size()));
}

TEST_CASE("shipped models carry the RoPE base and norm epsilon of their Hugging Face configs") {
  const std::map<std::string, std::string> same{{"llama3.1-8b", "llama-3.1-8b"},
                                                {"mistral-7b", "mistral-7b-v0.1"},
                                                {"qwen2-7b", "qwen2-7b"},
                                                {"gpt2-124m", "gpt2"}};
  for (const auto& [ours, hf] : same) {
    INFO(ours);
    const ModelSpec m = load_model(kConfigs + "/models/" + ours + ".json");
    const ModelSpec h = load_model(kData + "/hf/" + hf + "/config.json");
    CHECK(m.rope_theta == h.rope_theta);
    CHECK(m.rope_scaling == h.rope_scaling);
    CHECK(m.norm_eps == h.norm_eps);
  }
  // Llama 3 paper (arXiv:2407.21783) Table 3: RoPE base 500,000 for every size; Llama 2 keeps 10,000.
  for (const char* name : {"llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "llama3.2-1b"})
    CHECK(load_model(kConfigs + "/models/" + name + ".json").rope_theta == 500000.0);
  for (const char* name : {"llama2-7b", "llama2-13b", "llama2-70b", "llama-tiny"})
    CHECK(load_model(kConfigs + "/models/" + name + ".json").rope_theta == 10000.0);
}

TEST_CASE("Hugging Face configs load with the right shapes and parameter counts") {
  struct Expect {
    std::string dir;
    Arch arch;
    std::int64_t layers, hidden, heads, kv_heads, ffn, vocab, max_seq;
    bool tied;
    LinearBias bias;
    double params;  // published total
    double rope_theta, norm_eps;  // rope_theta, rms_norm_eps / layer_norm_epsilon as written
  };
  const Expect cases[] = {
      {"llama-3.1-8b", Arch::llama, 32, 4096, 32, 8, 14336, 128256, 131072, false, LinearBias::none,
       8030261248, 500000.0, 1e-5},
      // Mistral-7B-v0.1 attends over a 4096-token sliding window: max_seq is the window, not 32768.
      {"mistral-7b-v0.1", Arch::llama, 32, 4096, 32, 8, 14336, 32000, 4096, false, LinearBias::none,
       7241732096, 10000.0, 1e-5},
      {"qwen2-7b", Arch::llama, 28, 3584, 28, 4, 18944, 152064, 131072, false, LinearBias::qkv, 7615616512,
       1000000.0, 1e-6},
      {"qwen2.5-7b", Arch::llama, 28, 3584, 28, 4, 18944, 152064, 131072, false, LinearBias::qkv, 7615616512,
       1000000.0, 1e-6},
      {"gpt2", Arch::gpt, 12, 768, 12, 12, 3072, 50257, 1024, true, LinearBias::all, 124439808, 10000.0,
       1e-5},
  };
  for (const auto& e : cases) {
    INFO(e.dir);
    const ModelSpec m = load_model(kData + "/hf/" + e.dir + "/config.json");
    CHECK(m.name == e.dir);  // no _name_or_path: the folder holding config.json
    CHECK(m.arch == e.arch);
    CHECK(m.layers == e.layers);
    CHECK(m.hidden == e.hidden);
    CHECK(m.heads == e.heads);
    CHECK(m.kv_heads == e.kv_heads);
    CHECK(m.head_dim == e.hidden / e.heads);
    CHECK(m.ffn_hidden == e.ffn);
    CHECK(m.ffn_kind == (e.arch == Arch::gpt ? FfnKind::gelu : FfnKind::swiglu));
    CHECK(m.vocab == e.vocab);
    CHECK(m.max_seq == e.max_seq);
    CHECK(m.tied_embeddings == e.tied);
    CHECK(m.bias == e.bias);
    CHECK(double(param_count(m)) == e.params);
    CHECK(m.rope_theta == e.rope_theta);  // gpt2: the unused default
    CHECK(m.norm_eps == e.norm_eps);
  }
}

// microsoft/Phi-3-mini-4k-instruct: Llama's block with packed qkv and gate/up projections; 3.8 B parameters
// (its model card), here exactly: 2 x 32064 x 3072 + 32 x (4 x 3072^2 + 3 x 3072 x 8192 + 2 x 3072) + 3072.
// Its 2047-token sliding window caps max_seq; dropout keys at 0 pass, and LongRoPE scaling is refused.
TEST_CASE("Phi-3 configs load as Llama blocks with the published parameter count") {
  const auto j = load_json_file(kData + "/hf/phi-3-mini-4k-instruct/config.json");
  const ModelSpec m = parse_model_spec(j, "phi3/config.json");
  CHECK(m.name == "Phi-3-mini-4k-instruct");
  CHECK(m.arch == Arch::llama);
  CHECK(m.layers == 32);
  CHECK(m.hidden == 3072);
  CHECK(m.heads == 32);
  CHECK(m.kv_heads == 32);
  CHECK(m.head_dim == 96);
  CHECK(m.ffn_hidden == 8192);
  CHECK(m.ffn_kind == FfnKind::swiglu);
  CHECK(m.vocab == 32064);
  CHECK(m.max_seq == 2047);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.bias == LinearBias::none);
  CHECK(double(param_count(m)) == 3821079552.0);
  CHECK(m.norm_eps == 1e-5);
  auto longrope = j;
  longrope["rope_scaling"] = {{"type", "longrope"}, {"short_factor", {1.0}}, {"long_factor", {1.0}}};
  CHECK(contains(error_of([&] { parse_model_spec(longrope, "p.json"); }), "p.json: /rope_scaling"));
  auto unknown = j;
  unknown["phi3_typo"] = 1;
  CHECK(contains(error_of([&] { parse_model_spec(unknown, "p.json"); }), "p.json: /phi3_typo: unknown key"));
}

TEST_CASE("Hugging Face defaults and variants") {
  auto j = load_json_file(kData + "/hf/llama-3.1-8b/config.json");
  j.erase("num_key_value_heads");  // HF default: one KV head per query head
  j["_name_or_path"] = "meta-llama/Llama-3.1-8B";
  j["head_dim"] = 256;
  ModelSpec m = parse_model_spec(j, "x/config.json");
  CHECK(m.kv_heads == 32);
  CHECK(m.head_dim == 256);
  CHECK(m.name == "meta-llama/Llama-3.1-8B");

  j = load_json_file(kData + "/hf/llama-3.1-8b/config.json");
  j.erase("architectures");  // model_type alone identifies the family
  CHECK(parse_model_spec(j, "dir/llama.json").name == "llama");
  j["attention_bias"] = true;
  j["mlp_bias"] = true;
  CHECK(parse_model_spec(j, "llama.json").bias == LinearBias::all);
  j["mlp_bias"] = false;  // bias on q/k/v/o but not the MLP: not representable
  CHECK(contains(error_of([&] { parse_model_spec(j, "l.json"); }), "l.json: /attention_bias:"));

  auto g = load_json_file(kData + "/hf/gpt2/config.json");
  g.erase("n_positions");  // old configs only have n_ctx
  g["n_inner"] = 1000;
  g["tie_word_embeddings"] = false;
  m = parse_model_spec(g, "g.json");
  CHECK(m.max_seq == 1024);
  CHECK(m.ffn_hidden == 1000);
  CHECK(!m.tied_embeddings);
  g["n_inner"] = nullptr;
  CHECK(parse_model_spec(g, "g.json").ffn_hidden == 4 * 768);
  g.erase("layer_norm_epsilon");
  CHECK(parse_model_spec(g, "g.json").norm_eps == 1e-5);  // GPT2Config default
}

TEST_CASE("Hugging Face RoPE base and norm epsilon: class defaults and the transformers 5 layout") {
  const auto base = load_json_file(kData + "/hf/llama-3.1-8b/config.json");
  auto j = base;
  j.erase("rope_theta");
  j.erase("rms_norm_eps");
  ModelSpec m = parse_model_spec(j, "l.json");
  CHECK(m.rope_theta == 10000.0);  // LlamaConfig defaults, as transformers would load this file
  CHECK(m.norm_eps == 1e-6);
  j["rms_norm_eps"] = nullptr;
  CHECK(parse_model_spec(j, "l.json").norm_eps == 1e-6);

  // transformers 5 writes rope_theta inside rope_parameters, next to the scaling keys.
  j = base;
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "llama3"}, {"factor", 8.0},
                          {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 8192}};
  CHECK(parse_model_spec(j, "l.json").rope_theta == 500000.0);
  CHECK(parse_model_spec(j, "l.json").rope_scaling == parse_model_spec(base, "l.json").rope_scaling);
  j["rope_theta"] = 500000.0;  // both, equal: fine
  CHECK(parse_model_spec(j, "l.json").rope_theta == 500000.0);
  j["rope_theta"] = 10000.0;  // both, different: ambiguous
  const auto msg = error_of([&] { parse_model_spec(j, "l.json"); });
  INFO(msg);
  CHECK(contains(msg, "l.json: /rope_parameters: rope_theta 500000 differs from the top-level rope_theta 10000"));
  j.erase("rope_theta");
  j["rope_parameters"]["rope_theta"] = -1;
  CHECK(contains(error_of([&] { parse_model_spec(j, "l.json"); }), "l.json: /rope_parameters/rope_theta:"));
}

TEST_CASE("Hugging Face errors name the file and the key") {
  const auto base = load_json_file(kData + "/hf/mistral-7b-v0.1/config.json");
  const std::map<std::string, nlohmann::json> edits{
      {"/architectures", nlohmann::json::array({"GemmaForCausalLM"})},
      {"/model_type", "llama"},  // contradicts MistralForCausalLM
      {"/hidden_act", "gelu"},
      {"/quantization_config", nlohmann::json::object()},
      {"/num_hidden_layers", 0},
      {"/vocab_size", "32000"},
      {"/rope_theta", 0},
      {"/rope_theta", "10000"},
      {"/rms_norm_eps", 1},
      {"/rope_parameters", "default"}};
  for (const auto& [path, value] : edits) {
    auto j = base;
    j[nlohmann::json::json_pointer(path)] = value;
    const auto msg = error_of([&] { parse_model_spec(j, "hf.json"); });
    INFO(path << " -> " << msg);
    CHECK(contains(msg, "hf.json: " + path + ":"));
  }
  auto j = base;
  j.erase("hidden_size");
  CHECK(contains(error_of([&] { parse_model_spec(j, "hf.json"); }), "hf.json: /hidden_size: missing"));
}

TEST_CASE("enum names are the schema strings") {
  CHECK(std::string(arch_name(Arch::gpt)) == "gpt");
  CHECK(std::string(ffn_kind_name(FfnKind::squared_relu)) == "squared_relu");
  CHECK(std::string(linear_bias_name(LinearBias::qkv)) == "qkv");
}

// Issue 15 items 4, 5 and 9: sizes whose products wrapped (vocab 2^63-1, hidden 2^31, layers 1e12 or
// 2^63-1) and denormal rates. Every size has a documented range (core/input_ranges.h), in both formats.
TEST_CASE("every model size is range-checked at load in both formats, with the key's path") {
  struct Edit {
    const char* own_key;
    const char* hf_key;
    nlohmann::json value;
  };
  const Edit edits[] = {{"vocab", "vocab_size", INT64_MAX},
                        {"hidden", "hidden_size", std::int64_t{1} << 31},
                        {"layers", "num_hidden_layers", std::int64_t{1000000000000}},
                        {"layers", "num_hidden_layers", INT64_MAX},
                        {"layers", "num_hidden_layers", std::uint64_t{1} << 63},
                        {"layers", "num_hidden_layers", 1000000},
                        {"heads", "num_attention_heads", 0},
                        {"ffn_hidden", "intermediate_size", -4},
                        {"max_seq", "max_position_embeddings", std::int64_t{1} << 40},
                        {"rope_theta", "rope_theta", 5e-324},
                        {"norm_eps", "rms_norm_eps", 4.9e-324}};
  for (const Edit& e : edits) {
    auto own = llama_json();
    own[e.own_key] = e.value;
    auto msg = error_of([&] { parse_model_spec(own, "m.json"); });
    INFO(e.own_key << " = " << e.value.dump() << " -> " << msg);
    CHECK(msg.find(std::string("m.json: /") + e.own_key + ": expected ") == 0);
    auto hf = load_json_file(kData + "/hf/llama-3.1-8b/config.json");
    hf[e.hf_key] = e.value;
    msg = error_of([&] { parse_model_spec(hf, "config.json"); });
    INFO(e.hf_key << " -> " << msg);
    CHECK(msg.find(std::string("config.json: /") + e.hf_key + ": expected ") == 0);
  }
  // The bounds themselves load.
  auto j = llama_json();
  j["layers"] = input_range::kLayers.max;
  j["vocab"] = input_range::kVocab.max;
  CHECK(parse_model_spec(j, "m.json").vocab == input_range::kVocab.max);
}

TEST_CASE("a model whose sizes are each in range but add up to more than 1e14 parameters is rejected") {
  auto j = llama_json();
  j["layers"] = 2048;
  j["hidden"] = 65536;
  j["heads"] = 512;
  j["kv_heads"] = 512;
  j["ffn_hidden"] = 262144;  // per block 3 x 2^34 + 4 x 2^32 = 2^36: 1.4e14 in all
  const auto msg = error_of([&] { parse_model_spec(j, "m.json"); });
  INFO(msg);
  CHECK(msg.find("m.json: /: the model has up to 1.4") == 0);
  j["layers"] = 1024;  // 7e13: within the bound
  CHECK_NOTHROW(parse_model_spec(j, "m.json"));
}

}  // namespace fsdpx
