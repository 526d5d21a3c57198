// tests/cuda/test_cuda_fp16.cpp — fp16 on the CUDA backend: CudaModelT<f16> against the CPU reference
// Transformer<float> on fp16-representable parameters (tiny llama and gpt; the loss gradient scaled by 2^10
// so that small activation gradients stay normal in fp16, as under loss scaling), every parameter gradient
// within relative L2 1e-2; the fp16 cast rounds through ±65504 to ±inf; and the Trainer: an fp16 plan from
// an overflowing initial scale (2^40) skips the CPU backend's steps with its scale trajectory, and its
// losses follow the CPU's. (The CPU emulates fp16 on parameters and parameter gradients only: should the
// real fp16 activation gradients overflow at a scale where those do not, the trajectories part; docs/cuda.md.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "core/attention_kernel.h"
#include "core/dtype.h"
#include "executor/cpu/fp16.h"
#include "executor/cuda/cast.h"
#include "executor/cuda_backend/cuda_backends.h"
#include "executor/cuda_backend/cuda_model.h"
#include "executor/model/init.h"
#include "executor/model/transformer.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/cuda_tiny_models.h"
#include "tests/cuda/model_run.h"
#include "tests/cuda/trainer_run.h"
#include "tests/executor/trainer_fixtures.h"
#include "tests/nan_max.h"

namespace fsdpx::cuda::test {
namespace {

constexpr std::int64_t kB = 2, kT = 40;
constexpr float kDloss = 1024.0f;  // a loss scale: keeps activation gradients out of fp16's subnormals

std::vector<float> fp16_params(const ParamLayout& layout) {
  std::vector<float> p(std::size_t(layout.total));
  init_all(layout, 11, p.data());
  cpu::round_to_fp16(p.data(), std::int64_t(p.size()));
  return p;
}

ModelRun run_cpu(const ModelSpec& spec, const std::vector<float>& params, const fsdpx::test::TokenBatch& batch) {
  Transformer<float> model(spec, kB, kT);
  ModelRun r{0, std::vector<float>(params.size(), 0.0f)};
  r.loss = model.forward(params.data(), batch.tokens.data(), batch.targets.data());
  model.backward(params.data(), r.grads.data(), kDloss);
  return r;
}

TEST_CASE("CudaModelT<f16>: loss and gradients match the CPU Transformer<float> on fp16 parameters") {
  for (const ModelSpec& spec : {cuda_tiny_llama(), cuda_tiny_gpt()}) {
    CAPTURE(spec.name);
    const ParamLayout layout = make_param_layout(spec);
    const std::vector<float> params = fp16_params(layout);
    const auto batch = fsdpx::test::random_tokens(kB, kT, spec.vocab, unsigned(rng()()));
    const ModelRun ref = run_cpu(spec, params, batch);
    const ModelRun got = run_model<f16>(spec, kB, kT, {}, params, batch, kDloss);
    MESSAGE("fp16 " << spec.name << " loss: gpu " << got.loss << ", cpu " << ref.loss);
    CHECK(std::fabs(got.loss - ref.loss) <= 5e-3 * std::fabs(ref.loss));
    for (const ModuleLayout& m : layout.modules)
      for (const TensorSlot& t : m.tensors) {
        double num = 0, den = 0;
        for (std::int64_t e = m.offset + t.offset; e < m.offset + t.offset + t.numel(); ++e) {
          const double d = double(got.grads[std::size_t(e)]) - double(ref.grads[std::size_t(e)]);
          num += d * d, den += double(ref.grads[std::size_t(e)]) * double(ref.grads[std::size_t(e)]);
        }
        const double rel = std::sqrt(num / (den > 0 ? den : 1));
        MESSAGE("fp16 " << m.name << " " << t.name << ": rel L2 err " << rel);
        CHECK(std::isfinite(rel));
        CHECK(rel <= 1e-2);  // fp16 keeps 11 bits: about 8x bf16's precision (test_cuda_model takes 3e-2)
      }
  }
}

TEST_CASE("cast_f32_to_16<f16> rounds to nearest even and overflows to infinity; round_through_f16 alike") {
  const std::vector<float> x = {1.0f, 1.0f + 1.0f / 4096, 65504.0f, 65519.0f, 65520.0f, -1e6f, 3e-8f};
  DeviceBuffer<float> d_x(x.size());
  DeviceBuffer<f16> d_h(x.size());
  upload(d_x, x);
  cast_f32_to_16(d_h.get(), d_x.get(), std::int64_t(x.size()), nullptr);
  round_through_f16(d_x.get(), std::int64_t(x.size()), nullptr);
  std::vector<f16> h(x.size());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(h.data(), d_h.get(), sizeof(f16) * h.size(), cudaMemcpyDeviceToHost));
  const std::vector<float> rounded = download(d_x);
  std::vector<float> want = x;
  cpu::round_to_fp16(want.data(), std::int64_t(want.size()));  // GCC's _Float16: the CPU backend's rounding
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(x[i]);
    CHECK(__half2float(h[i]) == want[i]);
    CHECK(rounded[i] == want[i]);
  }
  CHECK(std::isinf(want[4]));  // 65520 rounds to infinity, 65519 to 65504
  CHECK(want[3] == 65504.0f);
}

constexpr int kSteps = 40;  // 2^40 overflowed fp16 for 14+ steps on an H200 (2026-11-30): room to train after

// tiny llama (head_dim 32) on 2 FSDP ranks, 2 micro-batches each, fp16 with a scale of 2^40 (every
// gradient overflows at first); the CPU backend's fp32-emulated fp16 or the CUDA runtime's fp16.
Plan fp16_plan(bool cuda) {
  fsdpx::test::PlanShape s;
  s.dp_shard = 2, s.accum = 2;
  Plan p = fsdpx::test::tiny_plan(cuda_tiny_llama(), s, 32);
  p.precision.param = fsdpx::DType::fp16;
  LossScaleSettings ls;
  ls.initial_scale = std::ldexp(1.0, 40);
  p.loss_scale = ls;
  p.optimizer.total_steps = 100;
  if (cuda) p.attention_kernel = AttentionKernel::cuda_core;
  validate_plan(p, "fp16 test plan");
  return p;
}

struct Run {
  std::vector<double> scales, losses;
  std::vector<bool> skipped;
};

Run train(const Plan& plan, bool cuda) {
  const auto trainer = hash_data_trainer(plan, cuda);
  Run r;
  for (int i = 0; i < kSteps; ++i) {
    const StepMetrics m = trainer->step();
    r.scales.push_back(m.loss_scale), r.skipped.push_back(m.skipped), r.losses.push_back(m.loss);
  }
  return r;
}

TEST_CASE("CudaRankBackend<f16>: an overflowing initial scale gives the CPU backend's skipped steps and scales") {
  const Run cpu = train(fp16_plan(false), false), gpu = train(fp16_plan(true), true);
  int skipped = 0;
  for (int i = 0; i < kSteps; ++i) {
    MESSAGE("fp16 step " << i << ": scale gpu " << gpu.scales[std::size_t(i)] << " cpu " << cpu.scales[std::size_t(i)]
                         << ", skipped gpu " << gpu.skipped[std::size_t(i)] << " cpu " << cpu.skipped[std::size_t(i)]
                         << ", loss gpu " << gpu.losses[std::size_t(i)] << " cpu " << cpu.losses[std::size_t(i)]);
    skipped += cpu.skipped[std::size_t(i)] ? 1 : 0;
  }
  CHECK(gpu.scales == cpu.scales);
  CHECK(gpu.skipped == cpu.skipped);
  REQUIRE(skipped > 0);        // 2^40 overflows
  REQUIRE(skipped < kSteps);   // and the scale came down far enough to train
  // Skipped steps leave the parameters alone, so the losses agree until the first update; after it, fp16
  // compute against fp32: within 2e-2 as the bf16 trainer tests.
  double worst = 0;
  for (int i = 0; i < kSteps; ++i)
    worst = ::fsdpx::test::nan_max(worst, std::abs(gpu.losses[std::size_t(i)] - cpu.losses[std::size_t(i)]) /
                                cpu.losses[std::size_t(i)]);
  MESSAGE("fp16 trainer: " << skipped << " skipped steps; maxdiff loss rel " << worst);
  CHECK(worst <= 2e-2);
}

}  // namespace
}  // namespace fsdpx::cuda::test
