// tests/simulator/test_op_comparison.cpp — the join of a simulated step with measured op times: a
// synthetic measurement in which every op takes k times its simulated duration (one op 10x) gives
// errors of 1/k - 1, that op first, phases summing their ops, the pipeline's stages kept apart; an op
// outside the program or one never measured is a ConfigError naming the measurement's file.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/config_paths.h"
#include "core/errors.h"
#include "simulator/op_comparison.h"

namespace fsdpx {
namespace {

// Every op of rank 0 of each role measured twice (two ranks or steps) at `slowdown` x its simulated
// time, except `slow_op` at 10x.
OpMeasurement synthetic(const Simulation& sim, double slowdown, const std::string& slow_op) {
  OpMeasurement m;
  m.file = "measured.json";
  for (const OpTiming& t : sim.engine.ops) {
    const std::string& name = sim.program.roles[std::size_t(t.role)].ops[std::size_t(t.op)].name;
    const double s = double(t.end_ns - t.start_ns) * 1e-9 * (name == slow_op ? 10.0 : slowdown);
    m.op_time_s[{t.role, name}] = {s * 0.5, s * 1.5};  // mean s
  }
  m.step_time_s = sim.step_time_s * slowdown;
  return m;
}

TEST_CASE("compare: per-op errors, the largest miss first, phases summing their ops") {
  const Simulation sim = simulate(load_plan(resolve_config("plans", "llama-tiny-cpu-fsdp4")));
  const Comparison c = compare_ops(sim, synthetic(sim, 2.0, "fwd.s1.mb0"));
  REQUIRE(c.ops.size() == sim.program.roles[0].ops.size());
  CHECK(c.ops.front().name == "fwd.s1.mb0");
  CHECK(c.ops.front().error() == doctest::Approx(0.1 - 1));
  for (std::size_t i = 1; i < c.ops.size(); ++i) {
    CHECK(std::abs(c.ops[i - 1].miss_s()) >= std::abs(c.ops[i].miss_s()));
    if (c.ops[i].predicted_s > 0) CHECK(c.ops[i].error() == doctest::Approx(-0.5));
    CHECK(c.ops[i].samples == 2);
  }
  double predicted = 0, measured = 0, phase_predicted = 0, phase_measured = 0;
  for (const OpComparison& o : c.ops) predicted += o.predicted_s, measured += o.measured_s;
  for (const PhaseComparison& p : c.phases) phase_predicted += p.predicted_s, phase_measured += p.measured_s;
  CHECK(phase_predicted == doctest::Approx(predicted));
  CHECK(phase_measured == doctest::Approx(measured));
  CHECK(c.phases.front().phase == "forward");  // holds the 10x op
  CHECK(c.measured_step_s == doctest::Approx(2 * c.predicted_step_s));
}

TEST_CASE("compare: pipeline stages join separately") {
  const Simulation sim =
      simulate(load_plan(std::string(FSDPX_TEST_DATA_DIR) + "/plans/llama-tiny8-pp2-dp2-1f1b.json"));
  REQUIRE(sim.program.roles.size() == 2);
  const Comparison c = compare_ops(sim, synthetic(sim, 1.0, ""));
  CHECK(c.roles_compared == 2);
  CHECK(c.ops.size() == sim.program.roles[0].ops.size() + sim.program.roles[1].ops.size());
  for (const OpComparison& o : c.ops) CHECK(std::abs(o.miss_s()) < 1e-12);
}

TEST_CASE("compare: unknown or unmeasured ops name the file") {
  const Simulation sim = simulate(load_plan(resolve_config("plans", "llama-tiny-cpu-fsdp4")));
  OpMeasurement extra = synthetic(sim, 1.0, "");
  extra.op_time_s[{0, "fwd.s9.mb0"}] = {1e-3};
  CHECK_THROWS_WITH_AS(compare_ops(sim, extra),
                       "measured.json: op 'fwd.s9.mb0' is not in the plan's step program (a run of another plan?)",
                       ConfigError);
  OpMeasurement missing = synthetic(sim, 1.0, "");
  missing.op_time_s.erase({0, "opt"});
  CHECK_THROWS_WITH_AS(compare_ops(sim, missing),
                       "measured.json: op 'opt' of the plan's step program was not measured (a run of another plan?)",
                       ConfigError);
  CHECK_THROWS_AS(compare_ops(sim, OpMeasurement{}), ConfigError);
}

TEST_CASE("compare: every op kind has the phase simulate counts it in") {
  CHECK(std::string(op_phase_name(OpKind::forward)) == "forward");
  CHECK(std::string(op_phase_name(OpKind::backward_weight)) == "backward");
  CHECK(std::string(op_phase_name(OpKind::unscale)) == "optimizer");  // fp16 loss scaling's pass
  CHECK(std::string(op_phase_name(OpKind::optimizer)) == "optimizer");
  CHECK(std::string(op_phase_name(OpKind::recv)) == "pipeline");
}

}  // namespace
}  // namespace fsdpx
