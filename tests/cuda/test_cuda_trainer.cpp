// tests/cuda/test_cuda_trainer.cpp — the CUDA backend on the runtime: FSDP on 1–4 ranks as threads on
// one GPU (the in-process device communicator), units of 1 and 2 blocks, reshard_after_forward on and
// off, prefetch 0 and 2, accumulation 1 and 3, recompute none and full, HSDP 2×2, DDP and gradients
// reduced in bf16, must follow the single-rank fp32 reference of the CPU tests
// (tests/executor/trainer_fixtures.h) within bf16 tolerances after 3 steps; the GPU runs are deterministic; and a profiled run times rank 0's kernels
// under the CPU run's names. Models have head_dim 32 (the flash attention kernel's smallest).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/attention_kernel.h"
#include "core/dtype.h"
#include "executor/cuda_backend/cuda_backends.h"
#include "executor/model/init.h"
#include "tests/executor/trainer_fixtures.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

constexpr int kSteps = 3;
// bf16 activations and parameters (8 mantissa bits, relative rounding 2^-9 ≈ 2e-3) through 2 blocks;
// Adam's normalised updates (lr 3e-3) turn gradient noise into parameter differences of up to lr per
// step, relative to weights of order 1 (the norm gains).
constexpr double kLossTol = 2e-2, kParamTol = 2e-2;

ModelSpec gpu_tiny(Arch arch) {
  ModelSpec s;
  s.name = arch == Arch::llama ? "gpu-tiny-llama" : "gpu-tiny-gpt";
  s.arch = arch;
  s.layers = 2, s.hidden = 64, s.heads = 2, s.head_dim = 32, s.vocab = 64, s.max_seq = 32;
  s.kv_heads = arch == Arch::llama ? 1 : 2;
  s.ffn_kind = arch == Arch::llama ? FfnKind::swiglu : FfnKind::gelu;
  s.ffn_hidden = arch == Arch::llama ? 96 : 128;
  s.tied_embeddings = arch == Arch::gpt;
  s.bias = arch == Arch::gpt ? LinearBias::all : LinearBias::none;
  return s;
}

// The CPU tests' plan as the CUDA runtime runs it: bf16 compute, the flash kernel, `reduce` gradients.
Plan on_cuda(Plan p, DType reduce = DType::fp32) {
  p.precision.param = DType::bf16;
  p.precision.reduce = reduce;
  p.attention_kernel = AttentionKernel::cuda_core;
  return p;
}

TrainerOptions cuda_options(bool profile = false) {
  TrainerOptions o;
  o.profile = profile;
  o.cuda = true;
  return o;
}

test::Trajectory cuda_training(const Plan& plan, DType reduce = DType::fp32) {
  Trainer trainer(on_cuda(plan, reduce), std::make_shared<test::HashData>(plan.model.vocab), cuda_options(),
                  cuda::in_process_cuda_backends(0));
  test::Trajectory out;
  for (int s = 0; s < kSteps; ++s) out.losses.push_back(trainer.step().loss);
  out.params = trainer.gather_full_params();
  return out;
}

struct Diff {
  double loss = 0, params = 0;
};

Diff compare(const test::Trajectory& got, const test::Trajectory& ref) {
  Diff d;
  for (std::size_t s = 0; s < ref.losses.size(); ++s)
    d.loss = ::fsdpx::test::nan_max(d.loss, std::abs(got.losses[s] - ref.losses[s]) / std::abs(ref.losses[s]));
  d.params = test::max_rel_diff(got.params, ref.params);
  return d;
}

void check_close(const Plan& plan, Diff& worst, DType reduce = DType::fp32) {
  const Diff d = compare(cuda_training(plan, reduce), test::reference_training(plan, kSteps));
  worst.loss = ::fsdpx::test::nan_max(worst.loss, d.loss), worst.params = ::fsdpx::test::nan_max(worst.params, d.params);
  INFO("maxdiff: loss rel " << d.loss << ", params rel " << d.params);
  CHECK(d.loss <= kLossTol);
  CHECK(d.params <= kParamTol);
}

TEST_CASE("CudaRankBackend: FSDP on 1-4 ranks on one GPU follows the fp32 single-rank reference") {
  for (Arch arch : {Arch::llama, Arch::gpt}) {
    const ModelSpec model = gpu_tiny(arch);
    Diff worst;
    for (int ranks = 1; ranks <= 4; ++ranks)
      for (std::int64_t accum : {1, 3})
        for (int blocks : {1, 2})
          for (RecomputeMode rc : {RecomputeMode::none, RecomputeMode::full})
            for (bool reshard : {true, false})
              for (int prefetch : {0, 2}) {
                test::PlanShape s;
                s.dp_shard = ranks, s.accum = accum, s.blocks_per_unit = blocks, s.recompute = rc;
                s.reshard = reshard, s.prefetch = prefetch;
                INFO(model.name << " ranks " << ranks << " accum " << accum << " blocks/unit " << blocks << " reshard "
                                << reshard << " prefetch " << prefetch << " recompute " << recompute_mode_name(rc));
                check_close(test::tiny_plan(model, s, 16), worst);
              }
    MESSAGE(model.name << ": maxdiff loss rel " << worst.loss << ", params rel " << worst.params);
  }
}

TEST_CASE("CudaRankBackend: HSDP 2x2, DDP and bf16 reduction on one GPU follow the fp32 single-rank reference") {
  const ModelSpec model = gpu_tiny(Arch::llama);
  Diff worst;
  for (std::int64_t accum : {1, 3}) {
    test::PlanShape s;
    s.dp_shard = 2, s.dp_replicate = 2, s.accum = accum;
    INFO("HSDP 2x2 accum " << accum);
    check_close(test::tiny_plan(model, s, 16), worst);
  }
  test::PlanShape s;
  s.dp_shard = 3;
  Plan ddp = test::tiny_plan(model, s, 16);
  ddp.parallelism.data_parallel = DataParallel::ddp;
  INFO("DDP on 3 ranks");
  check_close(ddp, worst);
  test::PlanShape four;
  four.dp_shard = 4, four.accum = 3;
  INFO("FSDP on 4 ranks, gradients reduced in bf16");
  check_close(test::tiny_plan(model, four, 16), worst, DType::bf16);
  MESSAGE("HSDP/DDP: maxdiff loss rel " << worst.loss << ", params rel " << worst.params);
}

// Latent attention on the device (executor/cuda_backend/cuda_mla_attention.h): deepseek-tiny's (heads of
// 16 + 8 padded to the flash kernel's 32, executor/cuda/mla.cu) in dense blocks: its MoE is left out, so
// that bf16 router logits cannot pick other experts than the fp32 reference. Written before any GPU ran it
// (issue 29); checked once on the emulated runtime's bf16 kernels (2026-11-30: loss rel 6.7e-5, params rel 1.0e-2).
TEST_CASE("CudaRankBackend: latent attention (deepseek-tiny's, dense) on 1 and 2 ranks follows the fp32 reference") {
  ModelSpec model = load_model("deepseek-tiny");
  model.moe = MoeSpec{};
  Diff worst;
  for (int ranks : {1, 2}) {
    test::PlanShape s;
    s.dp_shard = ranks;
    INFO(model.name << " dense, ranks " << ranks);
    check_close(test::tiny_plan(model, s, 16), worst);
  }
  MESSAGE(model.name << " (dense): maxdiff loss rel " << worst.loss << ", params rel " << worst.params);
}

TEST_CASE("CudaRankBackend: two runs of a 2-rank plan are bitwise identical") {
  test::PlanShape s;
  s.dp_shard = 2, s.accum = 3, s.prefetch = 2;
  const Plan plan = test::tiny_plan(gpu_tiny(Arch::llama), s, 16);
  const test::Trajectory a = cuda_training(plan), b = cuda_training(plan);
  CHECK(a.losses == b.losses);
  CHECK(a.params == b.params);
}

TEST_CASE("CudaRankBackend: --profile times the kernels of rank 0 only, under the CPU backend's names") {
  test::PlanShape s;
  s.dp_shard = 2, s.accum = 2;
  const Plan plan = test::tiny_plan(gpu_tiny(Arch::llama), s, 16);
  const auto data = std::make_shared<test::HashData>(plan.model.vocab);
  Trainer cpu(plan, data, TrainerOptions{NonFinitePolicy::stop, true});
  Trainer gpu(on_cuda(plan), data, cuda_options(true), cuda::in_process_cuda_backends(0));
  Trainer quiet(on_cuda(plan), data, cuda_options(), cuda::in_process_cuda_backends(0));
  cpu.step(), gpu.step(), quiet.step();
  const OpProfile c = cpu.profile(), g = gpu.profile();
  REQUIRE(!c.kernel_calls.empty());
  // Rank 1 gets no profiler: counts twice the CPU's would mean both ranks recorded.
  CHECK(g.kernel_calls == c.kernel_calls);
  for (const auto& entry : g.kernel_time_s) {
    CAPTURE(entry.first);
    CHECK(entry.second > 0);
  }
  CHECK(quiet.profile().kernel_calls.empty());  // no --profile: no profiler reaches the model
}

}  // namespace
}  // namespace fsdpx
