// tests/executor/test_kernels_grad.cpp — every CPU kernel's backward against central finite differences
// in double precision: f = Σ out ⊙ R for a random R, so backward with dout = R must give ∂f/∂inputs.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "executor/cpu/activation.h"
#include "executor/cpu/attention.h"
#include "executor/cpu/cross_entropy.h"
#include "executor/cpu/embedding.h"
#include "executor/cpu/gemm.h"
#include "executor/cpu/norm.h"
#include "executor/cpu/rope.h"
#include "tests/executor/grad_check.h"

namespace fsdpx {
namespace {

using test::check_grad;
using test::dot;
using test::random_vector;
using Vec = std::vector<double>;
constexpr double kTol = 1e-6;

TEST_CASE("matmul backward matches finite differences") {
  std::mt19937 rng(1);
  const std::int64_t n = 5, c = 4, oc = 3;
  Vec x = random_vector(n * c, rng), w = random_vector(oc * c, rng), b = random_vector(oc, rng);
  const Vec r = random_vector(n * oc, rng);
  Vec out(n * oc);
  auto f = [&] { cpu::matmul_forward(out.data(), x.data(), w.data(), b.data(), n, c, oc); return dot(out, r); };
  Vec dx(x.size()), dw(w.size()), db(b.size());
  cpu::matmul_backward_dx(dx.data(), r.data(), w.data(), n, c, oc);
  cpu::matmul_backward_dw(dw.data(), db.data(), r.data(), x.data(), n, c, oc);
  FSDPX_CHECK_GRAD("matmul dx", check_grad(x, dx, f), kTol);
  FSDPX_CHECK_GRAD("matmul dw", check_grad(w, dw, f), kTol);
  FSDPX_CHECK_GRAD("matmul db", check_grad(b, db, f), kTol);
  INFO("BLAS: " << cpu::gemm_uses_blas());
}

TEST_CASE("layernorm and rmsnorm backward match finite differences") {
  std::mt19937 rng(2);
  const std::int64_t n = 4, c = 6;
  Vec x = random_vector(n * c, rng, 2.0), w = random_vector(c, rng), b = random_vector(c, rng);
  const Vec r = random_vector(n * c, rng);
  Vec out(n * c), mean(n), rstd(n);
  SUBCASE("layernorm") {
    auto f = [&] {
      cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), n, c, 1e-5);
      return dot(out, r);
    };
    f();
    Vec dx(x.size()), dw(c), db(c);
    cpu::layernorm_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), mean.data(), rstd.data(), n, c);
    FSDPX_CHECK_GRAD("layernorm dx", check_grad(x, dx, f), kTol);
    FSDPX_CHECK_GRAD("layernorm dw", check_grad(w, dw, f), kTol);
    FSDPX_CHECK_GRAD("layernorm db", check_grad(b, db, f), kTol);
  }
  SUBCASE("rmsnorm") {
    auto f = [&] { cpu::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), n, c, 1e-5); return dot(out, r); };
    f();
    Vec dx(x.size()), dw(c);
    cpu::rmsnorm_backward(dx.data(), dw.data(), r.data(), x.data(), w.data(), rstd.data(), n, c);
    FSDPX_CHECK_GRAD("rmsnorm dx", check_grad(x, dx, f), kTol);
    FSDPX_CHECK_GRAD("rmsnorm dw", check_grad(w, dw, f), kTol);
  }
}

TEST_CASE("rope backward matches finite differences and preserves norms") {
  std::mt19937 rng(3);
  const std::int64_t b = 2, t = 5, nh = 4, nkv = 2, hd = 6, row = (nh + 2 * nkv) * hd;
  const auto tab = cpu::make_rope_table<double>(t, hd, 10000.0);
  Vec x = random_vector(b * t * row, rng);
  const Vec r = random_vector(x.size(), rng);
  auto f = [&] {
    Vec y = x;
    cpu::rope_forward(y.data(), tab, b, t, nh, nkv, hd);
    return dot(y, r);
  };
  Vec dx = r;
  cpu::rope_backward(dx.data(), tab, b, t, nh, nkv, hd);
  FSDPX_CHECK_GRAD("rope dqkv", check_grad(x, dx, f), kTol);
  // A rotation keeps each row's norm; position 0 is the identity; V is untouched.
  Vec y = x;
  cpu::rope_forward(y.data(), tab, b, t, nh, nkv, hd);
  CHECK(dot(y, y) == doctest::Approx(dot(x, x)).epsilon(1e-12));
  for (std::int64_t i = 0; i < row; ++i) CHECK(y[std::size_t(i)] == doctest::Approx(x[std::size_t(i)]).epsilon(1e-15));
  for (std::int64_t i = (nh + nkv) * hd; i < row; ++i) CHECK(y[std::size_t(row + i)] == x[std::size_t(row + i)]);
}

// f = Σ attention(qkv) ⊙ R; checks dqkv at every `stride`-th element.
test::GradCheck attention_grad(const cpu::AttnShape& s, unsigned seed, std::int64_t stride) {
  std::mt19937 rng(seed);
  Vec qkv = random_vector(s.b * s.t * s.qkv_row(), rng);
  const Vec r = random_vector(s.b * s.t * s.nh * s.hd, rng);
  Vec out(r.size()), saved(cpu::attention_saved_elems(s));
  auto f = [&] { cpu::attention_forward(out.data(), saved.data(), qkv.data(), s); return dot(out, r); };
  f();
  Vec dqkv(qkv.size());
  cpu::attention_backward(dqkv.data(), r.data(), qkv.data(), saved.data(), s);
  std::vector<std::int64_t> checked;
  for (std::int64_t i = 0; i < std::int64_t(qkv.size()); i += stride) checked.push_back(i);
  return check_grad(qkv, dqkv, f, checked);
}

TEST_CASE("causal GQA attention backward matches finite differences") {
  for (auto [nh, nkv] : {std::pair<int, int>{4, 2}, {4, 1}, {3, 3}}) {
    CAPTURE(nh);
    CAPTURE(nkv);
    FSDPX_CHECK_GRAD("attention dqkv", attention_grad(cpu::AttnShape{2, 5, nh, nkv, 3}, 4, 1), kTol);
  }
}

TEST_CASE("attention over several query tiles (T = 130: 64 + 64 + 2 rows) matches finite differences") {
  // Every 5th element: Q, K and V of every tile.
  FSDPX_CHECK_GRAD("attention dqkv, 3 query tiles", attention_grad(cpu::AttnShape{1, 130, 2, 1, 2}, 7, 5), kTol);
}

TEST_CASE("causal attention: first token attends only to itself, rows of P sum to 1") {
  const cpu::AttnShape s{1, 4, 2, 1, 2};
  std::mt19937 rng(5);
  Vec qkv = random_vector(s.b * s.t * s.qkv_row(), rng), out(s.t * s.nh * s.hd), p(cpu::attention_saved_elems(s));
  cpu::attention_forward(out.data(), p.data(), qkv.data(), s);
  const std::int64_t v0 = (s.nh + s.nkv) * s.hd;  // V of token 0 (the only kv head)
  for (int h = 0; h < s.nh; ++h)
    for (int i = 0; i < s.hd; ++i) CHECK(out[std::size_t(h * s.hd + i)] == doctest::Approx(qkv[std::size_t(v0 + i)]));
  for (std::int64_t row = 0; row < s.nh * s.t; ++row) {
    double sum = 0;
    for (std::int64_t j = 0; j < s.t; ++j) sum += p[std::size_t(row * s.t + j)];
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(p[std::size_t(row * s.t + s.t - 1)] == (row % s.t == s.t - 1 ? p[std::size_t(row * s.t + s.t - 1)] : 0.0));
  }
}

TEST_CASE("MLP activations backward match finite differences") {
  for (FfnKind kind : {FfnKind::swiglu, FfnKind::gelu, FfnKind::squared_relu}) {
    CAPTURE(ffn_kind_name(kind));
    std::mt19937 rng(6);
    const std::int64_t n = 3, f = 5, w = cpu::mlp_up_width(kind, f);
    Vec x = random_vector(n * w, rng, 1.5);
    const Vec r = random_vector(n * f, rng);
    Vec out(n * f);
    auto fn = [&] { cpu::mlp_act_forward(kind, out.data(), x.data(), n, f); return dot(out, r); };
    Vec dx(x.size());
    cpu::mlp_act_backward(kind, dx.data(), r.data(), x.data(), n, f);
    FSDPX_CHECK_GRAD("mlp_act dinp", check_grad(x, dx, fn), kTol);
  }
}

TEST_CASE("GELU tanh approximation matches published values") {
  // GELU(1) = 0.8413 (exact erf form 0.841345; tanh form 0.841192), GELU(-1) = -0.158808 (tanh form).
  Vec x{1.0, -1.0, 0.0}, y(3);
  cpu::mlp_act_forward(FfnKind::gelu, y.data(), x.data(), 3, 1);
  CHECK(y[0] == doctest::Approx(0.841192).epsilon(1e-5));
  CHECK(y[1] == doctest::Approx(-0.158808).epsilon(1e-5));
  CHECK(y[2] == 0.0);
}

TEST_CASE("embedding backward matches finite differences, repeated tokens add up") {
  std::mt19937 rng(7);
  const std::int64_t b = 2, t = 3, c = 4, vocab = 5, max_t = 4;
  const std::vector<std::int32_t> tokens{1, 3, 1, 4, 1, 0};
  Vec wte = random_vector(vocab * c, rng), wpe = random_vector(max_t * c, rng);
  const Vec r = random_vector(b * t * c, rng);
  Vec out(r.size());
  auto f = [&] {
    cpu::embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), b, t, c, vocab);
    return dot(out, r);
  };
  Vec dwte(wte.size()), dwpe(wpe.size());
  cpu::embedding_backward(dwte.data(), dwpe.data(), r.data(), tokens.data(), b, t, c);
  FSDPX_CHECK_GRAD("embedding dwte", check_grad(wte, dwte, f), kTol);
  FSDPX_CHECK_GRAD("embedding dwpe", check_grad(wpe, dwpe, f), kTol);
}

TEST_CASE("softmax cross-entropy backward matches finite differences; uniform logits give ln V") {
  std::mt19937 rng(8);
  const std::int64_t n = 4, vocab = 7;
  const std::vector<std::int32_t> targets{0, 6, 3, 3};
  Vec logits = random_vector(n * vocab, rng, 2.0);
  auto f = [&] {
    Vec z = logits;
    return cpu::softmax_cross_entropy_forward(z.data(), targets.data(), n, vocab);
  };
  Vec probs = logits;
  cpu::softmax_cross_entropy_forward(probs.data(), targets.data(), n, vocab);
  cpu::softmax_cross_entropy_backward(probs.data(), targets.data(), n, vocab, 0.5);
  for (double& g : probs) g *= 2.0;  // undo dloss = 0.5
  FSDPX_CHECK_GRAD("cross-entropy dlogits", check_grad(logits, probs, f), kTol);
  Vec flat(n * vocab, 3.25);
  CHECK(cpu::softmax_cross_entropy_forward(flat.data(), targets.data(), n, vocab) ==
        doctest::Approx(std::log(double(vocab))).epsilon(1e-14));
}

}  // namespace
}  // namespace fsdpx
