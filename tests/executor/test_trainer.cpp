// tests/executor/test_trainer.cpp — FSDP equivalence: the Trainer on 1–4 ranks (and HSDP 2×2), units of
// 1 and 2 blocks, reshard_after_forward on and off, prefetch 0/1/2, accumulation 1 and 3, recompute none
// and full, must follow the loss trajectory and reach the final parameters of single-rank unsharded
// training (tests/executor/trainer_fixtures.h) within a max relative difference of 1e-5 after 5 steps.
#include <doctest/doctest.h>

#include <map>
#include <utility>

#include "executor/model/init.h"
#include "tests/executor/tiny_models.h"
#include "tests/executor/trainer_fixtures.h"
#include "tests/nan_max.h"

namespace fsdpx {
namespace {

constexpr int kSteps = 5;
constexpr double kTol = 1e-5;

struct Worst {
  double loss = 0, params = 0;
};

void check_equivalent(const Plan& plan, const test::Trajectory& ref, Worst& worst) {
  const test::Trajectory got = test::trainer_training(plan, kSteps);
  REQUIRE(got.losses.size() == ref.losses.size());
  double loss_diff = 0;
  for (std::size_t s = 0; s < ref.losses.size(); ++s)
    loss_diff = ::fsdpx::test::nan_max(loss_diff, std::abs(got.losses[s] - ref.losses[s]) / std::abs(ref.losses[s]));
  const double param_diff = test::max_rel_diff(got.params, ref.params);
  std::vector<float> init(got.params.size());
  init_all(make_param_layout(plan.model), plan.training.seed, init.data());
  const double moved = test::max_rel_diff(ref.params, init);  // training must move the weights
  CHECK(moved > 100 * kTol);
  worst.loss = ::fsdpx::test::nan_max(worst.loss, loss_diff);
  worst.params = ::fsdpx::test::nan_max(worst.params, param_diff);
  INFO("loss max rel diff " << loss_diff << ", params max rel diff " << param_diff << " (tolerance " << kTol << ")");
  CHECK(loss_diff <= kTol);
  CHECK(param_diff <= kTol);
}

TEST_CASE("trainer: FSDP on 1-4 ranks equals single-rank unsharded training") {
  for (const ModelSpec& model : {test::tiny_llama(), test::tiny_gpt()}) {
    Worst worst;
    std::map<std::pair<int, std::int64_t>, test::Trajectory> refs;  // (ranks, accum) -> reference
    for (int ranks = 1; ranks <= 4; ++ranks)
      for (std::int64_t accum : {1, 3})
        for (int blocks : {1, 2})
          for (RecomputeMode rc : {RecomputeMode::none, RecomputeMode::full})
            for (bool reshard : {true, false})
              for (int prefetch : {0, 1, 2}) {
                test::PlanShape s;
                s.dp_shard = ranks, s.accum = accum, s.blocks_per_unit = blocks, s.recompute = rc;
                s.reshard = reshard, s.prefetch = prefetch;
                const Plan plan = test::tiny_plan(model, s);
                auto it = refs.find({ranks, accum});
                if (it == refs.end()) it = refs.emplace(std::make_pair(ranks, accum), test::reference_training(plan, kSteps)).first;
                INFO(model.name << " ranks " << ranks << " accum " << accum << " blocks/unit " << blocks << " reshard "
                                << reshard << " prefetch " << prefetch << " recompute " << recompute_mode_name(rc));
                check_equivalent(plan, it->second, worst);
              }
    MESSAGE(model.name << ": worst loss rel diff " << worst.loss << ", worst params rel diff " << worst.params);
  }
}

TEST_CASE("trainer: HSDP 2x2 equals single-rank unsharded training") {
  for (const ModelSpec& model : {test::tiny_llama(), test::tiny_gpt()})
    for (std::int64_t accum : {1, 3}) {
      test::PlanShape s;
      s.dp_shard = 2, s.dp_replicate = 2, s.accum = accum;
      const Plan plan = test::tiny_plan(model, s);
      Worst worst;
      INFO(model.name << " accum " << accum);
      check_equivalent(plan, test::reference_training(plan, kSteps), worst);
      MESSAGE(model.name << " HSDP 2x2 accum " << accum << ": loss rel diff " << worst.loss << ", params " << worst.params);
    }
}

TEST_CASE("trainer: shard-grad-op, DDP and ZeRO-1 equal single-rank unsharded training") {
  for (DataParallel dp : {DataParallel::fsdp_shard_grad_op, DataParallel::ddp, DataParallel::zero1})
    for (std::int64_t accum : {1, 3}) {
      test::PlanShape s;
      s.dp_shard = 3, s.accum = accum;
      Plan plan = test::tiny_plan(test::tiny_llama(), s);
      plan.parallelism.data_parallel = dp;
      if (dp == DataParallel::fsdp_shard_grad_op)
        for (PlanUnit& u : plan.units) u.reshard_after_forward = 0;
      Worst worst;
      INFO(std::string(data_parallel_name(dp)) << " accum " << accum);
      check_equivalent(plan, test::reference_training(plan, kSteps), worst);
      MESSAGE(std::string(data_parallel_name(dp)) << " accum " << accum << ": loss rel diff " << worst.loss << ", params " << worst.params);
    }
}

}  // namespace
}  // namespace fsdpx
