// tests/executor/test_moe_mlp.cpp — the CPU mixture-of-experts MLP (executor/model/moe_mlp.h): its forward
// against a token-by-token reference written from MixtralSparseMoeBlock's definition, the load-balancing
// statistics, the MoE model's gradients against central differences in double (router, experts, the aux
// loss's path through the probabilities; renormalised and raw top-k weights, a leading dense block), and
// the MoE block layout against cost_models' count.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

#include "cost_models/moe_params.h"
#include "executor/model/init.h"
#include "executor/model/moe_mlp.h"
#include "executor/model/transformer.h"
#include "tests/executor/grad_check.h"
#include "tests/executor/model_grad_fixture.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx {
namespace {

ModelSpec tiny_moe(bool norm_topk, double aux_coef) {
  ModelSpec s = test::tiny_llama();
  s.name = "tiny-moe";
  s.moe.experts = 4, s.moe.top_k = 2, s.moe.expert_ffn_hidden = 6;
  s.moe.norm_topk_prob = norm_topk, s.moe.aux_loss_coef = aux_coef;
  return s;
}

// One token through the MoE MLP as the definition reads: softmax router, the k largest, optional
// renormalisation, Σ w · W2 (silu(W1 x) ⊙ W3 x).
std::vector<double> reference_token(const MoeDims& d, const MoeTensors<const double*>& p, const double* x) {
  std::vector<double> prob(std::size_t(d.e));
  for (std::int64_t e = 0; e < d.e; ++e)
    prob[std::size_t(e)] = std::inner_product(x, x + d.c, p.router_w + e * d.c, 0.0);
  const double mx = *std::max_element(prob.begin(), prob.end());
  double z = 0;
  for (double& v : prob) v = std::exp(v - mx), z += v;
  for (double& v : prob) v /= z;
  std::vector<int> order(std::size_t(d.e));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return prob[std::size_t(a)] > prob[std::size_t(b)]; });
  double sel = 0;
  for (std::int64_t s = 0; s < d.k; ++s) sel += prob[std::size_t(order[std::size_t(s)])];
  std::vector<double> out(std::size_t(d.c), 0.0);
  for (std::int64_t s = 0; s < d.k; ++s) {
    const int e = order[std::size_t(s)];
    const double w = prob[std::size_t(e)] / (d.norm_topk ? sel : 1.0);
    const double* up = p.up_w + e * 2 * d.f * d.c;
    std::vector<double> a(std::size_t(d.f));
    for (std::int64_t j = 0; j < d.f; ++j) {
      const double g = std::inner_product(x, x + d.c, up + j * d.c, 0.0);
      const double u = std::inner_product(x, x + d.c, up + (d.f + j) * d.c, 0.0);
      a[std::size_t(j)] = g / (1 + std::exp(-g)) * u;
    }
    for (std::int64_t i = 0; i < d.c; ++i)
      out[std::size_t(i)] += w * std::inner_product(a.begin(), a.end(), p.down_w + (e * d.c + i) * d.f, 0.0);
  }
  return out;
}

TEST_CASE("MoE MLP forward equals a token-by-token reference; balance statistics count every pick") {
  for (bool norm : {true, false}) {
    const MoeDims d = make_moe_dims(tiny_moe(norm, 0.02), 9);
    std::mt19937 rng(5);
    const auto router = test::random_vector(std::size_t(d.e * d.c), rng);
    const auto up = test::random_vector(std::size_t(d.e * 2 * d.f * d.c), rng, 0.5);
    const auto down = test::random_vector(std::size_t(d.e * d.c * d.f), rng, 0.5);
    const auto x = test::random_vector(std::size_t(d.n * d.c), rng);
    const MoeTensors<const double*> p{router.data(), up.data(), down.data()};
    MoeActs<double> a;
    a.allocate(d);
    std::vector<double> out(std::size_t(d.n * d.c));
    moe_forward(d, p, x.data(), out.data(), a, nullptr, 0);
    double maxdiff = 0;
    for (std::int64_t n = 0; n < d.n; ++n) {
      const auto ref = reference_token(d, p, x.data() + n * d.c);
      for (std::int64_t i = 0; i < d.c; ++i) maxdiff = std::max(maxdiff, std::abs(ref[std::size_t(i)] - out[std::size_t(n * d.c + i)]));
    }
    INFO("norm_topk " << norm << " maxdiff " << maxdiff);
    CHECK(maxdiff < 1e-12);
    CHECK(std::accumulate(a.count.begin(), a.count.end(), 0.0) == doctest::Approx(double(d.n * d.k)));
    CHECK(std::accumulate(a.prob_sum.begin(), a.prob_sum.end(), 0.0) == doctest::Approx(double(d.n)));
  }
}

void check_moe_gradients(const ModelSpec& spec) {
  test::NoisyModel nm(spec);  // away from the tiny init: routing far from ties
  const ParamLayout& layout = nm.model.layout();
  auto f = [&] { return nm.loss(); };
  FSDPX_CHECK_GRAD(spec.name, test::check_grad(nm.params, nm.grads, f, test::sample_all(layout)), 1e-6);
  // The router's gradient (block 1: no dense leading block there) against every element.
  const ModuleLayout& blk = layout.modules[std::size_t(layout.block_index(spec.layers - 1))];
  const auto router = test::every_element(blk, "router.weight");
  REQUIRE(!router.empty());
  FSDPX_CHECK_GRAD(spec.name + " router", test::check_grad(nm.params, nm.grads, f, router), 1e-6);
}

TEST_CASE("MoE model gradients match finite differences") {
  SUBCASE("renormalised top-k, aux loss 0.5") { check_moe_gradients(tiny_moe(true, 0.5)); }
  SUBCASE("raw top-k weights, aux loss 0.5") { check_moe_gradients(tiny_moe(false, 0.5)); }
  SUBCASE("a leading dense block, no aux loss") {
    ModelSpec s = tiny_moe(true, 0.0);
    s.moe.dense_layers = 1;
    check_moe_gradients(s);
  }
}

TEST_CASE("MoE blocks that recompute give bit-identical loss and gradients (aux statistics counted once)") {
  double l0 = 0, l1 = 0;
  const auto g0 = test::init_grads(tiny_moe(true, 0.5), false, l0);
  const auto g1 = test::init_grads(tiny_moe(true, 0.5), true, l1);
  CHECK(l0 == l1);
  CHECK(g0 == g1);
}

TEST_CASE("the aux loss adds coef x E x sum_e f_e P_e, k at perfect balance at most E x k") {
  const auto batch = test::random_tokens(2, 5, 13, 11);
  auto loss_with = [&](double coef) {
    Transformer<double> model(tiny_moe(true, coef), 2, 5);
    std::vector<double> params(std::size_t(model.layout().total));
    init_all(model.layout(), 42, params.data());
    return model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  };
  const double base = loss_with(0.0), aux = (loss_with(1.0) - base);
  CHECK(loss_with(0.25) - base == doctest::Approx(0.25 * aux).epsilon(1e-12));
  // Σ_e f_e = k and Σ_e P_e = 1, so E Σ f_e P_e lies in (0, E·k]; near-uniform init probs give ≈ k.
  CHECK(aux == doctest::Approx(2.0).epsilon(0.05));
}

TEST_CASE("MoE block layout holds the router and every expert, as count_moe_params") {
  const ModelSpec s = tiny_moe(true, 0.02);
  const ParamLayout layout = make_param_layout(s);
  const MoeParamCounts counts = count_moe_params(s);
  CHECK(layout.modules[1].numel == counts.moe_block);
  CHECK(layout.total == counts.total());
  const TensorSlot* up = layout.modules[1].find("experts.mlp_up.weight");
  REQUIRE(up != nullptr);
  CHECK(up->rows == 4 * 2 * 6);
  CHECK(layout.modules[1].find("mlp_up.weight") == nullptr);
}

}  // namespace
}  // namespace fsdpx
