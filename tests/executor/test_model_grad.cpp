// tests/executor/test_model_grad.cpp — end-to-end gradient check of the llama and gpt models in double:
// loss w.r.t. sampled parameters of every tensor of every module against central differences; the
// loss at initialisation against ln V (near-uniform logits); float against double; the RoPE base and
// norm epsilon taken from the ModelSpec.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "executor/model/init.h"
#include "executor/model/transformer.h"
#include "tests/executor/grad_check.h"
#include "tests/executor/model_grad_fixture.h"
#include "tests/executor/tiny_models.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

// Away from the tiny init so every nonlinearity is exercised (norm scales stay near 1): model_grad_fixture.h.
void check_model_gradients(const ModelSpec& spec) {
  test::NoisyModel nm(spec);
  const ParamLayout& layout = nm.model.layout();
  auto f = [&] { return nm.loss(); };
  for (int m = 0; m < layout.num_modules(); ++m) {
    if (layout.modules[std::size_t(m)].numel == 0) continue;  // tied head
    const auto r = test::check_grad(nm.params, nm.grads, f, test::sample_module(layout, m));
    FSDPX_CHECK_GRAD(spec.name + " " + layout.modules[std::size_t(m)].name, r, 1e-6);
  }
  CHECK(f() == nm.first_loss);  // the check restored every parameter
}

TEST_CASE("llama model gradients match finite differences") {
  check_model_gradients(test::tiny_llama());
}

TEST_CASE("gpt model gradients match finite differences") {
  check_model_gradients(test::tiny_gpt());
}

TEST_CASE("variant: qkv bias, tied head, squared ReLU, multi-query attention") {
  ModelSpec s = test::tiny_llama();
  s.name = "llama-variant";
  s.bias = LinearBias::qkv;
  s.tied_embeddings = true;
  s.ffn_kind = FfnKind::squared_relu;
  s.kv_heads = 1;
  check_model_gradients(s);
}

TEST_CASE("variant: Llama 3 RoPE base and a large norm epsilon") {
  for (ModelSpec s : {test::tiny_llama(), test::tiny_gpt()}) {
    s.name += "-theta-eps";
    s.rope_theta = 500000.0;  // unused by gpt
    s.norm_eps = 1e-2;
    check_model_gradients(s);
  }
}

// The model reads rope_theta and norm_eps from its ModelSpec (no other source): each changes the loss.
TEST_CASE("the spec's RoPE base and norm epsilon change the loss") {
  auto loss_of = [](const ModelSpec& spec) {
    Transformer<double> model(spec, 2, 5);
    std::vector<double> params(std::size_t(model.layout().total));
    init_all(model.layout(), 42, params.data());
    std::mt19937 rng(3);  // away from the tiny init, as check_model_gradients, so positions matter
    std::normal_distribution<double> noise(0.0, 0.3);
    for (double& p : params) p += noise(rng);
    const auto batch = test::random_tokens(2, 5, spec.vocab, 11);
    return model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  };
  const ModelSpec llama = test::tiny_llama();
  CHECK(llama.rope_theta == 10000.0);  // RoFormer / Llama 2 default
  CHECK(llama.norm_eps == 1e-5);
  const double base = loss_of(llama);
  CHECK(loss_of(llama) == base);  // deterministic: any difference below comes from the spec
  ModelSpec theta = llama;
  theta.rope_theta = 500000.0;
  const double with_theta = loss_of(theta);
  INFO("loss theta 1e4 " << base << ", theta 5e5 " << with_theta);
  CHECK(std::abs(with_theta - base) > 1e-9);
  for (ModelSpec eps : {llama, test::tiny_gpt()}) {
    const double before = loss_of(eps);
    eps.norm_eps = 1e-1;
    const double after = loss_of(eps);
    INFO(eps.name << ": loss eps 1e-5 " << before << ", eps 1e-1 " << after);
    CHECK(std::abs(after - before) > 1e-6);
  }
  ModelSpec gpt = test::tiny_gpt();
  const double gpt_base = loss_of(gpt);
  gpt.rope_theta = 500000.0;  // gpt has learned positions: the base is not used
  CHECK(loss_of(gpt) == gpt_base);
}

TEST_CASE("loss at initialisation is close to ln V") {
  // Init weights are N(0, 0.02): logits have std ≈ 0.02·√C, so the softmax is nearly uniform and
  // the loss is ln V + O(var) (var ≈ 0.0064 for C = 16).
  for (const ModelSpec& spec : {test::tiny_llama(), test::tiny_gpt()}) {
    Transformer<double> model(spec, 2, 6);
    std::vector<double> params(std::size_t(model.layout().total));
    init_all(model.layout(), 7, params.data());
    const auto batch = test::random_tokens(2, 6, spec.vocab, 1);
    const double loss = model.forward(params.data(), batch.tokens.data(), batch.targets.data());
    INFO(spec.name << " loss " << loss << " ln V " << std::log(double(spec.vocab)));
    CHECK(std::abs(loss - std::log(double(spec.vocab))) < 0.02);
  }
}

TEST_CASE("float model agrees with the double model") {
  for (const ModelSpec& spec : {test::tiny_llama(), test::tiny_gpt()}) {
    Transformer<double> md(spec, 2, 6);
    Transformer<float> mf(spec, 2, 6);
    const auto n = std::size_t(md.layout().total);
    std::vector<double> pd(n), gd(n, 0.0);
    std::vector<float> pf(n), gf(n, 0.0f);
    init_all(md.layout(), 5, pd.data());
    init_all(mf.layout(), 5, pf.data());
    const auto batch = test::random_tokens(2, 6, spec.vocab, 2);
    const double ld = md.forward(pd.data(), batch.tokens.data(), batch.targets.data());
    const float lf = mf.forward(pf.data(), batch.tokens.data(), batch.targets.data());
    md.backward(pd.data(), gd.data());
    mf.backward(pf.data(), gf.data());
    double max_diff = 0, max_ref = 0;
    for (std::size_t i = 0; i < n; ++i) {
      max_diff = ::fsdpx::test::nan_max(max_diff, std::abs(double(gf[i]) - gd[i]));
      max_ref = ::fsdpx::test::nan_max(max_ref, std::abs(gd[i]));
    }
    INFO(spec.name << ": loss " << lf << " vs " << ld << "; grad maxdiff " << max_diff << " of max " << max_ref);
    CHECK(std::abs(double(lf) - ld) < 1e-5 * ld);
    CHECK(max_diff < 1e-4 * max_ref);
  }
}

TEST_CASE("backward accumulates into gradients and scales with dloss") {
  const ModelSpec spec = test::tiny_gpt();
  Transformer<double> model(spec, 1, 4);
  std::vector<double> params(std::size_t(model.layout().total)), g1(params.size(), 0.0), g2(params.size(), 0.0);
  init_all(model.layout(), 9, params.data());
  const auto batch = test::random_tokens(1, 4, spec.vocab, 3);
  model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  model.backward(params.data(), g1.data(), 1.0);
  model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  model.backward(params.data(), g2.data(), 0.25);
  model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  model.backward(params.data(), g2.data(), 0.75);
  double max_diff = 0;
  for (std::size_t i = 0; i < g1.size(); ++i) max_diff = ::fsdpx::test::nan_max(max_diff, std::abs(g1[i] - g2[i]));
  INFO("maxdiff " << max_diff);
  CHECK(max_diff < 1e-15);
}

}  // namespace
}  // namespace fsdpx
