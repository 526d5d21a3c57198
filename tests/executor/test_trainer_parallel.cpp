// tests/executor/test_trainer_parallel.cpp — tensor and context parallelism in the Trainer.
#include <doctest/doctest.h>

#include "core/config_paths.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx {
namespace {

double max_loss_rel(const test::Trajectory& a, const test::Trajectory& b) {
  double d = 0;
  for (std::size_t s = 0; s < a.losses.size(); ++s) d = std::max(d, std::abs(a.losses[s] - b.losses[s]) / std::abs(b.losses[s]));
  return d;
}

TEST_CASE("trainer: tp 2 quick") {
  for (std::string name : {"llama-tiny", "gpt-tiny"}) {
    const ModelSpec model = load_model(name);
    test::PlanShape one;
    one.accum = 4;
    const Plan p1 = test::tiny_plan(model, one, 16);
    const int steps = 5;
    const test::Trajectory ref = test::trainer_training(p1, steps);
    for (auto [tp, dp, sp] : {std::tuple{2, 1, true}, std::tuple{2, 1, false}, std::tuple{2, 2, true}}) {
      test::PlanShape s;
      s.tp = tp, s.dp_shard = dp, s.sequence_parallel = sp, s.accum = 4 / dp;
      const Plan p = test::tiny_plan(model, s, 16);
      const test::Trajectory got = test::trainer_training(p, steps);
      {
        const ParamLayout L = make_param_layout(model);
        double worst = 0; std::size_t wi = 0;
        for (std::size_t i = 0; i < got.params.size(); ++i) { double d = std::abs(double(got.params[i]) - ref.params[i]); if (d > worst) worst = d, wi = i; }
        for (const auto& m : L.modules) if (std::int64_t(wi) >= m.offset && std::int64_t(wi) < m.offset + m.numel) {
          for (const auto& t : m.tensors) if (std::int64_t(wi) - m.offset >= t.offset && std::int64_t(wi) - m.offset < t.offset + t.numel())
            MESSAGE("worst at " << m.name << " " << t.name << " elem " << (std::int64_t(wi) - m.offset - t.offset) << " diff " << worst << " ref " << ref.params[wi] << " got " << got.params[wi]);
        }
      }
      MESSAGE(name << " tp " << tp << " dp " << dp << " sp " << sp << ": loss " << max_loss_rel(got, ref)
                   << " params " << test::max_rel_diff(got.params, ref.params));
    }
  }
}

}  // namespace
}  // namespace fsdpx
