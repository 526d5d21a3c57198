// tests/simulator/test_calibration.cpp — calibration inverts the cost model: a synthetic profile in
// which every kernel takes k times its predicted time yields a GPU that predicts exactly those times,
// and the simulated compute time moves from the default prediction to the measured one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/config_paths.h"
#include "core/errors.h"
#include "core/gpu_spec.h"
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

// Without the optimizer's kernels in the kernel profile (the backends time the model's kernels), the ops
// that run only them give their wall time: AdamW calibrates to the "opt" op's measured time.
TEST_CASE("kernels missing from the kernel profile take the wall time of the ops that run only them") {
  const Plan plan = load_plan(resolve_config("plans", "llama-tiny-cpu-fsdp4"));
  KernelProfile kernels = synthetic_profile(plan, 2.0, 3);
  // Every kernel of the "opt" op leaves the kernel profile (AdamW and, where the plan clips, the norm's).
  const StepProgram program = lower(plan);
  const auto opt = std::find_if(program.roles.front().ops.begin(), program.roles.front().ops.end(),
                                [](const Op& op) { return op.name == "opt"; });
  REQUIRE(opt != program.roles.front().ops.end());
  double opt_predicted_s = 0;
  for (const KernelWork& k : program.work_sets[std::size_t(opt->work_set)].kernels) {
    opt_predicted_s += kernel_time_s(k, plan.cluster.gpu, plan.precision.param);
    kernels.time_s.erase(k.name), kernels.calls.erase(k.name);
  }
  const double adamw_share = [&] {
    for (const KernelWork& k : program.work_sets[std::size_t(opt->work_set)].kernels)
      if (k.name == "adamw") return kernel_time_s(k, plan.cluster.gpu, plan.precision.param) / opt_predicted_s;
    return 0.0;
  }();
  REQUIRE(adamw_share > 0);
  const Calibration without = calibrate_gpu(plan, kernels, "p.json");
  const auto note = std::find_if(without.unmatched.begin(), without.unmatched.end(),
                                 [](const std::string& u) { return u.rfind("adamw (", 0) == 0; });
  CHECK(note != without.unmatched.end());
  ProfileTimes ops;
  ops.steps = 3;
  ops.time_s["opt"] = 3 * 5.0 * opt_predicted_s;  // the op ran 5x its predicted time
  const Calibration with = calibrate_gpu(plan, kernels, "p.json", ops);
  CHECK(std::none_of(with.unmatched.begin(), with.unmatched.end(),
                     [](const std::string& u) { return u.rfind("adamw (", 0) == 0; }));
  const auto adamw = std::find_if(with.kernels.begin(), with.kernels.end(),
                                  [](const KernelComparison& k) { return k.name == "adamw"; });
  REQUIRE(adamw != with.kernels.end());
  CHECK(adamw->measured_s == doctest::Approx(5.0 * adamw_share * opt_predicted_s).epsilon(1e-9));
  CHECK(adamw->calibrated_s == doctest::Approx(adamw->measured_s).epsilon(0.02));
  // An op that also runs measured kernels gives nothing: "fwd..." ops are not timed into their kernels.
  ProfileTimes fwd_only;
  fwd_only.steps = 3;
  fwd_only.time_s["no_such_op"] = 1.0;
  const Calibration none = calibrate_gpu(plan, kernels, "p.json", fwd_only);
  CHECK(std::any_of(none.unmatched.begin(), none.unmatched.end(),
                    [](const std::string& u) { return u.rfind("adamw (", 0) == 0; }));
}

// Kernels of one class at one size but of different speeds (a GEMM whose cuBLASLt algorithm is slow beside
// others of the same FLOPs) each keep their own time: the class curve alone would give them their mean.
TEST_CASE("every measured kernel gets its own curve, kept through the cluster JSON") {
  const Plan plan = load_plan(resolve_config("plans", "llama-tiny-cpu-fsdp4"));
  KernelProfile p = synthetic_profile(plan, 2.0, 3);
  p.time_s.at("qkv") *= 3.0;  // 6x its prediction; every other kernel 2x
  const Calibration cal = calibrate_gpu(plan, p, "p.json");
  REQUIRE(cal.gpu.matmul_by_kernel.count("qkv") == 1);
  REQUIRE(cal.gpu.memory_by_kernel.count("attn_norm") == 1);
  for (const KernelComparison& k : cal.kernels) {
    INFO(k.name << ": measured " << k.measured_s << " calibrated " << k.calibrated_s);
    CHECK(k.calibrated_s == doctest::Approx(k.measured_s).epsilon(0.02));
  }
  // The calibrated cluster file carries the curves, and a plan's GPU written and read back keeps them.
  const nlohmann::json cluster = calibrated_cluster_json(plan.cluster, cal.gpu, "c", "test");
  REQUIRE(cluster.at("gpu").contains("kernel_efficiency"));
  const GpuSpec back = parse_gpu_spec(gpu_spec_to_json(cal.gpu), "gpu.json");
  REQUIRE(back.matmul_by_kernel.size() == cal.gpu.matmul_by_kernel.size());
  const EfficiencyCurve& a = cal.gpu.matmul_by_kernel.at("qkv");
  const EfficiencyCurve& b = back.matmul_by_kernel.at("qkv");
  REQUIRE(a.points.size() == b.points.size());
  for (std::size_t i = 0; i < a.points.size(); ++i) {
    CHECK(b.points[i].first == doctest::Approx(a.points[i].first).epsilon(1e-12));
    CHECK(b.points[i].second == doctest::Approx(a.points[i].second).epsilon(1e-12));
  }
  CHECK(back.memory_by_kernel.size() == cal.gpu.memory_by_kernel.size());
}

// One measured attention length scales the default curve (FlashAttention-2's, efficiency rising with the
// length) to the measured level instead of flattening it: the calibrated efficiency at another length
// keeps the default's ratio to the measured one.
TEST_CASE("outside the measured sizes a calibrated curve keeps the default's shape") {
  Plan plan = load_plan(resolve_config("plans", "llama-tiny-cpu-fsdp4"));
  plan.attention_kernel = AttentionKernel::flash2;
  // A default curve rising with the length, as FlashAttention-2's (the CPU cluster's is flat), on a GPU that
  // configs/gpus does not ship (a shipped one's name would give the shipped curve's shape).
  plan.cluster.gpu.attention_efficiency.points = {{32, 0.1}, {128, 0.2}, {512, 0.3}, {2048, 0.35}};
  plan.cluster.gpu.name = "not-a-shipped-gpu";
  const Calibration cal = calibrate_gpu(plan, synthetic_profile(plan, 3.0, 2), "synthetic");
  const EfficiencyCurve& before = plan.cluster.gpu.attention_efficiency;
  const EfficiencyCurve& after = cal.gpu.attention_efficiency;
  const double seq = double(plan.training.seq), longer = 16 * seq, shorter = seq / 4;
  REQUIRE(before.at(longer) > before.at(seq));  // the default rises with the length (else nothing to test)
  CHECK(after.at(longer) / after.at(seq) == doctest::Approx(before.at(longer) / before.at(seq)).epsilon(1e-6));
  CHECK(after.at(shorter) / after.at(seq) == doctest::Approx(before.at(shorter) / before.at(seq)).epsilon(1e-6));
  CHECK(after.at(seq) == doctest::Approx(before.at(seq) / 3.0).epsilon(0.02));
}

}  // namespace
}  // namespace fsdpx
