// tests/simulator/test_critical_path.cpp — simulator/critical_path.h never exceeds the engine's step time:
// on seeded random unpipelined plans (plan_generator.h) and on the shipped pipelined plans (GPipe, 1F1B,
// interleaved 1F1B, ZB-H1 on two stages; Megatron-Turing 530B's 35 stages), and it is not vacuous: within
// 10% of the step on most random plans, above half of it on the pipelined ones.
#include <doctest/doctest.h>

#include <string>

#include "core/config_paths.h"
#include "program/lower.h"
#include "simulator/critical_path.h"
#include "simulator/engine.h"
#include "simulator/op_timing.h"
#include "tests/simulator/plan_generator.h"

namespace fsdpx {
namespace {

struct Checked {
  std::int64_t path_ns, step_ns;
};

Checked check(const Plan& p) {
  StepProgram program = lower(p);
  time_program(program, p);
  const std::int64_t path = critical_path_ns(program);
  EngineOptions o;
  o.record_ops = false;
  const EngineResult run = run_engine(program, o);
  return {path, run.step_time_ns};
}

}  // namespace

TEST_CASE("critical path: below the simulated step of random plans, and near it on most") {
  test::PlanGenerator gen(36);
  int plans = 0, tight = 0;
  for (int k = 0; k < 200; ++k) {
    const Checked c = check(gen.next());
    INFO("plan " << k << ": path " << c.path_ns << " ns, step " << c.step_ns << " ns");
    CHECK(c.path_ns > 0);
    CHECK(c.path_ns <= c.step_ns);
    tight += c.path_ns >= 0.9 * double(c.step_ns);
    ++plans;
  }
  MESSAGE(plans << " random plans, " << tight << " with the path within 10% of the step");
  CHECK(tight >= plans / 2);
}

TEST_CASE("critical path: below the simulated step of pipelined plans") {
  for (const std::string name : {"llama-tiny8-pp2-dp2-1f1b", "llama-tiny8-pp2-dp2-gpipe", "llama-tiny8-pp2-dp2-interleaved_1f1b",
                                 "llama-tiny8-pp2-dp2-zero_bubble", "gpt-tiny8-pp2-1f1b", "gpt-530b-a100x2240-pp35-1f1b"}) {
    const Checked c = check(load_plan(std::string(FSDPX_TEST_DATA_DIR "/plans/") + name + ".json"));
    INFO(name << ": path " << c.path_ns << " ns, step " << c.step_ns << " ns");
    CHECK(c.path_ns > 0);
    CHECK(c.path_ns <= c.step_ns);
    CHECK(c.path_ns >= 0.5 * double(c.step_ns));
  }
}

}  // namespace fsdpx
