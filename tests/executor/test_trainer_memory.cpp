// tests/executor/test_trainer_memory.cpp — the runtime's measured peak per memory category against the
// simulator's prediction for the same plan (simulate(plan).peak_memory_bytes). Params, gradients and
// optimizer state must agree within 5%; activations and transient buffers are printed with their
// ratio, because the CPU model saves fp32 tensors and the T×T attention probabilities while the
// simulator's activation model assumes the plan's dtype and flash attention (see the report).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "simulator/simulate.h"
#include "tests/executor/tiny_models.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx {
namespace {

TEST_CASE("trainer: peak params, grads and optimizer bytes match the simulator within 5%") {
  for (const ModelSpec& model : {test::tiny_llama(), test::tiny_gpt()})
    for (int ranks : {1, 2, 4})
      for (bool reshard : {true, false}) {
        test::PlanShape s;
        s.dp_shard = ranks, s.reshard = reshard, s.accum = 2;
        const Plan plan = test::tiny_plan(model, s);
        Trainer trainer(plan, std::make_shared<test::HashData>(model.vocab));
        trainer.step();
        const MemoryPeakBytes got = trainer.peak_memory();
        const Simulation sim = simulate(plan);
        std::string line;
        for (MemCategory c : {MemCategory::params, MemCategory::grads, MemCategory::optimizer, MemCategory::activations,
                              MemCategory::transient}) {
          const std::string name = mem_category_name(c);
          const double ratio = got.at(name) / sim.peak_memory_bytes[std::size_t(c)];
          line += fmt::format(" {} {:.0f}/{:.0f} B = {:.3f}", name, got.at(name), sim.peak_memory_bytes[std::size_t(c)], ratio);
          if (c == MemCategory::params || c == MemCategory::grads || c == MemCategory::optimizer) {
            INFO(name << " runtime/simulator " << ratio << " (tolerance 5%)");
            CHECK(std::abs(ratio - 1) <= 0.05);
          }
        }
        MESSAGE(model.name << " ranks " << ranks << " reshard " << reshard << ": runtime/simulator" << line);
      }
}

}  // namespace
}  // namespace fsdpx
