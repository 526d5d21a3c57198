// tests/simulator/test_calibration.cpp — calibration inverts the cost model: a synthetic profile in
// which every kernel takes k times its predicted time yields a GPU that predicts exactly those times,
// and the simulated compute time moves from the default prediction to the measured one.
#include <doctest/doctest.h>

#include <cmath>

#include "core/config_paths.h"
#include "core/errors.h"
#include "cost_models/compute.h"
#include "simulator/calibration.h"
#include "program/lower.h"
#include "simulator/simulate.h"

namespace fsdpx {
namespace {

// Per-step time of every kernel name of rank 0's program under `gpu`, times `slowdown`.
KernelProfile synthetic_profile(const Plan& plan, double slowdown, int steps) {
  const StepProgram program = lower(plan);
  KernelProfile p;
  p.steps = steps;
  for (const Op& op : program.roles.front().ops) {
    if (op.work_set < 0) continue;
    for (const KernelWork& k : program.work_sets[std::size_t(op.work_set)].kernels) {
      p.time_s[k.name] += steps * slowdown * kernel_time_s(k, plan.cluster.gpu, plan.precision.param);
      p.calls[k.name] += steps;
    }
  }
  return p;
}

// 4x slower keeps the peaks (efficiencies fall); 4x faster needs higher peaks (efficiencies > 1).
TEST_CASE("a uniformly 4x slower or faster profile calibrates to those kernel times and step compute") {
  // The shipped plan runs unfused attention (the CPU backend's); flash2 here so that the fit also covers
  // the attention curves, whose efficiencies set the 4x-faster peak.
  Plan plan = load_plan(resolve_config("plans", "llama-tiny-cpu-fsdp4"));
  plan.attention_kernel = AttentionKernel::flash2;
  for (double slowdown : {4.0, 0.25}) {
    CAPTURE(slowdown);
    const Calibration cal = calibrate_gpu(plan, synthetic_profile(plan, slowdown, 3), "synthetic");
    CHECK(cal.unmatched.empty());
    REQUIRE_FALSE(cal.kernels.empty());
    for (const KernelComparison& k : cal.kernels) {
      INFO(k.name << ": predicted " << k.predicted_s << " measured " << k.measured_s << " calibrated " << k.calibrated_s);
      CHECK(k.measured_s == doctest::Approx(slowdown * k.predicted_s).epsilon(1e-9));
      // Kernels of one name with different sizes share a curve point (their mean), hence 2% tolerance.
      CHECK(k.calibrated_s == doctest::Approx(k.measured_s).epsilon(0.02));
    }
    Plan calibrated = plan;
    calibrated.cluster.gpu = cal.gpu;
    const Simulation before = simulate(plan), after = simulate(calibrated);
    const double compute_before = before.phases[0].compute_s + before.phases[1].compute_s;
    const double compute_after = after.phases[0].compute_s + after.phases[1].compute_s;
    INFO("forward+backward compute " << compute_before << " s -> " << compute_after << " s");
    CHECK(compute_after == doctest::Approx(slowdown * compute_before).epsilon(0.02));
    if (slowdown < 1) CHECK(cal.gpu.peak(plan.precision.param) > plan.cluster.gpu.peak(plan.precision.param));
  }
}

TEST_CASE("a profile without steps or without matching kernels is an input error naming it") {
  const Plan plan = load_plan(resolve_config("plans", "llama-tiny-cpu-fsdp4"));
  KernelProfile empty;
  CHECK_THROWS_WITH_AS(calibrate_gpu(plan, empty, "p.json"), doctest::Contains("p.json"), ConfigError);
  KernelProfile other;
  other.steps = 1;
  other.time_s["no_such_kernel"] = 1.0;
  CHECK_THROWS_WITH_AS(calibrate_gpu(plan, other, "q.json"), doctest::Contains("no kernel"), ConfigError);
}

}  // namespace
}  // namespace fsdpx
