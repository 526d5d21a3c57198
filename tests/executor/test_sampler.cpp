// tests/executor/test_sampler.cpp — next-token sampling (executor/model/sampler.h): greedy is the
// argmax, temperature reshapes the distribution as softmax(logits / T), the generator makes sampling
// repeatable, and the window slides over long contexts. Uses a seeded random llama-tiny-sized model.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/sampler.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx {
namespace {

TEST_CASE("draw_token: argmax at temperature 0, inverse CDF of p^(1/T) otherwise") {
  const std::vector<float> p{0.1f, 0.6f, 0.0f, 0.3f};
  CHECK(draw_token(p, 0.0, 0.99) == 1);
  // T = 1: cumulative 0.1, 0.7, 0.7, 1.0.
  CHECK(draw_token(p, 1.0, 0.05) == 0);
  CHECK(draw_token(p, 1.0, 0.65) == 1);
  CHECK(draw_token(p, 1.0, 0.71) == 3);  // p = 0 is never drawn
  // T = 0.5: weights p^2 = 0.01, 0.36, 0, 0.09 (total 0.46): id 0 below u = 0.01/0.46 = 0.0217.
  CHECK(draw_token(p, 0.5, 0.021) == 0);
  CHECK(draw_token(p, 0.5, 0.023) == 1);
  CHECK(draw_token(p, 0.5, 0.80) == 1);  // (0.01 + 0.36) / 0.46 = 0.804
  CHECK(draw_token(p, 0.5, 0.81) == 3);
}

TEST_CASE("sample_tokens is repeatable per seed and stays within the vocabulary limit") {
  ModelSpec m;
  m.name = "t";
  m.layers = 1;
  m.hidden = 16;
  m.heads = 2;
  m.kv_heads = 1;
  m.head_dim = 8;
  m.ffn_hidden = 32;
  m.vocab = 300;
  m.max_seq = 16;
  std::vector<float> params(static_cast<std::size_t>(make_param_layout(m).total));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  for (float& x : params) x = normal(rng);
  const std::vector<std::int32_t> prompt{1, 2, 3};
  SampleOptions o;
  o.tokens = 30;  // 33 tokens of context: the 8-token window slides
  o.window = 8;
  o.vocab_limit = 256;
  o.temperature = 1.0;
  o.seed = 5;
  const auto a = sample_tokens(m, params, prompt, o), b = sample_tokens(m, params, prompt, o);
  CHECK(a == b);
  CHECK(a.size() == 30);
  for (auto t : a) CHECK((t >= 0 && t < 256));
  o.seed = 6;
  CHECK(sample_tokens(m, params, prompt, o) != a);
  o.temperature = 0;
  const auto g = sample_tokens(m, params, prompt, o);
  o.seed = 7;
  CHECK(sample_tokens(m, params, prompt, o) == g);  // greedy ignores the seed
}

}  // namespace
}  // namespace fsdpx
