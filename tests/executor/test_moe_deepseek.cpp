// tests/executor/test_moe_deepseek.cpp — DeepSeek-V3's MoE block in the CPU MoE MLP (executor/model/moe_mlp.h):
// its forward against a token-by-token reference written from transformers' DeepseekV3TopkRouter and
// DeepseekV3MoE (sigmoid scores, the correction bias for selection only, group-limited top-k, renormalised
// weights x routed_scaling_factor, the shared expert added), the routing's properties (picks within
// topk_groups groups, weights summing to the routed scale, a large bias forcing its expert in without
// weighting it), the sequence-wise balance value against DeepSeek-V3's eq. 17-20, the whole model's
// gradients against central differences in double (a dense leading block, the balance loss at alpha 0.5),
// and the block layout against cost_models' count.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "core/config_paths.h"
#include "cost_models/moe_params.h"
#include "executor/model/init.h"
#include "executor/model/moe_mlp.h"
#include "executor/model/transformer.h"
#include "tests/executor/grad_check.h"
#include "tests/executor/model_grad_fixture.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx {
namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// A SwiGLU MLP of width f on one token: down [C, F] · (silu(gate x) ⊙ up x), up = [gate; up] [2F, C].
std::vector<double> swiglu(const double* up, const double* down, std::int64_t c, std::int64_t f, const double* x) {
  std::vector<double> a(static_cast<std::size_t>(f)), out(static_cast<std::size_t>(c));
  for (std::int64_t j = 0; j < f; ++j) {
    const double g = std::inner_product(x, x + c, up + j * c, 0.0);
    const double u = std::inner_product(x, x + c, up + (f + j) * c, 0.0);
    a[std::size_t(j)] = g * sigmoid(g) * u;
  }
  for (std::int64_t i = 0; i < c; ++i) out[std::size_t(i)] = std::inner_product(a.begin(), a.end(), down + i * f, 0.0);
  return out;
}

// The experts DeepseekV3TopkRouter picks for token x (get_topk_indices), by descending choice score.
std::vector<int> reference_picks(const MoeDims& d, const MoeTensors<const double*>& p, const double* x) {
  const std::int64_t per = d.e / d.groups;
  std::vector<double> choice(std::size_t(d.e)), group(std::size_t(d.groups));
  for (std::int64_t e = 0; e < d.e; ++e)
    choice[std::size_t(e)] = sigmoid(std::inner_product(x, x + d.c, p.router_w + e * d.c, 0.0)) + p.score_bias[e];
  for (std::int64_t g = 0; g < d.groups; ++g) {
    std::vector<double> in(choice.begin() + g * per, choice.begin() + (g + 1) * per);
    std::sort(in.rbegin(), in.rend());
    group[std::size_t(g)] = in[0] + in[1];  // topk(2).sum()
  }
  std::vector<int> gorder(std::size_t(d.groups)), order(std::size_t(d.e));
  std::iota(gorder.begin(), gorder.end(), 0), std::iota(order.begin(), order.end(), 0);
  std::stable_sort(gorder.begin(), gorder.end(), [&](int a, int b) { return group[std::size_t(a)] > group[std::size_t(b)]; });
  for (std::int64_t r = d.topk_groups; r < d.groups; ++r)
    for (std::int64_t j = 0; j < per; ++j) choice[std::size_t(gorder[std::size_t(r)] * per + j)] = 0.0;  // masked_fill 0
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return choice[std::size_t(a)] > choice[std::size_t(b)]; });
  order.resize(std::size_t(d.k));
  return order;
}

// One token through DeepseekV3MoE: Σ rs · s_e / (Σ_sel s + 1e-20) · expert_e(x) + shared(x).
std::vector<double> reference_token(const MoeDims& d, const MoeTensors<const double*>& p, const double* x) {
  const std::vector<int> picks = reference_picks(d, p, x);
  std::vector<double> s(picks.size());
  double sum = 1e-20;
  for (std::size_t i = 0; i < picks.size(); ++i)
    s[i] = sigmoid(std::inner_product(x, x + d.c, p.router_w + picks[i] * d.c, 0.0)), sum += s[i];
  std::vector<double> out = swiglu(p.shared_up_w, p.shared_down_w, d.c, d.sf, x);
  for (std::size_t i = 0; i < picks.size(); ++i) {
    const auto y = swiglu(p.up_w + picks[i] * 2 * d.f * d.c, p.down_w + picks[i] * d.c * d.f, d.c, d.f, x);
    for (std::int64_t j = 0; j < d.c; ++j) out[std::size_t(j)] += d.routed_scaling * s[i] / sum * y[std::size_t(j)];
  }
  return out;
}

struct Block {
  MoeDims d;
  std::vector<double> router, bias, up, down, shared_up, shared_down, x;
  MoeTensors<const double*> p() const {
    return {router.data(), up.data(), down.data(), bias.data(), shared_up.data(), shared_down.data()};
  }
};

// 3 sequences of 6 tokens through tiny_deepseek_moe's block, a random bias of scale `bias_scale`.
Block random_block(double bias_scale) {
  Block b;
  b.d = make_moe_dims(test::tiny_deepseek_moe(), 18, 1, 0, 6);
  std::mt19937 rng(5);
  const MoeDims& d = b.d;
  b.router = test::random_vector(std::size_t(d.e * d.c), rng);
  b.bias = test::random_vector(std::size_t(d.e), rng, bias_scale);
  b.up = test::random_vector(std::size_t(d.e * 2 * d.f * d.c), rng, 0.5);
  b.down = test::random_vector(std::size_t(d.e * d.c * d.f), rng, 0.5);
  b.shared_up = test::random_vector(std::size_t(2 * d.sf * d.c), rng, 0.5);
  b.shared_down = test::random_vector(std::size_t(d.c * d.sf), rng, 0.5);
  b.x = test::random_vector(std::size_t(d.n * d.c), rng);
  return b;
}

std::vector<double> forward(const Block& b, MoeActs<double>& a) {
  a.allocate(b.d);
  std::vector<double> out(std::size_t(b.d.n * b.d.c));
  moe_forward(b.d, b.p(), b.x.data(), out.data(), a, nullptr, 0);
  return out;
}

TEST_CASE("DeepSeek-V3 MoE forward equals a token-by-token reference of DeepseekV3MoE") {
  for (double bias_scale : {0.0, 0.1}) {
    const Block b = random_block(bias_scale);
    MoeActs<double> a;
    const auto out = forward(b, a);
    double maxdiff = 0;
    int same_picks = 0;
    for (std::int64_t n = 0; n < b.d.n; ++n) {
      const auto ref = reference_token(b.d, b.p(), b.x.data() + n * b.d.c);
      for (std::int64_t i = 0; i < b.d.c; ++i)
        maxdiff = std::max(maxdiff, std::abs(ref[std::size_t(i)] - out[std::size_t(n * b.d.c + i)]));
      const auto picks = reference_picks(b.d, b.p(), b.x.data() + n * b.d.c);
      same_picks += std::equal(picks.begin(), picks.end(), a.expert.begin() + n * b.d.k);
    }
    INFO("bias scale " << bias_scale << " maxdiff " << maxdiff);
    CHECK(maxdiff < 1e-12);
    CHECK(same_picks == b.d.n);
  }
}

TEST_CASE("DeepSeek-V3 routing: picks within topk_groups groups, weights sum to the routed scale, the bias selects only") {
  Block b = random_block(0.1);
  MoeActs<double> a;
  forward(b, a);
  const std::int64_t per = b.d.e / b.d.groups;
  for (std::int64_t n = 0; n < b.d.n; ++n) {
    std::set<std::int64_t> groups;
    double wsum = 0;
    for (std::int64_t s = 0; s < b.d.k; ++s)
      groups.insert(a.expert[std::size_t(n * b.d.k + s)] / per), wsum += a.weight[std::size_t(n * b.d.k + s)];
    CHECK(std::int64_t(groups.size()) <= b.d.topk_groups);
    CHECK(wsum == doctest::Approx(2.5).epsilon(1e-12));
  }
  // Expert 5 given a bias of 10: every token picks it, with the weight its unbiased score gives.
  b.bias[5] = 10.0;
  MoeActs<double> forced;
  forward(b, forced);
  for (std::int64_t n = 0; n < b.d.n; ++n) {
    const auto first = forced.expert.begin() + n * b.d.k;
    REQUIRE(*first == 5);
    const double s5 = forced.probs[std::size_t(n * b.d.e + 5)];
    const double s_other = forced.probs[std::size_t(n * b.d.e + first[1])];
    CHECK(forced.weight[std::size_t(n * b.d.k)] == doctest::Approx(2.5 * s5 / (s5 + s_other)).epsilon(1e-12));
  }
}

TEST_CASE("the sequence-wise balance value is DeepSeek-V3's eq. 17-20, averaged over sequences") {
  const Block b = random_block(0.1);
  MoeActs<double> a;
  forward(b, a);
  const MoeDims& d = b.d;
  const std::int64_t t = 6, seqs = 3;
  double want = 0;
  for (std::int64_t q = 0; q < seqs; ++q)
    for (std::int64_t e = 0; e < d.e; ++e) {
      double picks = 0, p = 0;
      for (std::int64_t n = q * t; n < (q + 1) * t; ++n) {
        for (std::int64_t s = 0; s < d.k; ++s) picks += a.expert[std::size_t(n * d.k + s)] == e;
        const double* row = a.probs.data() + n * d.e;
        p += row[e] / std::accumulate(row, row + d.e, 0.0) / double(t);
      }
      want += double(d.e) / double(d.k * t) * picks * p / double(seqs);
    }
  CHECK(a.seq_balance == doctest::Approx(want).epsilon(1e-12));
  CHECK(a.seq_balance > 0.5);  // Σ_e f_e = E and Σ_e P_e = 1: 1 when every expert is equally used
}

TEST_CASE("a DeepSeek-V3 MoE model's gradients match finite differences (router whole, bias none)") {
  for (double alpha : {0.5, 0.0}) {
    CAPTURE(alpha);
    const ModelSpec spec = test::tiny_deepseek_moe(alpha);
    test::NoisyModel nm(spec);  // the bias moved too: routing far from ties
    const ParamLayout& layout = nm.model.layout();
    auto f = [&] { return nm.loss(); };
    FSDPX_CHECK_GRAD(spec.name, test::check_grad(nm.params, nm.grads, f, test::sample_all(layout)), 1e-6);
    const ModuleLayout& blk = layout.modules[std::size_t(layout.block_index(spec.layers - 1))];
    const auto router = test::every_element(blk, "router.weight");
    FSDPX_CHECK_GRAD(spec.name + " router", test::check_grad(nm.params, nm.grads, f, router), 1e-6);
    // The bias only selects: the loss does not move under a small change of it, and its gradient is 0 ...
    const auto bias = test::every_element(blk, "router.e_score_correction_bias");
    REQUIRE(bias.size() == 8);
    const test::GradCheck flat = test::check_grad(nm.params, nm.grads, f, bias);
    CHECK(flat.max_abs_ref == 0.0);
    CHECK(flat.max_abs_diff == 0.0);
    // ... but a large one changes which experts run.
    const double before = f();
    nm.params[std::size_t(bias.front())] += 10.0;
    CHECK(std::abs(f() - before) > 1e-6);
    nm.params[std::size_t(bias.front())] -= 10.0;
  }
}

TEST_CASE("the balance loss adds alpha x the blocks' sequence-wise values") {
  const auto batch = test::random_tokens(2, 5, 13, 11);
  auto loss_with = [&](double alpha) {
    Transformer<double> model(test::tiny_deepseek_moe(alpha), 2, 5);
    std::vector<double> params(std::size_t(model.layout().total));
    init_all(model.layout(), 42, params.data());
    return model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  };
  const double base = loss_with(0.0), aux = loss_with(1.0) - base;
  CHECK(loss_with(0.25) - base == doctest::Approx(0.25 * aux).epsilon(1e-12));
  // One MoE block (the other is dense); near-uniform init scores give Σ_e f_e P_e ≈ 1 per sequence.
  CHECK(aux == doctest::Approx(1.0).epsilon(0.3));
}

TEST_CASE("a DeepSeek-V3 MoE layout holds router, bias, experts and shared expert, as count_moe_params") {
  const ModelSpec s = test::tiny_deepseek_moe();
  const ParamLayout layout = make_param_layout(s);
  const MoeParamCounts counts = count_moe_params(s);
  CHECK(layout.modules[1].numel == counts.dense_block);
  CHECK(layout.modules[2].numel == counts.moe_block);
  CHECK(layout.total == counts.total());
  const TensorSlot* shared = layout.modules[2].find("shared.mlp_up.weight");
  REQUIRE(shared != nullptr);
  CHECK(shared->rows == 2 * 5);
  CHECK(layout.modules[2].find("router.e_score_correction_bias")->numel() == 8);
}

TEST_CASE("deepseek-tiny's layout (latent attention, a dense block, two MoE blocks) holds count_moe_params' total") {
  // By hand from configs/models/deepseek-tiny.json: tables 2 x 256 x 64, final norm 64; per block latent
  // attention 32 (64 + 4 x 24) + 32 + 64 (16 + 8) + 16 + 16 x 4 x 32 + 4 x 16 x 64 = 12,848 and two norms 128;
  // the dense MLP 3 x 64 x 176; an MoE MLP: router 8 x 64, bias 8, shared 3 x 64 x 32, experts 8 x 3 x 64 x 32.
  const ModelSpec m = load_model("deepseek-tiny");
  const std::int64_t common = 12848 + 128, dense = common + 33792, moe = common + 512 + 8 + 6144 + 49152;
  const ParamLayout layout = make_param_layout(m);
  CHECK(layout.total == 2 * 256 * 64 + 64 + dense + 2 * moe);
  CHECK(layout.total == count_moe_params(m).total());
}

}  // namespace
}  // namespace fsdpx
