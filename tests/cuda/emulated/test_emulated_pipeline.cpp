// tests/cuda/emulated/test_emulated_pipeline.cpp — pipeline parallelism of the CUDA backend on the emulated
// runtime: 1F1B on 2 and 4 ranks (pp 2, pp 4, pp 2 x dp_shard 2) follows the CPU backend's run of the same
// plan within 1e-5 over 10 steps, and so does every schedule (GPipe, 1F1B, interleaved 1F1B with vpp 2,
// ZB-H1) at pp 2 x dp_shard 2, each message staged in stream-ordered memory and sent between two rank
// threads' streams (emulated_runs.h: the float model). Leaves out processes (one address space here).
#include <doctest/doctest.h>

#include <string>

#include "tests/cuda/emulated/emulated_runs.h"
#include "tests/executor/pipeline_fixtures.h"

namespace fsdpx::emulated_test {
namespace {

// llama-tiny (8 blocks, seq 32) with 2 heads of 32 (the CUDA runtime's smallest head_dim), 4 micro-batches.
Plan pipeline(PipelineSchedule schedule, int pp, int vpp, int dp_shard) {
  test::PipePlan s;
  s.schedule = schedule;
  s.pp = pp, s.vpp = vpp, s.dp_shard = dp_shard;
  s.global_batch = 4 * dp_shard;
  s.steps = kSteps;
  Plan p = test::pipe_plan(s);
  p.model.heads = 2, p.model.kv_heads = 1, p.model.head_dim = 32;
  validate_plan(p, "pipeline test plan");
  return p;
}

void check_follows_cpu(const Plan& plan) {
  const auto data = test::shipped_text(plan);
  const std::vector<double> cpu = losses(plan, data, false);
  const std::vector<double> emu = losses(plan, test::shipped_text(plan), true);
  const double d = max_abs_diff(emu, cpu);
  const Parallelism& par = plan.parallelism;
  MESSAGE(std::string(pipeline_schedule_name(par.pp_schedule)) << " pp " << par.pp << " vpp " << par.vpp << " dp_shard "
                                                  << par.dp_shard << ": loss " << cpu.front() << " -> " << cpu.back()
                                                  << ", maxdiff emulated CUDA vs CPU " << d);
  CHECK(d <= kLossTol);
  CHECK(moved(cpu) > 100 * kLossTol);  // the steps change the loss: two frozen runs would prove nothing
}

TEST_CASE("emulated CUDA: 1F1B on 2 and 4 ranks follows the CPU backend within 1e-5") {
  check_follows_cpu(pipeline(PipelineSchedule::one_f_one_b, 2, 1, 1));
  check_follows_cpu(pipeline(PipelineSchedule::one_f_one_b, 4, 1, 1));
  check_follows_cpu(pipeline(PipelineSchedule::one_f_one_b, 2, 1, 2));
}

TEST_CASE("emulated CUDA: GPipe, interleaved 1F1B and ZB-H1 at pp 2 x dp_shard 2 follow the CPU backend") {
  check_follows_cpu(pipeline(PipelineSchedule::gpipe, 2, 1, 2));
  check_follows_cpu(pipeline(PipelineSchedule::interleaved_1f1b, 2, 2, 2));
  check_follows_cpu(pipeline(PipelineSchedule::zero_bubble, 2, 1, 2));
}

}  // namespace
}  // namespace fsdpx::emulated_test
