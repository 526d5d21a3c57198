// simulator/calibration.h — closes plan -> run -> measure -> better plan: compares the per-kernel wall
// times of a run (`fsdpx run --profile`, kernel names of cost_models/compute.h) with the cost model's
// kernel_time_s for the same kernels of the plan's step program, and derives the GPU figures that
// reproduce them: matmul efficiency by GEMM FLOPs, attention efficiency by sequence length, memory
// efficiency by bytes, scaling the peak FLOP/s or bandwidth up where measured work beats it, each both for
// the kernel class and for every measured kernel name (GpuSpec::*_by_kernel); outside the measured sizes
// each curve keeps the default's shape, anchored at the nearest measurement.
// Leaves out collectives (the fabric figures stay as they are) and per-rank variation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/plan.h"
#include "program/step_program.h"

namespace fsdpx {

// Wall times of named work of a run (kernels here, collectives in calibration_fabric.h), summed over
// `steps` steps, rank 0.
struct ProfileTimes {
  std::map<std::string, double> time_s;
  std::map<std::string, int> calls;
  int steps = 0;
};
using KernelProfile = ProfileTimes;

// The work sets of rank 0's compute ops in one step of `program`, one per op, in issue order.
std::vector<const WorkSet*> rank0_work_sets(const StepProgram& program);

// The per-step time and calls of `name` in `p`; false, with a note in `unmatched`, when the profile has
// no time for it.
bool measured_per_step(const ProfileTimes& p, const std::string& name, double& measured_s, double& measured_calls,
                       std::vector<std::string>& unmatched);

// One kernel name of the step program (rank 0), per step.
struct KernelComparison {
  std::string name;
  int calls = 0;            // in the step program
  double measured_calls = 0;  // in the profile, per step
  double flops = 0, bytes = 0;
  bool matmul = false, attention = false;
  double predicted_s = 0;   // default figures
  double measured_s = 0;
  double calibrated_s = 0;  // calibrated figures
};

struct Calibration {
  GpuSpec gpu;  // the plan's GPU with measured curves
  std::vector<KernelComparison> kernels;
  std::vector<std::string> unmatched;  // kernel names in only one of profile and program
};

// Throws ConfigError naming `origin` when the profile has no steps or no kernel of the program.
// `op_times` (the profile's per-op wall times, may be empty) measures the kernels of ops the kernel profile
// has none of (the optimizer's AdamW and gradient-norm kernels).
Calibration calibrate_gpu(const Plan& plan, const KernelProfile& profile, const std::string& origin,
                          const ProfileTimes& op_times = {});

// The plan's cluster as a cluster config whose "gpu" object carries the calibrated overrides
// (core/gpu_spec.h parse_gpu_calibration_overrides), named `name`.
nlohmann::json calibrated_cluster_json(const ClusterSpec& cluster, const GpuSpec& calibrated, const std::string& name,
                                       const std::string& source_note);

}  // namespace fsdpx
