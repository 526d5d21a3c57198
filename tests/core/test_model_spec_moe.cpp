// tests/core/test_model_spec_moe.cpp — mixture-of-experts and latent-attention model specs
// (core/model_spec_moe.h, core/model_spec_hf_moe.h): the published Mixtral-8x7B, Qwen3-30B-A3B and
// DeepSeek-V3 config.json files read into the fields transformers' modelling code uses, fsdpx's own schema
// round-trips them, inconsistent or unmodelled values fail naming the key, and plans refuse the models.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/config_paths.h"
#include "core/json_reader.h"
#include "core/model_spec.h"
#include "core/model_spec_moe.h"
#include "tests/support/config_error.h"

namespace fsdpx {
namespace {

const std::string kData = FSDPX_TEST_DATA_DIR;
const std::string kConfigs = FSDPX_CONFIG_DIR_FOR_TESTS;

nlohmann::json hf(const std::string& dir) { return load_json_file(kData + "/hf/" + dir + "/config.json"); }

std::string error_of(const nlohmann::json& j, const std::string& file = "c.json") {
  return test::config_error_of([&] { parse_model_spec(j, file); });
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void check_round_trip(const ModelSpec& m) {
  const ModelSpec back = parse_model_spec(model_spec_to_json(m), "roundtrip");
  CHECK(model_spec_to_json(back) == model_spec_to_json(m));
}

}  // namespace

TEST_CASE("Mixtral-8x7B as published: 8 experts of intermediate_size, top-2, softmax, renormalised") {
  const ModelSpec m = load_model(kData + "/hf/mixtral-8x7b-v0.1/config.json");
  CHECK(m.is_moe());
  CHECK_FALSE(m.is_mla());
  CHECK(m.layers == 32);
  CHECK(m.heads == 32);
  CHECK(m.kv_heads == 8);
  CHECK(m.moe.experts == 8);
  CHECK(m.moe.top_k == 2);
  CHECK(m.moe.expert_ffn_hidden == 14336);
  CHECK(m.moe.shared_experts == 0);
  CHECK(m.moe.dense_layers == 0);
  CHECK(m.moe.scoring == RouterScoring::softmax);
  CHECK(m.moe.norm_topk_prob);
  CHECK(m.moe.capacity_factor == 0.0);  // dropless
  CHECK(m.moe.aux_loss_coef == 0.0);    // output_router_logits false: transformers adds no aux loss
  CHECK_FALSE(m.qk_norm);
  check_round_trip(m);
  auto j = hf("mixtral-8x7b-v0.1");
  j["output_router_logits"] = true;
  CHECK(parse_model_spec(j, "c.json").moe.aux_loss_coef == 0.02);
}

TEST_CASE("Qwen3-30B-A3B as published: 128 experts of 768, top-8, q/k norms, head_dim 128") {
  const ModelSpec m = load_model(kData + "/hf/qwen3-30b-a3b/config.json");
  CHECK(m.layers == 48);
  CHECK(m.hidden == 2048);
  CHECK(m.heads == 32);
  CHECK(m.kv_heads == 4);
  CHECK(m.head_dim == 128);
  CHECK(m.bias == LinearBias::none);
  CHECK(m.qk_norm);
  CHECK(m.moe.experts == 128);
  CHECK(m.moe.top_k == 8);
  CHECK(m.moe.expert_ffn_hidden == 768);
  CHECK(m.moe.norm_topk_prob);
  CHECK(m.moe.shared_experts == 0);
  check_round_trip(m);
}

TEST_CASE("DeepSeek-V3 as published: latent attention, 3 dense layers, 1 shared + 256 routed experts") {
  const ModelSpec m = load_model(kData + "/hf/deepseek-v3/config.json");
  CHECK(m.layers == 61);
  CHECK(m.hidden == 7168);
  CHECK(m.heads == 128);
  CHECK(m.head_dim == 192);  // qk_nope 128 + qk_rope 64
  CHECK(m.ffn_hidden == 18432);
  CHECK(m.vocab == 129280);
  CHECK(m.is_mla());
  CHECK(m.mla.q_lora_rank == 1536);
  CHECK(m.mla.kv_lora_rank == 512);
  CHECK(m.mla.qk_rope_head_dim == 64);
  CHECK(m.mla.qk_nope_head_dim == 128);
  CHECK(m.mla.v_head_dim == 128);
  CHECK(m.moe.experts == 256);
  CHECK(m.moe.top_k == 8);
  CHECK(m.moe.expert_ffn_hidden == 2048);
  CHECK(m.moe.shared_experts == 1);
  CHECK(m.moe.shared_ffn_hidden == 2048);
  CHECK(m.moe.dense_layers == 3);
  CHECK(m.moe.scoring == RouterScoring::sigmoid);
  CHECK(m.moe.score_correction_bias);
  CHECK(m.moe.groups == 8);
  CHECK(m.moe.topk_groups == 4);
  CHECK(m.moe.routed_scaling == 2.5);
  CHECK(m.moe.aux_loss_coef == 0.001);
  CHECK(m.rope_scaling.kind == RopeScalingKind::yarn);  // every YaRN key kept (test_hf_config_keys.cpp)
  CHECK(m.rope_scaling.factor == 40.0);
  CHECK(m.rope_scaling.original_max_seq == 4096);
  CHECK(m.rope_scaling.mscale_all_dim == 1.0);
  CHECK(m.norm_eps == 1e-6);
  check_round_trip(m);
}

TEST_CASE("the tiny MoE configs load and round-trip") {
  const ModelSpec mx = load_model(kConfigs + "/models/mixtral-tiny.json");
  CHECK(mx.moe.experts == 4);
  CHECK_FALSE(mx.is_mla());
  check_round_trip(mx);
  const ModelSpec ds = load_model(kConfigs + "/models/deepseek-tiny.json");
  CHECK(ds.is_mla());
  CHECK(ds.moe.dense_layers == 1);
  CHECK(ds.moe.shared_experts == 1);
  check_round_trip(ds);
}

TEST_CASE("unmodelled MoE variants in Hugging Face configs fail naming the key") {
  const struct {
    const char* dir;
    const char* key;
    nlohmann::json value;
  } cases[] = {{"qwen3-30b-a3b", "decoder_sparse_step", 2},
               {"qwen3-30b-a3b", "mlp_only_layers", nlohmann::json::array({3})},
               {"qwen3-30b-a3b", "num_experts_per_tok", 129},
               {"mixtral-8x7b-v0.1", "router_jitter_noise", 0.1},
               {"deepseek-v3", "moe_layer_freq", 2},
               {"deepseek-v3", "scoring_func", "softmax"},
               {"deepseek-v3", "topk_method", "greedy"},
               {"deepseek-v3", "attention_bias", true},
               {"deepseek-v3", "first_k_dense_replace", 61},
               {"deepseek-v3", "n_group", 3},
               {"deepseek-v3", "qk_head_dim", 128},
               {"deepseek-v3", "unknown_key", 1}};
  for (const auto& c : cases) {
    auto j = hf(c.dir);
    j[c.key] = c.value;
    const std::string msg = error_of(j);
    INFO(c.dir << " " << c.key << " -> " << msg);
    CHECK(contains(msg, std::string("c.json: /") + c.key + ":"));
  }
  auto m = hf("mixtral-8x7b-v0.1");
  m["attention_bias"] = true;
  m["mlp_bias"] = true;
  CHECK(contains(error_of(m), "c.json: /mlp_bias: biases on the expert MLPs are not modelled"));
  auto j = hf("deepseek-v3");
  j["rope_scaling"]["type"] = "dynamic";
  CHECK(contains(error_of(j), "c.json: /rope_scaling/type:"));
}

TEST_CASE("expert keys in a dense architecture are refused") {
  for (const char* key : {"num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size"}) {
    auto j = hf("mistral-7b-v0.1");
    j[key] = 8;
    const std::string msg = error_of(j);
    INFO(msg);
    CHECK(contains(msg, std::string("c.json: /") + key + ": mixture-of-experts keys in a dense architecture"));
  }
}

TEST_CASE("own schema: MoE and MLA layout errors name the path") {
  const auto base = load_json_file(kConfigs + "/models/deepseek-tiny.json");
  const struct {
    const char* path;
    nlohmann::json value;
    const char* expect;
  } cases[] = {{"/moe/top_k", 9, "/moe/top_k: top_k (9) exceeds the 8 experts"},
               {"/moe/groups", 3, "/moe/groups:"},
               {"/moe/dense_layers", 3, "/moe/dense_layers: 3 dense layers leave no MoE layer of 3"},
               {"/moe/shared_ffn_hidden", nullptr, "/moe/shared_ffn_hidden:"},
               {"/moe/scoring", "relu", "/moe/scoring:"},
               {"/moe/experts", 0, "/moe/experts:"},
               {"/moe/extra", 1, "/moe/extra:"},
               {"/mla/kv_lora_rank", 0, "/mla/kv_lora_rank:"},
               {"/head_dim", 32, "/head_dim: head_dim (32) must equal qk_nope_head_dim + qk_rope_head_dim"},
               {"/ffn_kind", "gelu", "/moe: modelled for arch llama with swiglu MLPs only"},
               {"/bias", "qkv", "/moe: experts and latent projections are modelled without biases"}};
  for (const auto& c : cases) {
    auto j = base;
    if (c.value.is_null()) j["moe"].erase("shared_ffn_hidden");
    else j[nlohmann::json::json_pointer(c.path)] = c.value;
    const std::string msg = error_of(j, "m.json");
    INFO(c.path << " -> " << msg);
    CHECK(contains(msg, std::string("m.json: ") + c.expect));
  }
}

TEST_CASE("MoE, latent-attention, q/k-norm and YaRN models are planned and simulated") {
  const ModelSpec llama = load_model(kConfigs + "/models/llama-tiny.json");
  CHECK_FALSE(unplanned_model_reason(llama));
  CHECK_FALSE(has_moe_parts(llama));
  const ModelSpec mx = load_model(kConfigs + "/models/mixtral-tiny.json");
  CHECK_FALSE(unplanned_model_reason(mx));  // the target's row decides (planner/ep_degrees.h)
  CHECK(has_moe_parts(mx));
  ModelSpec dense_mla = load_model(kConfigs + "/models/deepseek-tiny.json");
  dense_mla.moe = MoeSpec{};
  CHECK(has_moe_parts(dense_mla));
  CHECK_FALSE(unsimulated_model_reason(dense_mla));  // cost_models/compute_mla.cpp
  ModelSpec qk = llama;
  qk.qk_norm = true;
  CHECK(has_moe_parts(qk));
  CHECK_FALSE(unsimulated_model_reason(qk));
  qk.qk_norm = false;
  qk.rope_scaling = load_model(kData + "/hf/deepseek-v3/config.json").rope_scaling;  // YaRN: RoPE, no new part
  CHECK(qk.rope_scaling.kind == RopeScalingKind::yarn);
  CHECK_FALSE(has_moe_parts(qk));
  CHECK_NOTHROW(refuse_unplanned_model(qk, "plan.json", "/model"));
  CHECK_NOTHROW(refuse_unsimulated_model(load_model(kConfigs + "/models/deepseek-tiny.json"), "plan.json", "/model"));
}

}  // namespace fsdpx
