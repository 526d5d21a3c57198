// tests/executor/test_hf_export.cpp — the Hugging Face export (executor/checkpoint/hf_export.h): names,
// shapes and values of the split and transposed tensors, and the written config.json read back by
// fsdpx's own Hugging Face reader into the same model (an independent path: core/model_spec_hf.cpp
// follows transformers' config classes). Loading in transformers itself: tools/check_hf_export.py.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "core/model_spec.h"
#include "executor/checkpoint/hf_export.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {
namespace {

ModelSpec tiny(Arch arch) {
  ModelSpec m;
  m.name = "tiny";
  m.arch = arch;
  m.layers = 2;
  m.hidden = 16;
  m.heads = 4;
  m.kv_heads = arch == Arch::llama ? 2 : 4;
  m.head_dim = 4;
  m.ffn_hidden = arch == Arch::llama ? 24 : 64;
  m.ffn_kind = arch == Arch::llama ? FfnKind::swiglu : FfnKind::gelu;
  m.vocab = 32;
  m.max_seq = 8;
  m.tied_embeddings = arch == Arch::gpt;
  m.bias = arch == Arch::gpt ? LinearBias::all : LinearBias::none;
  m.norm_eps = arch == Arch::llama ? 1e-6 : 1e-5;
  return m;
}

std::vector<float> counting(const ModelSpec& m) {  // element k holds k: every value says where it came from
  std::vector<float> v(static_cast<std::size_t>(make_param_layout(m).total));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = float(k);
  return v;
}

float at(const ParamLayout& l, const std::string& module, const std::string& slot, std::int64_t row, std::int64_t col) {
  const ModuleLayout& m = l.modules[static_cast<std::size_t>(l.index_of(module))];
  const TensorSlot* t = m.find(slot);
  return float(m.offset + t->offset + row * t->cols + col);
}

void same_model(const ModelSpec& a, const ModelSpec& b) {
  CHECK(a.arch == b.arch);
  CHECK(a.layers == b.layers);
  CHECK(a.hidden == b.hidden);
  CHECK(a.heads == b.heads);
  CHECK(a.kv_heads == b.kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.ffn_hidden == b.ffn_hidden);
  CHECK(a.ffn_kind == b.ffn_kind);
  CHECK(a.vocab == b.vocab);
  CHECK(a.max_seq == b.max_seq);
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(a.bias == b.bias);
  CHECK(a.norm_eps == b.norm_eps);
  if (a.arch == Arch::llama) CHECK(a.rope_theta == b.rope_theta);
  CHECK(a.rope_scaling == b.rope_scaling);
}

TEST_CASE("llama export: q/k/v and gate/up split out of the fused tensors; config reads back") {
  ModelSpec m = tiny(Arch::llama);
  m.rope_theta = 500000.0;
  m.rope_scaling = {RopeScalingKind::llama3, 8.0, 1.0, 4.0, 8192};
  const ParamLayout l = make_param_layout(m);
  const HfCheckpoint c = to_hugging_face(m, counting(m));
  CHECK(c.weights.tensors.size() == 3 + 9 * 2);
  const StTensor* k = c.weights.find("model.layers.1.self_attn.k_proj.weight");
  REQUIRE(k != nullptr);
  CHECK(k->shape == std::vector<std::int64_t>{8, 16});
  CHECK(st_to_floats(*k)[17] == at(l, "block.1", "qkv.weight", 16 + 1, 1));  // K rows follow the 16 Q rows
  const StTensor* up = c.weights.find("model.layers.0.mlp.up_proj.weight");
  REQUIRE(up != nullptr);
  CHECK(up->shape == std::vector<std::int64_t>{24, 16});
  CHECK(st_to_floats(*up)[0] == at(l, "block.0", "mlp_up.weight", 24, 0));  // up rows follow the 24 gate rows
  CHECK(c.weights.find("model.norm.weight")->shape == std::vector<std::int64_t>{16});
  CHECK(c.config["architectures"][0] == "LlamaForCausalLM");
  same_model(parse_model_spec(c.config, "config.json"), m);

  m.bias = LinearBias::qkv;  // Qwen2's layout
  const HfCheckpoint q = to_hugging_face(m, counting(m));
  CHECK(q.config["architectures"][0] == "Qwen2ForCausalLM");
  CHECK(q.weights.find("model.layers.0.self_attn.v_proj.bias")->shape == std::vector<std::int64_t>{8});
  CHECK(q.weights.find("model.layers.0.self_attn.o_proj.bias") == nullptr);
  same_model(parse_model_spec(q.config, "config.json"), m);

  // YaRN (core/model_spec.h): every key written as transformers names it, and read back the same.
  m.rope_scaling = RopeScaling{};
  m.rope_scaling.kind = RopeScalingKind::yarn, m.rope_scaling.factor = 4.0, m.rope_scaling.original_max_seq = 1024;
  m.rope_scaling.beta_fast = 16.0, m.rope_scaling.mscale = 0.707, m.rope_scaling.mscale_all_dim = 0.5;
  m.rope_scaling.truncate = false;
  const HfCheckpoint y = to_hugging_face(m, counting(m));
  CHECK(y.config["rope_scaling"]["rope_type"] == "yarn");
  CHECK(y.config["rope_scaling"]["original_max_position_embeddings"] == 1024);
  CHECK_FALSE(y.config["rope_scaling"].contains("attention_factor"));  // computed by transformers, as by fsdpx
  same_model(parse_model_spec(y.config, "config.json"), m);
}

TEST_CASE("gpt export: Conv1D weights transposed, tied head left to wte; config reads back") {
  const ModelSpec m = tiny(Arch::gpt);
  const ParamLayout l = make_param_layout(m);
  const HfCheckpoint c = to_hugging_face(m, counting(m));
  const StTensor* fc = c.weights.find("transformer.h.1.mlp.c_fc.weight");
  REQUIRE(fc != nullptr);
  CHECK(fc->shape == std::vector<std::int64_t>{16, 64});  // [in, out]
  CHECK(st_to_floats(*fc)[2 * 64 + 5] == at(l, "block.1", "mlp_up.weight", 5, 2));
  CHECK(c.weights.find("lm_head.weight") == nullptr);
  CHECK(c.weights.find("transformer.wpe.weight")->shape == std::vector<std::int64_t>{8, 16});
  CHECK(c.config["activation_function"] == "gelu_new");
  same_model(parse_model_spec(c.config, "config.json"), m);

  ModelSpec nb = m;
  nb.bias = LinearBias::none;  // GPT-2 always has biases: exported as zeros
  const HfCheckpoint z = to_hugging_face(nb, counting(nb));
  const std::vector<float> b = st_to_floats(*z.weights.find("transformer.h.0.attn.c_attn.bias"));
  CHECK(b == std::vector<float>(48, 0.0f));
}

TEST_CASE("models transformers cannot express are refused with the reason") {
  ModelSpec m = tiny(Arch::llama);
  m.ffn_kind = FfnKind::squared_relu;
  CHECK_THROWS_WITH_AS(to_hugging_face(m, counting(m)), doctest::Contains("export-hf: model tiny: "), ConfigError);
  ModelSpec g = tiny(Arch::gpt);
  g.kv_heads = 2;
  CHECK_THROWS_WITH_AS(to_hugging_face(g, counting(g)), doctest::Contains("kv_heads = heads"), ConfigError);
}

}  // namespace
}  // namespace fsdpx
