// tests/executor/test_param_tensors.cpp — the parameter <-> safetensors mapping: names and shapes for a
// llama (untied, SwiGLU [gate | up] rows) and a gpt (positions, biases, tied head) model, the round
// trip of a full parameter vector, and the errors for a missing, extra, misshapen or non-F32 tensor.
#include <doctest/doctest.h>

#include <numeric>
#include <set>
#include <string>

#include "executor/checkpoint/param_tensors.h"
#include "tests/support/config_error.h"
#include "tiny_models.h"

namespace fsdpx {
namespace {

std::map<std::string, std::vector<std::int64_t>> shapes(const SafetensorsFile& f) {
  std::map<std::string, std::vector<std::int64_t>> out;
  for (const StTensor& t : f.tensors) out[t.name] = t.shape;
  return out;
}

std::vector<float> iota_params(const ParamLayout& layout) {
  std::vector<float> p(std::size_t(layout.total));
  std::iota(p.begin(), p.end(), 0.0f);
  return p;
}

std::string load_error(const ParamLayout& layout, const SafetensorsFile& f) {
  return test::config_error_of([&] { params_from_safetensors(layout, f, "w.safetensors"); });
}

}  // namespace

TEST_CASE("param tensors: llama names and shapes, linear weights [out, in]") {
  const ModelSpec s = test::tiny_llama();  // C 16, 4 heads / 2 kv of 4, F 24, V 13, untied
  const ParamLayout layout = make_param_layout(s);
  const auto sh = shapes(params_to_safetensors(layout, iota_params(layout)));
  const std::map<std::string, std::vector<std::int64_t>> want{
      {"embedding.tok.weight", {13, 16}},      {"final_norm.weight", {16}},         {"head.weight", {13, 16}},
      {"block.0.attn_norm.weight", {16}},      {"block.0.qkv.weight", {32, 16}},    // Q 16 + K 8 + V 8
      {"block.0.attn_out.weight", {16, 16}},   {"block.0.mlp_norm.weight", {16}},
      {"block.0.mlp_up.weight", {48, 16}},     {"block.0.mlp_down.weight", {16, 24}},  // [gate | up] = 2F
      {"block.1.attn_norm.weight", {16}},      {"block.1.qkv.weight", {32, 16}},
      {"block.1.attn_out.weight", {16, 16}},   {"block.1.mlp_norm.weight", {16}},
      {"block.1.mlp_up.weight", {48, 16}},     {"block.1.mlp_down.weight", {16, 24}}};
  CHECK(sh == want);
}

TEST_CASE("param tensors: gpt has positions, biases and no head matrix when tied") {
  const ParamLayout layout = make_param_layout(test::tiny_gpt());
  const auto sh = shapes(params_to_safetensors(layout, iota_params(layout)));
  CHECK(sh.at("embedding.pos.weight") == std::vector<std::int64_t>{8, 16});
  CHECK(sh.at("block.1.attn_norm.bias") == std::vector<std::int64_t>{16});
  CHECK(sh.at("block.0.qkv.bias") == std::vector<std::int64_t>{48});
  CHECK(sh.at("block.0.mlp_up.weight") == std::vector<std::int64_t>{32, 16});  // GELU: F rows
  CHECK(sh.at("final_norm.bias") == std::vector<std::int64_t>{16});
  CHECK(sh.count("head.weight") == 0);
  std::int64_t numel = 0;
  for (const auto& [name, shape] : sh) numel += shape.size() == 1 ? shape[0] : shape[0] * shape[1];
  CHECK(numel == layout.total);
}

TEST_CASE("param tensors: round trip in layout order; each tensor holds its slot's elements") {
  const ParamLayout layout = make_param_layout(test::tiny_llama());
  const std::vector<float> p = iota_params(layout);
  const SafetensorsFile f = params_to_safetensors(layout, p, {{"step", "0"}});
  CHECK(params_from_safetensors(layout, f, "w.safetensors") == p);
  const ModuleLayout& b1 = layout.modules[std::size_t(layout.block_index(1))];
  const TensorSlot* up = b1.find("mlp_up.weight");
  CHECK(st_to_floats(*f.find("block.1.mlp_up.weight"))[17] == float(b1.offset + up->offset + 17));
}

TEST_CASE("param tensors: missing, extra, misshapen and non-F32 tensors name the file and tensor") {
  const ParamLayout layout = make_param_layout(test::tiny_llama());
  const SafetensorsFile good = params_to_safetensors(layout, iota_params(layout));
  SUBCASE("missing") {
    SafetensorsFile f = good;
    std::erase_if(f.tensors, [](const StTensor& t) { return t.name == "block.1.qkv.weight"; });
    CHECK(load_error(layout, f) == "w.safetensors: /block.1.qkv.weight: missing (this model needs F32 [32, 16])");
  }
  SUBCASE("extra") {
    SafetensorsFile f = good;
    const float one[] = {1.0f};
    f.tensors.push_back(st_floats("block.2.qkv.weight", StDType::f32, {1}, one));
    CHECK(load_error(layout, f) == "w.safetensors: /block.2.qkv.weight: not a parameter of this model");
  }
  SUBCASE("wrong shape (transposed)") {
    SafetensorsFile f = good;
    for (StTensor& t : f.tensors)
      if (t.name == "block.0.mlp_down.weight") t.shape = {24, 16};
    CHECK(load_error(layout, f) == "w.safetensors: /block.0.mlp_down.weight/shape: [16, 24] expected, got [24, 16]");
  }
  SUBCASE("BF16 instead of F32") {
    SafetensorsFile f = good;
    for (StTensor& t : f.tensors)
      if (t.name == "final_norm.weight") t = st_floats(t.name, StDType::bf16, t.shape, st_to_floats(t));
    CHECK(load_error(layout, f) == "w.safetensors: /final_norm.weight/dtype: F32 expected, got BF16");
  }
}

}  // namespace fsdpx
