// tests/executor/test_mla_attention.cpp — multi-head latent attention on the CPU (executor/model/mla_attention.h):
// its forward against a reference written from transformers' DeepseekV3Attention step by step (the latent
// chains, apply_rotary_pos_emb_interleave's de-interleave then rotate_half, key = [k_nope | k_pe] shared by
// the heads, causal softmax scaled by (nope + rope)^-1/2, v_head_dim-wide outputs), with and without a q
// LoRA rank, and with YaRN (cos/sin times its attention factor, the softmax scale times yarn_apply_mscale's
// mscale^2); the whole model's gradients against central differences in double (a dense MLP, DeepSeek-V3's
// MoE block under it, YaRN); and the block layout against cost_models' mla_params.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "cost_models/moe_params.h"
#include "executor/model/init.h"
#include "executor/model/mla_attention.h"
#include "executor/model/transformer.h"
#include "tests/executor/grad_check.h"
#include "tests/executor/model_grad_fixture.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx {
namespace {

using Vec = std::vector<double>;

// y [rows, out] = x [rows, in] · W [out, in]ᵀ.
Vec linear(const Vec& x, const Vec& w, std::int64_t rows, std::int64_t in, std::int64_t out) {
  Vec y(std::size_t(rows * out), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < out; ++o)
      y[std::size_t(r * out + o)] =
          std::inner_product(x.begin() + r * in, x.begin() + (r + 1) * in, w.begin() + o * in, 0.0);
  return y;
}

// DeepseekV3RMSNorm over rows of `width`.
Vec rmsnorm(const Vec& x, const Vec& w, std::int64_t rows, std::int64_t width, double eps) {
  Vec y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (std::int64_t j = 0; j < width; ++j) ms += x[std::size_t(r * width + j)] * x[std::size_t(r * width + j)];
    const double rs = 1.0 / std::sqrt(ms / double(width) + eps);
    for (std::int64_t j = 0; j < width; ++j) y[std::size_t(r * width + j)] = x[std::size_t(r * width + j)] * rs * w[std::size_t(j)];
  }
  return y;
}

// apply_rotary_pos_emb_interleave on one rope-wide vector at position `pos`: de-interleave
// ([x0, x2, ..., x1, x3, ...]), then x·cos + rotate_half(x)·sin with cos, sin = cat(freqs, freqs).
// YaRN (rope_scaling): the frequencies of rope_inv_freq (checked against transformers in test_rope_yarn.cpp)
// and cos/sin times `cs_scale`.
struct RefRope {
  double theta = 10000.0;
  RopeScaling scaling;
  double cs_scale = 1.0;
};
Vec rope_hf_interleave(const double* x, std::int64_t d, std::int64_t pos, const RefRope& r) {
  const std::int64_t half = d / 2;
  Vec v(static_cast<std::size_t>(d)), out(static_cast<std::size_t>(d));
  for (std::int64_t i = 0; i < half; ++i) v[std::size_t(i)] = x[2 * i], v[std::size_t(half + i)] = x[2 * i + 1];
  for (std::int64_t i = 0; i < d; ++i) {
    const double f = double(pos) * rope_inv_freq(i % half, d, r.theta, r.scaling);
    const double rot = i < half ? -v[std::size_t(i + half)] : v[std::size_t(i - half)];
    out[std::size_t(i)] = (v[std::size_t(i)] * std::cos(f) + rot * std::sin(f)) * r.cs_scale;
  }
  return out;
}

struct Weights {
  Vec q_a, q_a_norm, q_b, q, kv_a, kv_a_norm, kv_b;
  MlaTensors<const double*> p() const {
    auto ptr = [](const Vec& v) { return v.empty() ? nullptr : v.data(); };
    return {ptr(q_a), ptr(q_a_norm), ptr(q_b), ptr(q), ptr(kv_a), ptr(kv_a_norm), ptr(kv_b)};
  }
};

// DeepseekV3Attention.forward up to o_proj's input: [N, H·v]; scores times `softmax_factor` (YaRN).
Vec reference(const MlaDims& d, const Weights& w, const Vec& x, const RefRope& theta, double softmax_factor = 1.0) {
  const std::int64_t D = d.qk(), H = d.heads;
  const Vec q = d.q_rank > 0 ? linear(rmsnorm(linear(x, w.q_a, d.n, d.c, d.q_rank), w.q_a_norm, d.n, d.q_rank, d.eps),
                                      w.q_b, d.n, d.q_rank, d.q_width())
                             : linear(x, w.q, d.n, d.c, d.q_width());
  const Vec kva = linear(x, w.kv_a, d.n, d.c, d.kv_a_width());
  Vec c_kv(std::size_t(d.n * d.kv_rank));
  for (std::int64_t i = 0; i < d.n; ++i)
    for (std::int64_t j = 0; j < d.kv_rank; ++j) c_kv[std::size_t(i * d.kv_rank + j)] = kva[std::size_t(i * d.kv_a_width() + j)];
  const Vec kvb = linear(rmsnorm(c_kv, w.kv_a_norm, d.n, d.kv_rank, d.eps), w.kv_b, d.n, d.kv_rank, d.kv_b_width());
  // Per token and head: query and key [nope | rope], value v.
  std::vector<Vec> Q(std::size_t(d.n * H)), K(Q.size()), V(Q.size());
  for (std::int64_t i = 0; i < d.n; ++i) {
    const std::int64_t pos = i % d.t;
    const Vec k_pe = rope_hf_interleave(kva.data() + i * d.kv_a_width() + d.kv_rank, d.rope, pos, theta);
    for (std::int64_t h = 0; h < H; ++h) {
      const double* qh = q.data() + i * d.q_width() + h * D;
      const double* kvh = kvb.data() + i * d.kv_b_width() + h * (d.nope + d.v);
      Vec qv(qh, qh + d.nope), kv(kvh, kvh + d.nope);
      const Vec q_pe = rope_hf_interleave(qh + d.nope, d.rope, pos, theta);
      qv.insert(qv.end(), q_pe.begin(), q_pe.end()), kv.insert(kv.end(), k_pe.begin(), k_pe.end());
      Q[std::size_t(i * H + h)] = qv, K[std::size_t(i * H + h)] = kv;
      V[std::size_t(i * H + h)] = Vec(kvh + d.nope, kvh + d.nope + d.v);
    }
  }
  Vec out(std::size_t(d.n * d.out_width()), 0.0);
  const double scale = softmax_factor / std::sqrt(double(D));
  for (std::int64_t b = 0; b < d.b; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t t = 0; t < d.t; ++t) {
        const std::int64_t i = b * d.t + t;
        Vec s(std::size_t(t + 1));
        for (std::int64_t u = 0; u <= t; ++u) {
          const Vec& qv = Q[std::size_t(i * H + h)];
          const Vec& kv = K[std::size_t((b * d.t + u) * H + h)];
          s[std::size_t(u)] = std::inner_product(qv.begin(), qv.end(), kv.begin(), 0.0) * scale;
        }
        const double mx = *std::max_element(s.begin(), s.end());
        double z = 0;
        for (double& v : s) v = std::exp(v - mx), z += v;
        for (std::int64_t u = 0; u <= t; ++u)
          for (std::int64_t j = 0; j < d.v; ++j)
            out[std::size_t(i * d.out_width() + h * d.v + j)] += s[std::size_t(u)] / z * V[std::size_t((b * d.t + u) * H + h)][std::size_t(j)];
      }
  return out;
}

// factor 4 over an original context of 2 (the 5 positions pass it), mscale 1, mscale_all_dim 0.707.
RopeScaling tiny_yarn() {
  RopeScaling s;
  s.kind = RopeScalingKind::yarn, s.factor = 4.0, s.original_max_seq = 2, s.mscale = 1.0, s.mscale_all_dim = 0.707;
  return s;
}

TEST_CASE("MLA forward equals DeepseekV3Attention written step by step (interleaved RoPE, shared rope key)") {
  for (const std::pair<std::int64_t, bool>& c : {std::pair<std::int64_t, bool>{6, false}, {0, false}, {6, true}}) {
    const std::int64_t q_rank = c.first;
    const bool yarn = c.second;
    CAPTURE(q_rank);
    CAPTURE(yarn);
    ModelSpec spec = test::tiny_mla(q_rank);
    RefRope ref{spec.rope_theta, {}, 1.0};
    double softmax_factor = 1.0;
    if (yarn) {
      spec.rope_scaling = ref.scaling = tiny_yarn();
      // get_mscale(4, m) = 0.1 m ln 4 + 1: cos/sin times get_mscale(4, 1) / get_mscale(4, 0.707), scores times
      // get_mscale(4, 0.707)^2 (transformers _compute_yarn_parameters, yarn_apply_mscale).
      const double all_dim = 0.0707 * std::log(4.0) + 1.0;
      ref.cs_scale = (0.1 * std::log(4.0) + 1.0) / all_dim;
      softmax_factor = all_dim * all_dim;
    }
    const MlaDims d = make_mla_dims(spec, 2, 5);
    std::mt19937 rng(7);
    Weights w;
    if (q_rank > 0) {
      w.q_a = test::random_vector(std::size_t(d.q_rank * d.c), rng, 0.5);
      w.q_a_norm = test::random_vector(std::size_t(d.q_rank), rng, 1.0);
      w.q_b = test::random_vector(std::size_t(d.q_width() * d.q_rank), rng, 0.5);
    } else {
      w.q = test::random_vector(std::size_t(d.q_width() * d.c), rng, 0.5);
    }
    w.kv_a = test::random_vector(std::size_t(d.kv_a_width() * d.c), rng, 0.5);
    w.kv_a_norm = test::random_vector(std::size_t(d.kv_rank), rng, 1.0);
    w.kv_b = test::random_vector(std::size_t(d.kv_b_width() * d.kv_rank), rng, 0.5);
    const Vec x = test::random_vector(std::size_t(d.n * d.c), rng);
    std::vector<std::int64_t> positions(std::size_t(d.t));
    std::iota(positions.begin(), positions.end(), 0);
    const RopeTable<double> rope = make_rope_table<double>(positions, d.rope, spec.rope_theta, spec.rope_scaling);
    MlaActs<double> a;
    a.allocate(d);
    Vec out(std::size_t(d.n * d.out_width())), qkv(std::size_t(d.n * 3 * d.q_width()));
    Vec att(std::size_t(d.b * d.heads * d.t * d.t));
    mla_forward(d, w.p(), rope, x.data(), out.data(), qkv.data(), att.data(), a, nullptr, 0);
    const Vec want = reference(d, w, x, ref, softmax_factor);
    double maxdiff = 0, scale = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
      maxdiff = std::max(maxdiff, std::abs(out[i] - want[i])), scale = std::max(scale, std::abs(want[i]));
    INFO("maxdiff " << maxdiff << " of outputs up to " << scale);
    CHECK(maxdiff < 1e-12);
    CHECK(scale > 0.1);
  }
}

void check_model_gradients(const ModelSpec& spec) {
  test::NoisyModel nm(spec);
  const ParamLayout& layout = nm.model.layout();
  auto f = [&] { return nm.loss(); };
  FSDPX_CHECK_GRAD(spec.name, test::check_grad(nm.params, nm.grads, f, test::sample_all(layout)), 1e-6);
  // Every element of the last block's latent tensors.
  const ModuleLayout& blk = layout.modules[std::size_t(layout.block_index(spec.layers - 1))];
  std::vector<std::int64_t> latent;
  for (const TensorSlot& ts : blk.tensors)
    if (ts.name.rfind("attn.", 0) == 0)
      for (std::int64_t i : test::every_element(blk, ts.name)) latent.push_back(i);
  REQUIRE(!latent.empty());
  FSDPX_CHECK_GRAD(spec.name + " latent tensors", test::check_grad(nm.params, nm.grads, f, latent), 1e-6);
}

TEST_CASE("an MLA model's gradients match finite differences") {
  SUBCASE("q LoRA rank 6, dense MLP") { check_model_gradients(test::tiny_mla(6)); }
  SUBCASE("queries from the hidden state (q LoRA rank 0)") { check_model_gradients(test::tiny_mla(0)); }
  SUBCASE("DeepSeek-V3's MoE block under it, balance loss 0.5") {
    ModelSpec s = test::tiny_deepseek_moe(0.5);
    s.name = "tiny-deepseek";
    s.kv_heads = s.heads, s.mla = test::tiny_mla().mla, s.head_dim = 7, s.norm_eps = 1e-6;
    check_model_gradients(s);
  }
  SUBCASE("YaRN: cos/sin and the softmax scaled") {
    ModelSpec s = test::tiny_mla(6);
    s.rope_scaling = tiny_yarn();
    check_model_gradients(s);
  }
}

TEST_CASE("MLA blocks that recompute give bit-identical loss and gradients") {
  double l0 = 0, l1 = 0;
  const auto g0 = test::init_grads(test::tiny_mla(), false, l0);
  const auto g1 = test::init_grads(test::tiny_mla(), true, l1);
  CHECK(l0 == l1);
  CHECK(g0 == g1);
}

TEST_CASE("an MLA block layout holds the latent projections, as cost_models' mla_params") {
  for (std::int64_t q_rank : {6, 0}) {
    const ModelSpec s = test::tiny_mla(q_rank);
    const ParamLayout layout = make_param_layout(s);
    const MoeParamCounts counts = count_moe_params(s);
    CHECK(layout.modules[1].numel == counts.dense_block);
    CHECK(layout.total == counts.total());
    CHECK(layout.modules[1].find("qkv.weight") == nullptr);
    CHECK((layout.modules[1].find("attn.q_a.weight") != nullptr) == (q_rank > 0));
  }
}

}  // namespace
}  // namespace fsdpx
