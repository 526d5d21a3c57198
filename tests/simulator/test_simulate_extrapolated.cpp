// tests/simulator/test_simulate_extrapolated.cpp — the summary `fsdpx simulate` prints by default
// (simulator/simulate_extrapolated.h) against the full simulation of every micro-batch: the step time to
// the nanosecond (the bound is 0.1%), throughput, MFU and HFU, per stage its compute, idle, bubble
// and peak, the busiest stage's phases, the peak memory and its op, and the step's op count; on plans
// without a pipeline and with 1F1B, interleaved 1F1B and ZB-H1 pipelines, including the 530B plan on
// 2,240 GPUs (issue 36); and a plan whose steady state is not found (GPipe) is simulated whole.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/config_paths.h"
#include "core/errors.h"
#include "program/lower.h"
#include "simulator/simulate.h"
#include "simulator/simulate_extrapolated.h"
#include "simulator/steady_state.h"
#include "tests/support/pipelined_plan.h"

namespace fsdpx {

namespace {

Plan plan_of(const char* model, const char* cluster, Parallelism par, std::int64_t seq, std::int64_t accum,
             RecomputeMode rc) {
  return test::pipelined_plan(model, cluster, par, par.pp_schedule, par.vpp, seq, accum, rc);
}

Parallelism shape(int pp, int dp_shard, int tp, PipelineSchedule s = PipelineSchedule::one_f_one_b, int vpp = 1) {
  Parallelism p;
  p.pp = pp, p.dp_shard = dp_shard, p.tp = tp, p.sequence_parallel = tp > 1, p.vpp = vpp;
  if (pp > 1) p.pp_schedule = s;
  return p;
}

void check_equal(const Simulation& x, const Simulation& full) {
  CHECK(std::llround(x.step_time_s * 1e9) == full.engine.step_time_ns);
  CHECK(std::abs(x.step_time_s / full.step_time_s - 1) < 1e-3);
  CHECK(x.tokens_per_s_per_gpu == doctest::Approx(full.tokens_per_s_per_gpu).epsilon(1e-9));
  CHECK(x.mfu == doctest::Approx(full.mfu).epsilon(1e-9));
  CHECK(x.hfu == doctest::Approx(full.hfu).epsilon(1e-6));
  CHECK(x.ops_per_rank == full.ops_per_rank);
  CHECK(x.peak_memory_total_bytes == doctest::Approx(full.peak_memory_total_bytes).epsilon(1e-9));
  CHECK(x.peak_memory_stage == full.peak_memory_stage);
  REQUIRE(x.stages.size() == full.stages.size());
  for (std::size_t r = 0; r < x.stages.size(); ++r) {
    CHECK(x.stages[r].compute_s == doctest::Approx(full.stages[r].compute_s).epsilon(1e-9));
    CHECK(x.stages[r].idle_fraction == doctest::Approx(full.stages[r].idle_fraction).epsilon(1e-6));
    CHECK(x.stages[r].peak_memory_bytes == doctest::Approx(full.stages[r].peak_memory_bytes).epsilon(1e-9));
    // The windows tile the step's idle time (simulate.cpp split_idle clips gaps to them): equal to
    // rounding of sums, as in test_steady_state_pipeline.cpp.
    CHECK(x.stages[r].bubble_s == doctest::Approx(full.stages[r].bubble_s).epsilon(1e-9));
  }
  for (std::size_t ph = 0; ph < 3; ++ph) {
    CHECK(x.phases[ph].compute_s == doctest::Approx(full.phases[ph].compute_s).epsilon(1e-6));
    CHECK(x.phases[ph].exposed_comm_s ==
          doctest::Approx(full.phases[ph].exposed_comm_s).epsilon(1e-3).scale(full.step_time_s));
  }
  CHECK(x.exposed_comm_s == doctest::Approx(full.exposed_comm_s).epsilon(1e-3).scale(full.step_time_s));
  CHECK(x.bubble_fraction == doctest::Approx(full.bubble_fraction).epsilon(1e-9));
}

}  // namespace

TEST_CASE("the extrapolated summary equals the full simulation, with and without pipelines") {
  std::vector<Plan> plans{
      plan_of("llama3.1-8b", "dgx-h100", shape(1, 8, 1), 4096, 12, RecomputeMode::none),
      plan_of("llama3.1-8b", "dgx-h100", shape(1, 4, 2), 8192, 9, RecomputeMode::full),
      plan_of("llama-tiny", "cpu", shape(4, 2, 1), 64, 40, RecomputeMode::none),
      plan_of("llama3.1-8b", "dgx-h100", shape(2, 4, 1), 8192, 37, RecomputeMode::none),
      // 128 micro-batches: with the causal FlashAttention-2 forward curve (configs/gpus, 2026-11-29) this
      // interleaved schedule settles after more than the first probe's 32 (8 pp); a 64 probe finds its period.
      plan_of("llama3.1-8b", "dgx-h100", shape(4, 2, 1, PipelineSchedule::interleaved_1f1b, 2), 8192, 128,
              RecomputeMode::selective_op),
      plan_of("llama3.1-8b", "dgx-h100", shape(4, 1, 2, PipelineSchedule::zero_bubble), 4096, 48,
              RecomputeMode::full),
      load_plan(FSDPX_TEST_DATA_DIR "/plans/gpt-530b-a100x2240-pp35-1f1b.json"),
  };
  for (const Plan& p : plans) {
    const auto x = simulate_extrapolated(p);
    const std::string schedule = pipeline_schedule_name(p.parallelism.pp_schedule);
    INFO(p.model.name << " pp " << p.parallelism.pp << " " << schedule
                      << " accum " << p.grad_accum());
    REQUIRE(x.has_value());
    CHECK(x->simulated_micro_batches < p.grad_accum());
    const Simulation full = simulate(p);
    CHECK(full.simulated_micro_batches == 0);
    check_equal(*x, full);
  }
}

TEST_CASE("a plan whose steady state is not found is simulated whole") {
  const Plan gpipe = plan_of("llama-tiny", "cpu", shape(2, 1, 1, PipelineSchedule::gpipe), 64, 23, RecomputeMode::none);
  const Simulation fast = simulate_fast(gpipe);
  CHECK(fast.simulated_micro_batches == 0);
  CHECK(fast.engine.step_time_ns == simulate(gpipe).engine.step_time_ns);
  const Plan few = plan_of("llama-tiny", "cpu", shape(1, 4, 1), 64, 3, RecomputeMode::none);
  CHECK_FALSE(simulate_extrapolated(few).has_value());
}

}  // namespace fsdpx

namespace fsdpx {

// Beyond what lowering takes (kMaxLoweredMicroBatches), a plan whose probes never repeat (GPipe) is
// summarised by the linear extrapolation the planner's evaluation uses (issue 36: `fsdpx simulate` refused
// the 8,192-micro-batch plan the planner proposed): the same step time, throughput and peak as
// simulate_step_totals to the bit, marked linear, and within 0.1% of the whole step of half the
// micro-batches in throughput.
TEST_CASE("beyond what lowering takes, the summary is the planner's linear extrapolation") {
  const Plan p = plan_of("llama-tiny", "cpu", shape(2, 1, 1, PipelineSchedule::gpipe), 64, 2 * kMaxLoweredMicroBatches,
                         RecomputeMode::none);
  const Plan half = plan_of("llama-tiny", "cpu", shape(2, 1, 1, PipelineSchedule::gpipe), 64, kMaxLoweredMicroBatches,
                            RecomputeMode::none);
  const Simulation fast = simulate_fast(p);
  const StepTotals planner = simulate_step_totals(p);
  CHECK(fast.linear_extrapolation);
  CHECK(fast.simulated_micro_batches == 512);
  // Step, throughput, MFU, peak and bubble, then per stage its compute and peak: equal to the bit.
  const auto figures = [](const auto& x) {
    std::vector<double> v{x.step_time_s, x.tokens_per_s_per_gpu, x.mfu, x.peak_memory_total_bytes, x.bubble_fraction};
    for (const StageSummary& st : x.stages) v.insert(v.end(), {st.compute_s, st.peak_memory_bytes});
    return v;
  };
  CHECK(figures(fast) == figures(planner));
  CHECK(fast.stages.size() == 2);
  const Simulation whole = simulate(half);
  CHECK(fast.tokens_per_s_per_gpu == doctest::Approx(whole.tokens_per_s_per_gpu).epsilon(1e-3));
  CHECK(fast.ops_per_rank == doctest::Approx(2.0 * double(whole.ops_per_rank)).epsilon(1e-3));
  CHECK(fast.hfu == doctest::Approx(whole.hfu).epsilon(1e-3));
  CHECK(fast.phases[1].compute_s == doctest::Approx(2 * whole.phases[1].compute_s).epsilon(2e-3));
  CHECK_THROWS_AS(simulate(p), ConfigError);  // the whole step stays refused
}

}  // namespace fsdpx
