// tests/executor/test_fp8_linear.cpp — the CPU backend's fp8 linear layer (executor/model/fp8_linear.h) against
// GEMMs of operands rounded here with fp8_quantize_dequantize (E4M3 input and weight, E5M2 output gradient,
// torchao's tensorwise defaults), the bias gradient taken from the unrounded gradient, fp8 off giving the
// plain GEMMs bit for bit; a block trained with fp8 stays near fp32; and the capability rows: the CPU
// trains tensorwise only, and refuses fp8 all-gather, fp8 with tp > 1 and fp8 with LoRA, naming the path.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/backend_capabilities.h"
#include "core/plan.h"
#include "executor/cpu/fp8.h"
#include "executor/cpu/gemm.h"
#include "executor/model/fp8_linear.h"
#include "executor/model/init.h"
#include "executor/model/transformer.h"
#include "tests/executor/tiny_models.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx {
namespace {

using cpu::Fp8Format;

std::vector<float> normal(std::size_t n, float sd, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<float> qdq(std::vector<float> v, Fp8Format f) {
  cpu::fp8_quantize_dequantize(v.data(), std::int64_t(v.size()), f);
  return v;
}

constexpr std::int64_t kN = 24, kC = 32, kOC = 40;

struct Operands {
  std::vector<float> x = normal(kN * kC, 1.0f, 1), w = normal(kOC * kC, 0.05f, 2), b = normal(kOC, 0.1f, 3);
  std::vector<float> dy = normal(kN * kOC, 1e-3f, 4);
};

TEST_CASE("fp8 linear: each GEMM multiplies the tensorwise-rounded operands, fp32 accumulation") {
  const Operands o;
  Fp8Workspace<float> ws;
  std::vector<float> got(kN * kOC), want(kN * kOC), plain(kN * kOC);
  linear_forward(&ws, got.data(), o.x.data(), o.w.data(), o.b.data(), kN, kC, kOC);
  const auto qx = qdq(o.x, Fp8Format::e4m3), qw = qdq(o.w, Fp8Format::e4m3), qdy = qdq(o.dy, Fp8Format::e5m2);
  cpu::matmul_forward(want.data(), qx.data(), qw.data(), o.b.data(), kN, kC, kOC);
  CHECK(got == want);
  cpu::matmul_forward(plain.data(), o.x.data(), o.w.data(), o.b.data(), kN, kC, kOC);
  CHECK(got != plain);  // the rounding shows

  std::vector<float> dx(kN * kC, 0.0f), dx_want(kN * kC, 0.0f);
  linear_backward_dx(&ws, dx.data(), o.dy.data(), o.w.data(), kN, kC, kOC);
  cpu::matmul_backward_dx(dx_want.data(), qdy.data(), qw.data(), kN, kC, kOC);
  CHECK(dx == dx_want);

  std::vector<float> dw(kOC * kC, 0.0f), db(kOC, 0.0f), dw_want(kOC * kC, 0.0f), db_want(kOC, 0.0f);
  std::vector<float> db_rounded(kOC, 0.0f), scratch(kOC * kC, 0.0f);
  linear_backward_dw(&ws, dw.data(), db.data(), o.dy.data(), o.x.data(), kN, kC, kOC);
  cpu::matmul_backward_dw(dw_want.data(), db_want.data(), o.dy.data(), o.x.data(), kN, kC, kOC);  // db: unrounded
  cpu::matmul_backward_dw(scratch.data(), db_rounded.data(), qdy.data(), qx.data(), kN, kC, kOC);
  CHECK(db == db_want);
  CHECK(db != db_rounded);
  CHECK(dw == scratch);
}

TEST_CASE("fp8 linear: without a workspace the calls are the plain GEMMs, bit for bit") {
  const Operands o;
  std::vector<float> got(kN * kOC), want(kN * kOC);
  linear_forward<float>(nullptr, got.data(), o.x.data(), o.w.data(), o.b.data(), kN, kC, kOC);
  cpu::matmul_forward(want.data(), o.x.data(), o.w.data(), o.b.data(), kN, kC, kOC);
  CHECK(got == want);
  std::vector<float> dw(kOC * kC, 0.0f), db(kOC, 0.0f), dw_want(kOC * kC, 0.0f), db_want(kOC, 0.0f);
  linear_backward_dw<float>(nullptr, dw.data(), db.data(), o.dy.data(), o.x.data(), kN, kC, kOC);
  cpu::matmul_backward_dw(dw_want.data(), db_want.data(), o.dy.data(), o.x.data(), kN, kC, kOC);
  CHECK(dw == dw_want);
  CHECK(db == db_want);
}

TEST_CASE("fp8 model: the loss and gradients move by the rounding, not more; the head stays fp32") {
  const ModelSpec spec = test::tiny_llama();
  const test::TokenBatch b = test::random_tokens(2, 16, spec.vocab, 5);
  ModelOptions on;
  on.fp8 = true;
  Transformer<float> plain(spec, 2, 16), fp8(spec, 2, 16, on);
  std::vector<float> p(std::size_t(plain.layout().total));
  init_all(plain.layout(), 3, p.data());
  const float l0 = plain.forward(p.data(), b.tokens.data(), b.targets.data());
  const float l8 = fp8.forward(p.data(), b.tokens.data(), b.targets.data());
  std::vector<float> g0(p.size(), 0.0f), g8(p.size(), 0.0f);
  plain.backward(p.data(), g0.data());
  fp8.backward(p.data(), g8.data());
  const double rel = test::max_rel_diff(g8, g0);
  MESSAGE("loss fp32 " << l0 << ", fp8 " << l8 << "; gradients: max relative difference " << rel);
  CHECK(l8 != l0);
  CHECK(std::abs(l8 - l0) < 0.01 * l0);
  CHECK(rel > 1e-4);  // E5M2 gradients carry 2 mantissa bits
  CHECK(rel < 0.3);
}

TEST_CASE("fp8 capabilities: the CPU trains torchao tensorwise, without fp8 all-gather, tp or LoRA") {
  test::PlanShape shape;
  Plan p = test::tiny_plan(test::tiny_llama(), shape);
  p.fp8 = Fp8Settings{};
  const BackendCapabilities& cpu = backend_capabilities(ExecutorDevice::cpu);
  CHECK(capability_gaps(p, cpu).empty());
  auto first_path = [&](const Plan& q) {
    const auto gaps = capability_gaps(q, cpu);
    return gaps.empty() ? std::string() : gaps.front().path;
  };
  Plan rowwise = p, gather = p, tp = p;
  rowwise.fp8->scaling = Fp8Scaling::rowwise;
  CHECK(first_path(rowwise) == "/fp8/scaling");
  gather.fp8->all_gather = true;
  CHECK(first_path(gather) == "/fp8/all_gather");
  tp.parallelism.tp = 2;
  bool tp_gap = false;
  for (const CapabilityGap& g : capability_gaps(tp, cpu)) tp_gap |= g.path == "/parallelism/tp";
  CHECK(tp_gap);
  CHECK_FALSE(capability_gaps(p, backend_capabilities(ExecutorDevice::cuda)).empty());  // /fp8/scaling there
}

}  // namespace
}  // namespace fsdpx
