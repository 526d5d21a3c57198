// tests/cuda/test_cuda_pipeline.cpp — pipeline parallelism on the CUDA backend, every rank a thread on
// one GPU (the in-process device communicator's point-to-point): for each schedule (GPipe, 1F1B,
// interleaved 1F1B with vpp 2, ZB-H1), pp 2 x dp_shard 2 and pp 4 of llama-tiny with 8 blocks (head_dim
// 32, the flash kernel's smallest) must follow the CPU backend's fp32 1-rank run of the same model, data
// and seed within the bf16 tolerances of test_cuda_trainer.cpp; so must gpt-tiny's tied head across
// stages and ZB-H1 with full recompute; and the CUDA pp 2 run is deterministic.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/attention_kernel.h"
#include "core/dtype.h"
#include "executor/cuda_backend/cuda_backends.h"
#include "tests/executor/pipeline_fixtures.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

constexpr int kSteps = 3;
constexpr double kLossTol = 2e-2, kParamTol = 2e-2;  // bf16, as test_cuda_trainer.cpp

// The pipeline fixture's plan with heads the CUDA attention kernel takes (hidden 64 = 2 x 32).
test::PipePlan shape(PipelineSchedule schedule, int pp, int vpp, int dp_shard, const char* model = "llama-tiny") {
  test::PipePlan s;
  s.model = model;
  s.schedule = schedule;
  s.pp = pp, s.vpp = vpp, s.dp_shard = dp_shard;
  s.steps = kSteps;
  return s;
}

Plan gpu_heads(Plan p) {
  p.model.heads = 2;
  p.model.kv_heads = p.model.arch == Arch::llama ? 1 : 2;
  p.model.head_dim = 32;
  return p;
}

Plan on_cuda(Plan p) {
  p.precision.param = DType::bf16;
  p.attention_kernel = AttentionKernel::cuda_core;
  return p;
}

test::Trajectory cuda_training(const Plan& plan) {
  TrainerOptions o;
  o.cuda = true;
  Trainer trainer(on_cuda(plan), test::shipped_text(plan), o, cuda::in_process_cuda_backends(0));
  test::Trajectory out;
  for (int k = 0; k < kSteps; ++k) out.losses.push_back(trainer.step().loss);
  out.params = trainer.gather_full_params();
  return out;
}

// The CUDA run of `s` against the CPU backend's 1-rank fp32 run of the same model, data and seed.
void check_against_cpu(const test::PipePlan& s) {
  const Plan plan = gpu_heads(test::pipe_plan(s));
  const test::Trajectory ref = test::train(gpu_heads(test::pipe_plan(test::one_rank(s))), kSteps);
  const test::Trajectory got = cuda_training(plan);
  double loss = 0;
  for (std::size_t k = 0; k < ref.losses.size(); ++k)
    loss = ::fsdpx::test::nan_max(loss, std::abs(got.losses[k] - ref.losses[k]) / std::abs(ref.losses[k]));
  const double params = test::max_rel_diff(got.params, ref.params);
  INFO(s.model << " " << pipeline_schedule_name(s.schedule) << " pp " << s.pp << " vpp " << s.vpp << " dp_shard "
               << s.dp_shard << ": loss rel " << loss << ", params rel " << params);
  CHECK(loss <= kLossTol);
  CHECK(params <= kParamTol);
}

TEST_CASE("CUDA pipeline: every schedule, pp 2 x dp_shard 2 and pp 4, follows the CPU backend's 1-rank run") {
  struct Case {
    PipelineSchedule schedule;
    int vpp;
  };
  for (const Case c : {Case{PipelineSchedule::gpipe, 1}, Case{PipelineSchedule::one_f_one_b, 1},
                       Case{PipelineSchedule::interleaved_1f1b, 2}, Case{PipelineSchedule::zero_bubble, 1}}) {
    check_against_cpu(shape(c.schedule, 2, c.vpp, 2));
    check_against_cpu(shape(c.schedule, 4, c.vpp, 1));
  }
}

TEST_CASE("CUDA pipeline: a tied head across stages and ZB-H1 with full recompute follow the CPU backend") {
  check_against_cpu(shape(PipelineSchedule::one_f_one_b, 2, 1, 2, "gpt-tiny"));
  check_against_cpu(shape(PipelineSchedule::zero_bubble, 2, 1, 1, "gpt-tiny"));
  test::PipePlan zb = shape(PipelineSchedule::zero_bubble, 2, 1, 2);
  zb.recompute = RecomputeMode::full;
  check_against_cpu(zb);
}

TEST_CASE("CUDA pipeline: two runs of a pp 2 x dp_shard 2 plan are bitwise identical") {
  const Plan plan = gpu_heads(test::pipe_plan(shape(PipelineSchedule::one_f_one_b, 2, 1, 2)));
  const test::Trajectory a = cuda_training(plan), b = cuda_training(plan);
  CHECK(a.losses == b.losses);
  CHECK(a.params == b.params);
}

}  // namespace
}  // namespace fsdpx
