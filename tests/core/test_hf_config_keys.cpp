// tests/core/test_hf_config_keys.cpp — the Hugging Face key policy (core/hf_config_keys.cpp) and RoPE
// scaling in both schemas (core/rope_scaling_json.cpp): published configs that fsdpx cannot model are
// refused with the key and the reason, informational keys pass, math-changing values fail, and Llama
// 3.1's rope_scaling is read into the model spec and round-trips through fsdpx's own schema.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/config_paths.h"
#include "core/json_reader.h"
#include "core/model_spec.h"

namespace fsdpx {
namespace {

const std::string kData = FSDPX_TEST_DATA_DIR;

std::string error_of(const nlohmann::json& j, const std::string& file = "c.json") {
  try {
    parse_model_spec(j, file);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

nlohmann::json hf(const std::string& dir) { return load_json_file(kData + "/hf/" + dir + "/config.json"); }

TEST_CASE("Gemma-2 as published is refused with what fsdpx lacks") {
  const std::string path = kData + "/hf/gemma-2-2b-it/config.json";
  std::string msg;
  try {
    load_model(path);
  } catch (const ConfigError& e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(msg.find(path + ": /architectures: ") == 0);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(contains(msg, "Gemma-2 is not modelled"));
  CHECK(contains(msg, "logit soft-capping"));
  CHECK(contains(msg, "sliding-window layers"));
  // Without "architectures" the model_type names the family and gets the same reason.
  auto j = hf("gemma-2-2b-it");
  j.erase("architectures");
  CHECK(contains(error_of(j), "c.json: /model_type: Gemma-2 is not modelled"));
}

// Mixtral was refused until issue 30 read its experts (tests/core/test_model_spec_moe.cpp); the model_type
// alone names the family as the architecture does.
TEST_CASE("Mixtral is read by architecture or by model_type alone") {
  auto j = hf("mixtral-8x7b-v0.1");
  const ModelSpec by_architecture = parse_model_spec(j, "c.json");
  j.erase("architectures");
  const ModelSpec by_type = parse_model_spec(j, "c.json");
  CHECK(by_type.moe.experts == 8);
  CHECK(model_spec_to_json(by_type) == model_spec_to_json(by_architecture));
}

// Qwen3 and OLMo-2 change the block (q/k norms; OLMo-2's norms after the sublayers): refused by
// architecture or model_type, whatever the shapes (a published Llama config relabelled, issue 35).
TEST_CASE("Qwen3 and OLMo-2 are refused with what fsdpx lacks") {
  const struct {
    const char* architecture;
    const char* model_type;
    const char* reason;
  } cases[] = {{"Qwen3ForCausalLM", "qwen3", "q_norm and k_norm"},
               {"Olmo2ForCausalLM", "olmo2", "norms after attention and MLP"}};
  for (const auto& c : cases) {
    auto j = hf("llama-3.1-8b");
    j["architectures"] = nlohmann::json::array({c.architecture});
    j["model_type"] = c.model_type;
    const std::string msg = error_of(j);
    INFO(msg);
    CHECK(contains(msg, "c.json: /architectures: "));
    CHECK(contains(msg, c.reason));
    j.erase("architectures");
    CHECK(contains(error_of(j), "c.json: /model_type: "));
  }
}

TEST_CASE("keys that would change the math are refused, naming the key and why") {
  struct Case {
    std::string dir, pointer;
    nlohmann::json value;
    std::string message;
  };
  const Case cases[] = {
      {"qwen2.5-7b", "/use_mrope", true, "/use_mrope: multimodal RoPE"},
      {"llama-3.1-8b", "/num_local_experts", 8, "/num_local_experts: mixture-of-experts"},
      {"qwen2.5-7b", "/num_experts", 64, "/num_experts: mixture-of-experts"},
      {"llama-3.1-8b", "/attn_logit_softcapping", 50.0, "/attn_logit_softcapping: attention logit soft-capping"},
      {"llama-3.1-8b", "/partial_rotary_factor", 0.5, "/partial_rotary_factor: RoPE on part of each head"},
      {"qwen2.5-7b", "/layer_types", {"full_attention", "sliding_attention"},
       "/layer_types/1: layer type \"sliding_attention\" is not modelled"},
      {"llama-3.1-8b", "/rope_scaling/rope_type", "longrope", "/rope_scaling/rope_type: RoPE scaling \"longrope\""},
      {"llama-3.1-8b", "/rope_scaling/high_freq_factor", 1.0, "/rope_scaling/high_freq_factor: must exceed"},
      {"llama-3.1-8b", "/rope_scaling/factor", 0.5, "/rope_scaling/factor: expected a factor >= 1"},
      {"llama-3.1-8b", "/rope_scaling/beta_fast", 32, "/rope_scaling/beta_fast: unknown key"},
      {"gpt2", "/scale_attn_by_inverse_layer_idx", true, "/scale_attn_by_inverse_layer_idx: attention scaled"},
      {"gpt2", "/scale_attn_weights", false, "/scale_attn_weights: unscaled attention"},
      {"mistral-7b-v0.1", "/head_dim_typo", 1, "/head_dim_typo: unknown key"},  // not informational
  };
  for (const auto& c : cases) {
    auto j = hf(c.dir);
    j[nlohmann::json::json_pointer(c.pointer)] = c.value;
    const auto msg = error_of(j);
    INFO(c.dir << c.pointer << " -> " << msg);
    CHECK(contains(msg, "c.json: " + c.message));
  }
  auto j = hf("llama-3.1-8b");
  j["rope_scaling"].erase("low_freq_factor");
  CHECK(contains(error_of(j), "c.json: /rope_scaling/low_freq_factor: missing"));
}

TEST_CASE("informational keys and the values fsdpx models are accepted") {
  auto j = hf("qwen2.5-7b");
  j["use_mrope"] = false;  // as published
  j["layer_types"] = nlohmann::json(28, "full_attention");  // transformers 5 writes it out
  j["pad_token_id"] = 151643;
  j["attention_dropout"] = 0.1;  // training regulariser: not applied, shapes unchanged
  CHECK(error_of(j).empty());
  auto l = hf("llama-3.1-8b");
  l["pretraining_tp"] = 2;
  l["partial_rotary_factor"] = 1.0;
  l["rope_scaling"] = nullptr;  // no scaling
  CHECK(parse_model_spec(l, "l.json").rope_scaling.kind == RopeScalingKind::none);
  l["rope_scaling"] = {{"type", "default"}};  // configs written before rope_type existed
  CHECK(parse_model_spec(l, "l.json").rope_scaling.kind == RopeScalingKind::none);
}

TEST_CASE("a sliding window in use caps max_seq at the window; one turned off does not") {
  auto q = hf("qwen2.5-7b");
  q["sliding_window"] = 32768;
  CHECK(parse_model_spec(q, "q.json").max_seq == 131072);  // use_sliding_window false: off
  q["use_sliding_window"] = true;
  CHECK(parse_model_spec(q, "q.json").max_seq == 32768);
  auto m = hf("mistral-7b-v0.1");
  CHECK(parse_model_spec(m, "m.json").max_seq == 4096);
  m["sliding_window"] = nullptr;  // Mistral v0.2 and later: full attention
  CHECK(parse_model_spec(m, "m.json").max_seq == 32768);
  m["sliding_window"] = 0;
  CHECK(contains(error_of(m), "c.json: /sliding_window:"));
}

TEST_CASE("Llama 3.1 rope_scaling is read and round-trips through fsdpx's schema") {
  const ModelSpec m = load_model(kData + "/hf/llama-3.1-8b/config.json");
  CHECK(m.rope_scaling.kind == RopeScalingKind::llama3);
  CHECK(m.rope_scaling.factor == 8.0);
  CHECK(m.rope_scaling.low_freq_factor == 1.0);
  CHECK(m.rope_scaling.high_freq_factor == 4.0);
  CHECK(m.rope_scaling.original_max_seq == 8192);
  const nlohmann::json own = model_spec_to_json(m);
  CHECK(own["rope_scaling"]["type"] == "llama3");
  CHECK(parse_model_spec(own, "own.json").rope_scaling == m.rope_scaling);
  CHECK(!model_spec_to_json(load_model(kData + "/hf/mistral-7b-v0.1/config.json")).contains("rope_scaling"));

  auto bad = own;
  bad["rope_scaling"]["type"] = "dynamic";
  CHECK(contains(error_of(bad), "c.json: /rope_scaling/type:"));
  bad["rope_scaling"]["type"] = "yarn";  // llama3's band keys are not YaRN's
  CHECK(contains(error_of(bad), "c.json: /rope_scaling/high_freq_factor: unknown key"));
  bad = own;
  bad["rope_scaling"]["original_max_seq"] = 0;
  CHECK(contains(error_of(bad), "c.json: /rope_scaling/original_max_seq:"));
  const ModelSpec g = load_model(kData + "/hf/gpt2/config.json");
  auto gj = model_spec_to_json(g);
  gj["rope_scaling"] = own["rope_scaling"];
  CHECK(contains(error_of(gj), "c.json: /rope_scaling: only arch llama has RoPE"));
}

// YaRN with transformers' defaults for the optional keys (beta 32 / 1, truncate, mscales and the attention
// factor unset).
RopeScaling yarn(double factor, std::int64_t original) {
  RopeScaling s;
  s.kind = RopeScalingKind::yarn, s.factor = factor, s.original_max_seq = original;
  return s;
}

TEST_CASE("YaRN rope_scaling keeps every key, takes transformers' defaults where absent, and round-trips") {
  // DeepSeek-V3 as published: yarn, factor 40, original 4096, beta 32 / 1, mscale 1, mscale_all_dim 1.
  const ModelSpec v3 = load_model(kData + "/hf/deepseek-v3/config.json");
  RopeScaling want = yarn(40.0, 4096);
  want.mscale = 1.0, want.mscale_all_dim = 1.0;
  CHECK(v3.rope_scaling == want);
  const nlohmann::json own = model_spec_to_json(v3);
  CHECK(own["rope_scaling"]["type"] == "yarn");
  CHECK(parse_model_spec(own, "own.json").rope_scaling == want);

  // transformers' defaults (_compute_yarn_parameters, standardize_rope_params): beta_fast 32 (null too),
  // beta_slow 1, truncate true, original_max_position_embeddings = max_position_embeddings, mscales unset.
  auto j = hf("deepseek-v3");
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4}, {"beta_fast", nullptr}};
  CHECK(parse_model_spec(j, "c.json").rope_scaling == yarn(4.0, 163840));
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 8},      {"original_max_position_embeddings", 2048},
                       {"beta_fast", 16},     {"beta_slow", 2},   {"mscale", 0.707}, {"mscale_all_dim", 0.5},
                       {"attention_factor", 1.25}, {"truncate", false}};
  const RopeScaling all = parse_model_spec(j, "c.json").rope_scaling;
  want = yarn(8.0, 2048);
  want.beta_fast = 16.0, want.beta_slow = 2.0, want.mscale = 0.707, want.mscale_all_dim = 0.5;
  want.attention_factor = 1.25, want.truncate = false;
  CHECK(all == want);
  ModelSpec back = v3;
  back.rope_scaling = all;
  CHECK(parse_model_spec(model_spec_to_json(back), "own.json").rope_scaling == all);

  // The Llama family reads YaRN too (Qwen2.5's long-context recipe: yarn, factor 4, original 32768).
  auto q = hf("qwen2.5-7b");
  q["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  CHECK(parse_model_spec(q, "q.json").rope_scaling == yarn(4.0, 32768));

  // Strict: unknown keys and values out of range name the JSON path.
  struct Bad {
    const char* key;
    nlohmann::json value;
    const char* message;
  };
  const Bad bad[] = {
      {"beta_fastt", 32, "/rope_scaling/beta_fastt: unknown key"},
      {"low_freq_factor", 1.0, "/rope_scaling/low_freq_factor: unknown key"},
      {"factor", 0.5, "/rope_scaling/factor:"},
      {"beta_fast", 0.5, "/rope_scaling/beta_fast: must be at least beta_slow"},
      {"beta_slow", 0, "/rope_scaling/beta_slow:"},
      {"mscale", -1.0, "/rope_scaling/mscale:"},
      {"mscale_all_dim", "1", "/rope_scaling/mscale_all_dim:"},
      {"attention_factor", 0.0, "/rope_scaling/attention_factor:"},
      {"truncate", 1, "/rope_scaling/truncate:"},
      {"original_max_position_embeddings", 0, "/rope_scaling/original_max_position_embeddings:"},
  };
  for (const Bad& b : bad) {
    auto k = hf("deepseek-v3");
    k["rope_scaling"][b.key] = b.value;
    const std::string msg = error_of(k);
    INFO(b.key << " -> " << msg);
    CHECK(contains(msg, std::string("c.json: ") + b.message));
  }
  auto missing = own;
  missing["rope_scaling"].erase("original_max_seq");  // fsdpx's schema states it
  CHECK(contains(error_of(missing), "c.json: /rope_scaling/original_max_seq: missing"));
}

}  // namespace
}  // namespace fsdpx
