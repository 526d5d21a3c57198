// tests/executor/test_trainer_parallel.cpp — tensor and context parallelism in the Trainer (ranks as
// threads): llama-tiny (GQA: 4 heads on 2 KV heads) and gpt-tiny (biases, tied head) from configs/,
// trained 30 steps at tp 2, tp 2 x dp_shard 2, cp 2 x dp_shard 2 and tp 2 x cp 2 (sequence parallel),
// must give the losses and final parameters of the 1-rank run of the same model, data and seed within
// 1e-5 relative; and a checkpoint saved at tp 2 x dp_shard 2 resumes at 1 rank and at dp_shard 4 with
// the next loss of the uninterrupted run within 1e-6. (Across processes: tests/tools/test_run_parallel_cli.sh.)
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include "core/config_paths.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/reshard.h"
#include "executor/model/init.h"
#include "executor/session/checkpoint_plan.h"
#include "tests/executor/trainer_fixtures.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

constexpr int kSteps = 30;
constexpr double kTol = 1e-5;
constexpr std::int64_t kSeq = 32, kGlobalBatch = 4;

// Global batch 4 of micro-batches of 1 whatever the degrees; the optimizer of `fsdpx plan` (lr 3e-4,
// 10 warm-up steps, cosine over 1000).
Plan parallel_plan(const ModelSpec& model, int tp, int cp, int dp) {
  test::PlanShape s;
  s.tp = tp, s.cp = cp, s.dp_shard = dp, s.accum = kGlobalBatch / dp;
  Plan p = test::tiny_plan(model, s, kSeq);
  p.optimizer = OptimizerSettings{};
  return p;
}

double max_loss_rel(const test::Trajectory& a, const test::Trajectory& b) {
  double d = 0;
  for (std::size_t s = 0; s < b.losses.size(); ++s)
    d = ::fsdpx::test::nan_max(d, std::abs(a.losses[s] - b.losses[s]) / std::abs(b.losses[s]));
  return d;
}

TEST_CASE("trainer: tp 2, tp 2 x dp 2, cp 2 x dp 2 and tp 2 x cp 2 give the 1-rank losses and parameters") {
  struct Shape {
    int tp, cp, dp;
  };
  for (const std::string name : {"llama-tiny", "gpt-tiny"}) {
    const ModelSpec model = load_model(name);
    const Plan one = parallel_plan(model, 1, 1, 1);
    const test::Trajectory ref = test::trainer_training(one, kSteps);
    std::vector<float> init(ref.params.size());
    init_all(make_param_layout(model), one.training.seed, init.data());
    CHECK(test::max_rel_diff(ref.params, init) > 100 * kTol);  // training moved the weights
    for (const Shape& sh : {Shape{2, 1, 1}, Shape{2, 1, 2}, Shape{1, 2, 2}, Shape{2, 2, 1}}) {
      const test::Trajectory got = test::trainer_training(parallel_plan(model, sh.tp, sh.cp, sh.dp), kSteps);
      const double loss = max_loss_rel(got, ref), params = test::max_rel_diff(got.params, ref.params);
      MESSAGE(name << " tp " << sh.tp << " cp " << sh.cp << " dp_shard " << sh.dp << ": " << kSteps
                   << " steps, loss max rel diff " << loss << ", final params max rel diff " << params);
      CHECK(loss <= kTol);
      CHECK(params <= kTol);
    }
  }
}

// Trains `saved_plan` 3 steps, checkpoints, takes step 4; each plan of `resume` loads the checkpoint
// (resharded) and must take step 4 with the same loss within 1e-6 relative.
void check_resume(const Plan& saved_plan, const std::vector<Plan>& resume, const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("fsdpx-" + tag + "-" + std::to_string(::getpid()));
  Trainer trainer(saved_plan, std::make_shared<test::HashData>(saved_plan.model.vocab));
  for (int s = 0; s < 3; ++s) trainer.step();
  const std::string ckpt = save_checkpoint(dir.string(), trainer.state(), plan_fingerprint(saved_plan));
  const double next = trainer.step().loss;  // step 4, uninterrupted
  for (const Plan& plan : resume) {
    Trainer resumed(plan, std::make_shared<test::HashData>(plan.model.vocab));
    resumed.load_state(reshard_state(read_checkpoint(ckpt, plan_fingerprint(plan)), resumed.state(), ckpt));
    const double loss = resumed.step().loss;
    const Parallelism& par = plan.parallelism;
    MESSAGE(tag << " resumed at tp " << par.tp << " x cp " << par.cp << " x dp_shard " << par.dp_shard << ": step 4 loss " << loss
                << " vs " << next << " (rel diff " << std::abs(loss - next) / next << ")");
    CHECK(std::abs(loss - next) <= 1e-6 * std::abs(next));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("trainer: a checkpoint saved at tp 2 x dp_shard 2 resumes at 1 rank and at dp_shard 4, and back") {
  for (const std::string name : {"llama-tiny", "gpt-tiny"}) {
    const ModelSpec model = load_model(name);
    check_resume(parallel_plan(model, 2, 1, 2), {parallel_plan(model, 1, 1, 1), parallel_plan(model, 1, 1, 4)},
                 name + "-tp2-dp2");
    check_resume(parallel_plan(model, 1, 1, 1), {parallel_plan(model, 2, 1, 2)}, name + "-1rank");
  }
}

// FSDP shards over dp_shard x cp: a cp 2 x dp_shard 2 checkpoint holds 4 shards, and loads at other layouts.
TEST_CASE("trainer: a checkpoint saved at cp 2 x dp_shard 2 resumes at 1 rank, dp_shard 4 and cp 2, and back") {
  const ModelSpec model = load_model("llama-tiny");
  const Plan cp2dp2 = parallel_plan(model, 1, 2, 2);
  {
    Trainer t(cp2dp2, std::make_shared<test::HashData>(model.vocab));
    CHECK(t.state().dp_shard == 4);  // the shard group's ranks
    CHECK(t.state().ranks.size() == 4);
  }
  check_resume(cp2dp2, {parallel_plan(model, 1, 1, 1), parallel_plan(model, 1, 1, 4), parallel_plan(model, 1, 2, 1)},
               "llama-tiny-cp2-dp2");
  check_resume(parallel_plan(model, 1, 1, 1), {cp2dp2, parallel_plan(model, 2, 2, 1)}, "llama-tiny-1rank-cp");
}

}  // namespace
}  // namespace fsdpx
