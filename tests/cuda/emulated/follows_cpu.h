// tests/cuda/emulated/follows_cpu.h — the emulated-runtime tests' one check: 10 steps of a plan on the CPU
// backend and on the CUDA backend's float ranks (emulated_runs.h) from the same seed and hash tokens give
// losses within kLossTol, and the loss moves (two frozen runs would prove nothing); the tiny FSDP plan
// those checks run. Leaves out bf16.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/cuda/emulated/emulated_runs.h"
#include "tests/executor/trainer_fixtures.h"

namespace fsdpx::emulated_test {

// A tiny plan under FSDP over dp_shard ranks (prefetch 1, 16 tokens), trained kSteps steps.
inline Plan tiny_fsdp(const ModelSpec& m, int dp_shard) {
  test::PlanShape s;
  s.dp_shard = dp_shard, s.prefetch = 1;
  Plan p = test::tiny_plan(m, s, 16);
  p.optimizer.total_steps = kSteps;
  return p;
}

inline void check_follows_cpu(const Plan& plan, const std::string& what) {
  const auto data = std::make_shared<test::HashData>(plan.model.vocab);
  const std::vector<double> cpu = losses(plan, data, false);
  const std::vector<double> emu = losses(plan, data, true);
  const double d = max_abs_diff(emu, cpu);
  MESSAGE(what << ": loss " << cpu.front() << " -> " << cpu.back() << ", maxdiff emulated CUDA vs CPU " << d);
  CHECK(d <= kLossTol);
  CHECK(moved(cpu) > 100 * kLossTol);  // the steps change the loss: two frozen runs would prove nothing
}

}  // namespace fsdpx::emulated_test
