// tests/executor/test_kernels_threads.cpp — the fp32 kernels give the same bits with 1, 2 and 3 kernel
// threads (GEMM tiles, attention tasks, norm and embedding channel blocks, loss rows), on shapes large
// enough to be cut into several tiles, blocks or query tiles; and the fp32 kernels agree with their
// fp64 instantiation (the precision contract of the CPU reference).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "executor/cpu/attention.h"
#include "executor/cpu/cross_entropy.h"
#include "executor/cpu/embedding.h"
#include "executor/cpu/gemm.h"
#include "executor/cpu/norm.h"
#include "executor/cpu/kernel_pool.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

using Vec = std::vector<float>;

Vec random_floats(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  Vec v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Runs `kernel` (which fills the vectors it returns) on this thread alone and with pools of 2 and 3
// threads; all must match bit for bit.
void check_thread_independent(const char* what, const std::function<std::vector<Vec>()>& kernel) {
  cpu::set_kernel_pool(nullptr);
  const std::vector<Vec> one = kernel();
  for (int threads : {2, 3}) {
    cpu::KernelPool pool(threads);
    cpu::set_kernel_pool(&pool);
    const std::vector<Vec> many = kernel();
    cpu::set_kernel_pool(nullptr);
    for (std::size_t i = 0; i < one.size(); ++i) {
      INFO(what << ", output " << i << ", " << threads << " threads");
      CHECK(many[i] == one[i]);
    }
  }
}

TEST_CASE("GEMM tiles: a function of the shape only, and the same bits for any thread count") {
  CHECK(cpu::gemm_tile_count(128, 352) == 1);
  CHECK(cpu::gemm_tile_count(1024, 64) == 2);
  CHECK(cpu::gemm_tile_count(2048, 2816) == 4);
  CHECK(cpu::gemm_tile_count(64, 4096) == 8);
  std::mt19937 rng(11);
  const std::int64_t n = 2100, c = 300, oc = 1100;  // forward, dx: 4 row tiles; dW [OC, C]: 2 row tiles
  const Vec x = random_floats(n * c, rng), w = random_floats(oc * c, rng), dy = random_floats(n * oc, rng);
  check_thread_independent("matmul", [&] {
    Vec out(n * oc), dx(n * c, 0.5f), dw(oc * c, 0.25f), db(oc, 0.0f);
    cpu::matmul_forward(out.data(), x.data(), w.data(), static_cast<const float*>(nullptr), n, c, oc);
    cpu::matmul_backward_dx(dx.data(), dy.data(), w.data(), n, c, oc);
    cpu::matmul_backward_dw(dw.data(), db.data(), dy.data(), x.data(), n, c, oc);
    return std::vector<Vec>{out, dx, dw, db};
  });
}

TEST_CASE("attention over several query tiles: the same bits for any thread count") {
  std::mt19937 rng(12);
  const cpu::AttnShape s{2, 150, 4, 2, 16};
  const Vec qkv = random_floats(s.b * s.t * s.qkv_row(), rng), dout = random_floats(s.b * s.t * s.nh * s.hd, rng);
  check_thread_independent("attention", [&] {
    Vec out(dout.size()), saved(cpu::attention_saved_elems(s)), dqkv(qkv.size(), 0.0f);
    cpu::attention_forward(out.data(), saved.data(), qkv.data(), s);
    cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), saved.data(), s);
    return std::vector<Vec>{out, saved, dqkv};
  });
}

TEST_CASE("norms, embedding and loss: the same bits for any thread count") {
  std::mt19937 rng(13);
  const std::int64_t n = 300, c = 200, vocab = 97;
  const Vec x = random_floats(n * c, rng, 2.0f), w = random_floats(c, rng), b = random_floats(c, rng);
  const Vec dy = random_floats(n * c, rng), logits = random_floats(n * vocab, rng, 3.0f);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(n));
  for (auto& t : tokens) t = std::int32_t(rng() % vocab);
  check_thread_independent("norms, embedding, loss", [&] {
    Vec y(n * c), mean(n), rstd(n), dx(n * c, 0.0f), dw(c, 0.0f), db(c, 0.0f), ry(n * c), rrstd(n), rdx(n * c, 0.0f),
        rdw(c, 0.0f), dwte(vocab * c, 0.0f), probs = logits;
    cpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), n, c, 1e-5);
    cpu::layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(),
                            n, c);
    cpu::rmsnorm_forward(ry.data(), rrstd.data(), x.data(), w.data(), n, c, 1e-5);
    cpu::rmsnorm_backward(rdx.data(), rdw.data(), dy.data(), x.data(), w.data(), rrstd.data(), n, c);
    cpu::embedding_backward(dwte.data(), static_cast<float*>(nullptr), dy.data(), tokens.data(), 1, n, c);
    const float loss = cpu::softmax_cross_entropy_forward(probs.data(), tokens.data(), n, vocab);
    cpu::softmax_cross_entropy_backward(probs.data(), tokens.data(), n, vocab, 1.0f);
    return std::vector<Vec>{y, dx, dw, db, ry, rdx, rdw, dwte, probs, Vec{loss}};
  });
}

// max |a − b| / max |b|.
double rel_diff(const Vec& a, const std::vector<double>& b) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff = ::fsdpx::test::nan_max(diff, std::abs(double(a[i]) - b[i])), ref = ::fsdpx::test::nan_max(ref, std::abs(b[i]));
  return diff / ref;
}

TEST_CASE("fp32 attention agrees with the fp64 kernel") {
  std::mt19937 rng(14);
  const cpu::AttnShape s{1, 130, 2, 1, 32};
  const Vec qkv = random_floats(s.b * s.t * s.qkv_row(), rng), dout = random_floats(s.b * s.t * s.nh * s.hd, rng);
  Vec out(dout.size()), saved(cpu::attention_saved_elems(s)), dqkv(qkv.size(), 0.0f);
  cpu::attention_forward(out.data(), saved.data(), qkv.data(), s);
  cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), saved.data(), s);
  const std::vector<double> qkv64(qkv.begin(), qkv.end()), dout64(dout.begin(), dout.end());
  std::vector<double> out64(out.size()), saved64(saved.size()), dqkv64(qkv.size(), 0.0);
  cpu::attention_forward(out64.data(), saved64.data(), qkv64.data(), s);
  cpu::attention_backward(dqkv64.data(), dout64.data(), qkv64.data(), saved64.data(), s);
  MESSAGE("fp32 vs fp64 attention: out " << rel_diff(out, out64) << ", P " << rel_diff(saved, saved64) << ", dqkv "
                                         << rel_diff(dqkv, dqkv64));
  CHECK(rel_diff(out, out64) < 1e-5);
  CHECK(rel_diff(saved, saved64) < 1e-5);
  CHECK(rel_diff(dqkv, dqkv64) < 1e-5);
}

}  // namespace
}  // namespace fsdpx
