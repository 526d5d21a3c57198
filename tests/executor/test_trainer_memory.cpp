// tests/executor/test_trainer_memory.cpp — the runtime's measured peak per memory category against the
// simulator's prediction for the same plan (simulate(plan).peak_memory_bytes). The plans are the `cpu`
// cluster's (fp32 params, unfused attention, no dropout: what the CPU backend runs), so the simulator's
// itemisation of saved activations (cost_models/activations.cpp) describes the CPU model's BlockActs
// tensor by tensor; params, gradients, optimizer state and activations must agree within 5%. Transient
// bytes are printed only: the simulator's peak overlaps prefetched all-gathers and in-flight
// reduce-scatters with a backward, which the synchronous runtime never does (docs/executor.md, Memory).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "simulator/simulate.h"
#include "tests/executor/tiny_models.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx {
namespace {

constexpr double kTolerance = 0.05;  // the done-when bound

bool checked(MemCategory c) {
  return c == MemCategory::params || c == MemCategory::grads || c == MemCategory::optimizer ||
         c == MemCategory::activations;
}

TEST_CASE("trainer: peak params, grads, optimizer and activation bytes match the simulator within 5%") {
  for (const ModelSpec& model : {test::tiny_llama(), test::tiny_gpt()})
    for (RecomputeMode recompute : {RecomputeMode::none, RecomputeMode::full})
      for (int ranks : {1, 2, 4})
        for (bool reshard : {true, false}) {
          test::PlanShape s;
          s.dp_shard = ranks, s.reshard = reshard, s.accum = 2, s.recompute = recompute;
          const Plan plan = test::tiny_plan(model, s);
          REQUIRE(plan.precision.param == DType::fp32);
          REQUIRE(plan.attention_kernel == AttentionKernel::unfused);
          Trainer trainer(plan, std::make_shared<test::HashData>(model.vocab));
          trainer.step();
          const MemoryPeakBytes got = trainer.peak_memory();
          const Simulation sim = simulate(plan);
          std::string line;
          for (MemCategory c : {MemCategory::params, MemCategory::grads, MemCategory::optimizer,
                                MemCategory::activations, MemCategory::transient}) {
            const std::string name = mem_category_name(c);
            const double predicted = sim.peak_memory_bytes[std::size_t(c)];
            const double ratio = got.at(name) / predicted;
            line += fmt::format(" {} {:.0f}/{:.0f} B = {:.3f}", name, got.at(name), predicted, ratio);
            if (checked(c)) {
              INFO(model.name << " recompute " << std::string(recompute_mode_name(recompute)) << " ranks " << ranks << " reshard "
                              << reshard << ": " << name << " runtime/simulator " << ratio << " (tolerance 5%)");
              CHECK(std::abs(ratio - 1) <= kTolerance);
            }
          }
          MESSAGE(model.name << " recompute " << std::string(recompute_mode_name(recompute)) << " ranks " << ranks << " reshard "
                             << reshard << ": runtime/simulator" << line);
        }
}

// The same plans, the executor alone: what the CPU model's buffers measure (peak_memory) against what
// the step program's memory effects say when applied in the same issue order (program_peak_memory).
// Both run the program sequentially, so only the modelling of the bytes differs, not the schedule.
TEST_CASE("trainer: measured peaks match the program's memory effects in issue order within 5%") {
  for (const ModelSpec& model : {test::tiny_llama(), test::tiny_gpt()})
    for (RecomputeMode recompute : {RecomputeMode::none, RecomputeMode::full})
      for (int ranks : {1, 4}) {
        test::PlanShape s;
        s.dp_shard = ranks, s.accum = 2, s.recompute = recompute;
        Trainer trainer(test::tiny_plan(model, s), std::make_shared<test::HashData>(model.vocab));
        trainer.step();
        const MemoryPeakBytes measured = trainer.peak_memory(), declared = trainer.program_peak_memory();
        for (MemCategory c : {MemCategory::params, MemCategory::grads, MemCategory::optimizer, MemCategory::activations}) {
          const std::string name = mem_category_name(c);
          const double ratio = measured.at(name) / declared.at(name);
          INFO(model.name << " recompute " << recompute_mode_name(recompute) << " ranks " << ranks << ": " << name
                          << " measured/program " << ratio);
          CHECK(std::abs(ratio - 1) <= kTolerance);
        }
      }
}

}  // namespace
}  // namespace fsdpx
