// tests/executor/test_rope_yarn.cpp — YaRN's RoPE (executor/model/rope_table.h) against Hugging Face
// transformers: the inverse frequencies and cos/sin scale of modeling_rope_utils.py
// _compute_yarn_parameters and DeepSeek's softmax-scale factor (modeling_deepseek_v3.py yarn_apply_mscale),
// recorded by tools/yarn_reference.py in tests/data/rope/yarn_transformers.json, each case's rope_scaling
// read by fsdpx's Hugging Face reader (so its defaults are checked too); and the tables built from them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/config_paths.h"
#include "core/json_reader.h"
#include "core/model_spec.h"
#include "core/rope_scaling_json.h"
#include "executor/model/mla_attention.h"
#include "executor/model/rope_table.h"

namespace fsdpx {
namespace {

const std::string kData = FSDPX_TEST_DATA_DIR;

RopeScaling read_case(const nlohmann::json& c, std::size_t index) {
  JsonObject o(c.at("rope_scaling"), "yarn_transformers.json", "/cases/" + std::to_string(index) + "/rope_scaling");
  const RopeScaling s = detail::read_hf_rope_scaling(o, c.at("max_position_embeddings").get<std::int64_t>());
  o.finish();
  return s;
}

TEST_CASE("YaRN's frequencies, cos/sin scale and softmax factor match transformers' own functions") {
  const nlohmann::json fixture = load_json_file(kData + "/rope/yarn_transformers.json");
  const auto& cases = fixture.at("cases");
  REQUIRE(cases.size() >= 6);
  double maxdiff = 0;
  bool some_pair_blended = false;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    INFO("case " << c.at("name").get<std::string>());
    const RopeScaling s = read_case(c, k);
    REQUIRE(s.kind == RopeScalingKind::yarn);
    const auto dim = c.at("dim").get<std::int64_t>();
    const double theta = c.at("rope_theta").get<double>();
    const auto& want = c.at("inv_freq");
    REQUIRE(std::int64_t(want.size()) == dim / 2);
    for (std::int64_t i = 0; i < dim / 2; ++i) {
      INFO("pair " << i);
      const double w = want[std::size_t(i)].get<double>();
      const double got = rope_inv_freq(i, dim, theta, s);
      const double plain = std::pow(theta, -2.0 * double(i) / double(dim));
      // transformers computes in fp32 (its pow of theta included): measured 5.3e-7 relative at most; a
      // misplaced ramp end moves a blended pair by 1/(high - low) of its (factor - 1)/factor span.
      CHECK(got == doctest::Approx(w).epsilon(2e-6));
      maxdiff = std::max(maxdiff, std::abs(got - w) / w);
      const double interpolated = (plain - w) / (plain - plain / s.factor);  // 0 kept, 1 divided by factor
      some_pair_blended = some_pair_blended || (interpolated > 0.1 && interpolated < 0.9);
    }
    CHECK(rope_attention_factor(s) == doctest::Approx(c.at("attention_factor").get<double>()).epsilon(1e-12));
    CHECK(yarn_softmax_scale_factor(s) ==
          doctest::Approx(c.at("softmax_scale_factor").get<double>()).epsilon(1e-12));
  }
  MESSAGE("maxdiff (relative) of the inverse frequencies " << maxdiff);
  CHECK(some_pair_blended);  // the cases reach the ramp's middle, not only its ends
}

TEST_CASE("DeepSeek-V3's YaRN: the numbers, the table, and latent attention's softmax factor") {
  const ModelSpec v3 = load_model(kData + "/hf/deepseek-v3/config.json");
  const RopeScaling& s = v3.rope_scaling;
  // mscale = mscale_all_dim = 1: cos/sin unscaled; softmax scale times (0.1 ln 40 + 1)^2.
  const double mscale = 0.1 * std::log(40.0) + 1.0;
  CHECK(rope_attention_factor(s) == 1.0);
  CHECK(yarn_softmax_scale_factor(s) == doctest::Approx(mscale * mscale).epsilon(1e-15));
  CHECK(make_mla_dims(v3, 1, 8).softmax_scale_factor == doctest::Approx(mscale * mscale).epsilon(1e-15));
  // Pair 0 turns 4096 / 2π = 652 times over the original context (> beta_fast 32): kept. Pair 31 turns
  // 4096 · 10000^(-62/64) / 2π = 0.87 times (< beta_slow 1): divided by 40.
  CHECK(rope_inv_freq(0, 64, v3.rope_theta, s) == 1.0);
  CHECK(rope_inv_freq(31, 64, v3.rope_theta, s) ==
        doctest::Approx(std::pow(10000.0, -62.0 / 64.0) / 40.0).epsilon(1e-14));

  // A table scales cos and sin by the attention factor (given here): |(cos, sin)| = factor.
  RopeScaling given = s;
  given.attention_factor = 1.25;
  const auto tab = make_rope_table<double>(300, 64, v3.rope_theta, given);
  for (std::int64_t t : {0, 17, 299})
    for (std::int64_t i : {0, 12, 31}) {
      const auto k = std::size_t(t * 32 + i);
      const double angle = double(t) * rope_inv_freq(i, 64, v3.rope_theta, s);
      CHECK(tab.cos[k] == doctest::Approx(1.25 * std::cos(angle)).epsilon(1e-12));
      CHECK(tab.sin[k] == doctest::Approx(1.25 * std::sin(angle)).epsilon(1e-12));
    }
  CHECK(yarn_softmax_scale_factor(RopeScaling{}) == 1.0);
  CHECK(rope_attention_factor(RopeScaling{}) == 1.0);
}

}  // namespace
}  // namespace fsdpx
