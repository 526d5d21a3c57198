// tests/executor/test_trainer_pipeline.cpp — pipeline parallelism on the CPU backend, ranks as threads:
// for every schedule (GPipe, 1F1B, interleaved 1F1B, ZB-H1), pp 2 x dp_shard 2 and pp 4 follow the loss
// trajectory of the 1-rank run of the same model (llama-tiny with 8 blocks), data (the shipped text)
// and seed within 1e-5 relative over 30 steps, and its parameters within 1e-4; a tied head (gpt-tiny) across
// stages, with and without clipping, HSDP inside stages and full recompute under ZB's split do too. A
// failing rank of either stage ends every rank quickly; a non-finite loss stops or skips on every stage;
// pp 2 beside tp 2 (sequence parallel; also x dp_shard 2) and beside cp 2 follow the run of the same
// tp, cp and dp_shard without the pipeline over 10 steps;
// the CUDA runtime takes pipelines, also beside tp or cp.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/runtime/runtime_program.h"
#include "tests/executor/pipeline_fixtures.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

using test::one_rank;
using test::pipe_plan;
using test::PipePlan;
using test::train;

constexpr double kTol = 1e-5;
// Parameters after up to 30 AdamW steps: the stages sum a unit's micro-batch gradients before one
// reduce-scatter where the 1-rank run adds each micro-batch's to the accumulator, so float rounding
// differs and Adam's normalised steps carry it (measured: 1.9e-5).
constexpr double kParamTol = 1e-4;

double max_loss_diff(const test::Trajectory& got, const test::Trajectory& ref) {
  double diff = 0;
  for (std::size_t k = 0; k < ref.losses.size(); ++k)
    diff = ::fsdpx::test::nan_max(diff, std::abs(got.losses[k] - ref.losses[k]) / std::abs(ref.losses[k]));
  return diff;
}

// The plan trained for s.steps against the 1-rank run of the same model, data and seed.
void check_against_one_rank(const PipePlan& s, const test::Trajectory& ref) {
  const Plan plan = pipe_plan(s);
  const test::Trajectory got = train(plan, s.steps);
  REQUIRE(got.losses.size() == ref.losses.size());
  const double loss_diff = max_loss_diff(got, ref), param_diff = test::max_rel_diff(got.params, ref.params);
  MESSAGE(s.model << " pp " << s.pp << " vpp " << s.vpp << " dp_shard " << s.dp_shard << " dp_replicate "
                   << s.dp_replicate << " " << std::string(pipeline_schedule_name(s.schedule)) << ": losses " << ref.losses.front()
                  << " -> " << ref.losses.back() << ", max rel diff " << loss_diff << ", params " << param_diff);
  CHECK(loss_diff <= kTol);
  CHECK(param_diff <= kParamTol);
}

const PipelineSchedule kSchedules[] = {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                                       PipelineSchedule::interleaved_1f1b, PipelineSchedule::zero_bubble};

}  // namespace

TEST_CASE("pipeline: every schedule, pp 2 x dp_shard 2 and pp 4, gives the 1-rank losses over 30 steps") {
  const test::Trajectory ref = train(pipe_plan(one_rank(PipePlan{})), 30);
  CHECK(ref.losses.back() < ref.losses.front() - 0.5);  // it learns
  for (PipelineSchedule schedule : kSchedules) {
    const int vpp = schedule == PipelineSchedule::interleaved_1f1b ? 2 : 1;
    PipePlan s;
    s.schedule = schedule;
    s.vpp = vpp;
    s.pp = 2, s.dp_shard = 2;
    check_against_one_rank(s, ref);
    s.pp = 4, s.dp_shard = 1;
    check_against_one_rank(s, ref);
  }
}

// The model-parallel groups sit inside each stage: the reference is the same tp, cp and dp_shard degrees
// without the pipeline, the same global batch of one-sequence micro-batches. llama-tiny's untied head and
// gpt-tiny's tied one (its table's copy on the last stage, vocabulary-parallel on both ends).
TEST_CASE("pipeline: pp 2 x tp 2 (x dp_shard 2) and pp 2 x cp 2 give the losses without the pipeline, 10 steps") {
  struct Shape {
    std::string model;
    int tp, cp, dp_shard;
    PipelineSchedule schedule;
  };
  for (const Shape& sh : {Shape{"llama-tiny", 2, 1, 1, PipelineSchedule::one_f_one_b},
                          Shape{"gpt-tiny", 2, 1, 1, PipelineSchedule::one_f_one_b},
                          Shape{"llama-tiny", 2, 1, 1, PipelineSchedule::interleaved_1f1b},
                          Shape{"llama-tiny", 1, 2, 1, PipelineSchedule::one_f_one_b},
                          Shape{"llama-tiny", 2, 1, 2, PipelineSchedule::one_f_one_b}}) {
    PipePlan s;
    s.model = sh.model;
    s.tp = sh.tp, s.cp = sh.cp, s.dp_shard = sh.dp_shard, s.steps = 10;
    const test::Trajectory ref = train(pipe_plan(s), s.steps);
    s.pp = 2, s.schedule = sh.schedule;
    s.vpp = sh.schedule == PipelineSchedule::interleaved_1f1b ? 2 : 1;
    const Plan plan = pipe_plan(s);
    const test::Trajectory got = train(plan, s.steps);
    REQUIRE(got.losses.size() == ref.losses.size());
    const double loss_diff = max_loss_diff(got, ref), param_diff = test::max_rel_diff(got.params, ref.params);
    MESSAGE(sh.model << " pp 2 x tp " << sh.tp << " x cp " << sh.cp << " x dp_shard " << sh.dp_shard << " "
                     << std::string(pipeline_schedule_name(sh.schedule)) << ": losses " << ref.losses.front() << " -> "
                     << ref.losses.back() << ", max rel diff " << loss_diff << ", params " << param_diff);
    CHECK(ref.losses.back() < ref.losses.front());
    CHECK(loss_diff <= kTol);
    CHECK(param_diff <= kParamTol);
  }
}

// Megatron's scatter-gather of a message without sequence parallelism, and zero bubble's split backward
// beside tp or cp, are not run: the plans are refused with their JSON path.
TEST_CASE("pipeline: beside tp, no sequence parallelism, and ZB-H1 beside tp or cp, are refused with their path") {
  PipePlan s;
  s.tp = 2, s.pp = 2, s.schedule = PipelineSchedule::one_f_one_b;
  Plan plan = pipe_plan(s);
  CHECK(make_runtime_program(plan).program.pp == 2);
  plan.parallelism.sequence_parallel = false;
  CHECK_THROWS_WITH_AS(make_runtime_program(plan),
                       doctest::Contains("plan: /parallelism/sequence_parallel: the runtime runs pipeline parallelism "
                                         "beside tp with sequence parallelism only"),
                       ConfigError);
  for (const auto& [tp, cp] : {std::pair{2, 1}, std::pair{1, 2}}) {
    s.tp = tp, s.cp = cp, s.schedule = PipelineSchedule::zero_bubble;
    CHECK_THROWS_WITH_AS(make_runtime_program(pipe_plan(s)),
                         doctest::Contains("plan: /parallelism/pp_schedule: the CPU runtime runs zero_bubble's split "
                                           "backward with tp = cp = 1 only"),
                         ConfigError);
  }
}

TEST_CASE("pipeline: a tied head across stages, with and without clipping") {
  for (double clip : {1.0, 0.0}) {
    PipePlan s;
    s.model = "gpt-tiny";
    s.steps = 8;
    s.clip = clip;
    const test::Trajectory ref = train(pipe_plan(one_rank(s)), s.steps);
    for (PipelineSchedule schedule : {PipelineSchedule::one_f_one_b, PipelineSchedule::zero_bubble}) {
      s.schedule = schedule;
      s.pp = 2, s.dp_shard = 2;
      check_against_one_rank(s, ref);
      s.pp = 4, s.dp_shard = 1;
      check_against_one_rank(s, ref);
    }
  }
}

TEST_CASE("pipeline: HSDP inside stages, and full recompute under the split backward") {
  PipePlan s;
  s.steps = 8;
  const test::Trajectory ref = train(pipe_plan(one_rank(s)), s.steps);
  s.pp = 2, s.dp_shard = 2, s.dp_replicate = 2;
  s.schedule = PipelineSchedule::one_f_one_b;
  check_against_one_rank(s, ref);
  s.dp_replicate = 1;
  s.schedule = PipelineSchedule::zero_bubble;
  s.recompute = RecomputeMode::full;
  const test::Trajectory ref_rc = train(pipe_plan(one_rank(s)), s.steps);
  check_against_one_rank(s, ref_rc);
}

namespace {

// The shipped text, failing on one rank's first call (Trainer::current_rank() tells which rank calls).
class FailOnRank : public DataSource {
 public:
  FailOnRank(const Plan& plan, int rank) : data_(test::shipped_text(plan)), rank_(rank) {}
  void global_batch(const DataPosition& pos, std::int64_t global_batch, std::int64_t seq,
                    std::vector<std::int32_t>& tokens) override {
    if (Trainer::current_rank() == rank_) throw std::runtime_error("disk on fire");
    data_->global_batch(pos, global_batch, seq, tokens);
  }
  std::string describe() const override { return "failing text"; }

 private:
  std::shared_ptr<DataSource> data_;
  int rank_;
};

}  // namespace

TEST_CASE("pipeline: a failing rank of either stage ends every rank with its message, quickly") {
  test::PipePlan s;
  s.pp = 2, s.dp_shard = 2;
  s.schedule = PipelineSchedule::one_f_one_b;
  const Plan plan = test::pipe_plan(s);
  for (int rank : {0, 3}) {  // the first stage's (its peers wait in receives) and the last's
    CAPTURE(rank);
    Trainer trainer(plan, std::make_shared<FailOnRank>(plan, rank));
    const auto start = std::chrono::steady_clock::now();
    const std::string want = fmt::format("rank {}: disk on fire", rank);
    CHECK_THROWS_WITH_AS(trainer.step(), doctest::Contains(want.c_str()), std::runtime_error);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 2.0);
  }
}

TEST_CASE("pipeline: a non-finite loss on the last stage stops the run, or skips the update on every stage") {
  test::PipePlan s;
  s.pp = 2, s.dp_shard = 2;
  s.schedule = PipelineSchedule::zero_bubble;
  const Plan plan = test::pipe_plan(s);
  for (NonFinitePolicy policy : {NonFinitePolicy::stop, NonFinitePolicy::skip_step}) {
    Trainer trainer(plan, test::shipped_text(plan), TrainerOptions{policy});
    TrainerState state = trainer.state();
    state.ranks[0].units.back().params[0] = std::numeric_limits<float>::quiet_NaN();  // the head's unit, last stage
    trainer.load_state(state);
    if (policy == NonFinitePolicy::stop) {
      CHECK_THROWS_WITH(trainer.step(), doctest::Contains("step 1, micro-batch 0: non-finite loss"));
      continue;
    }
    CHECK(trainer.step().skipped);
    const TrainerState after = trainer.state();
    std::size_t changed = 0;
    for (std::size_t r = 0; r < state.ranks.size(); ++r)
      for (std::size_t u = 0; u < state.ranks[r].units.size(); ++u)
        for (std::size_t i = 0; i < state.ranks[r].units[u].params.size(); ++i) {
          const float a = state.ranks[r].units[u].params[i], b = after.ranks[r].units[u].params[i];
          changed += !(a == b || (std::isnan(a) && std::isnan(b)));
        }
    CHECK(changed == 0);  // neither stage updated
  }
}

TEST_CASE("pipeline: the CUDA runtime takes pp > 1 alone and beside tp or cp, and refuses ZB-H1 beside tp") {
  test::PipePlan s;
  s.pp = 2, s.dp_shard = 2;
  s.schedule = PipelineSchedule::one_f_one_b;
  Plan plan = test::pipe_plan(s);
  plan.precision.param = DType::bf16;
  plan.attention_kernel = AttentionKernel::cuda_core;
  plan.model.heads = 2, plan.model.kv_heads = 2, plan.model.head_dim = 32;  // the CUDA kernel's smallest head
  CHECK(make_runtime_program(plan, ExecutorDevice::cuda).program.pp == 2);
  plan.parallelism.tp = 2;
  plan.parallelism.sequence_parallel = true;
  plan.parallelism.dp_shard = 1;
  CHECK(make_runtime_program(plan, ExecutorDevice::cuda).program.mesh.tp == 2);
  plan.parallelism.pp_schedule = PipelineSchedule::zero_bubble;
  CHECK_THROWS_WITH_AS(make_runtime_program(plan, ExecutorDevice::cuda),
                       doctest::Contains("plan: /parallelism/pp_schedule: the CUDA runtime runs zero_bubble's split "
                                         "backward with tp = cp = 1 only"),
                       ConfigError);
}

}  // namespace fsdpx
