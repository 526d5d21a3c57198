// simulator/calibration_fabric.h — calibrates the intra-node fabric (bus bandwidth and per-step latency,
// core/cluster_spec.h IntraNodeFabric) from the measured tensor- and context-parallel collectives of a
// run (`fsdpx run --profile`, named by executor/runtime/model_groups.h collective_profile_name): finds
// the two figures for which the communication model (cost_models/communication.h, NCCL's ring/tree
// latency + bandwidth terms) reproduces the measured times best, in log space, weighted by calls.
// Leaves out groups that span nodes (the inter-node fabric stays as it is) and the data-parallel
// collectives, which overlap compute and are timed per op, not per transfer.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/plan.h"
#include "simulator/calibration.h"

namespace fsdpx {

using CollectiveProfile = ProfileTimes;  // named by collective_profile_name

// One collective (group axis, kind, bytes) of the step program on rank 0, per step.
struct CollectiveComparison {
  std::string name;  // e.g. "tp.all_gather.16384B"
  int calls = 0;     // in the step program
  double measured_calls = 0;
  double bytes = 0;
  int ranks = 0;
  double predicted_s = 0, measured_s = 0, calibrated_s = 0;  // all calls of a step
};

struct FabricCalibration {
  IntraNodeFabric intra;  // the fitted figures (the plan's own when nothing matched)
  std::vector<CollectiveComparison> collectives;
  std::vector<std::string> unmatched;
  bool fitted = false;
};

// The program's TP/CP collectives matched by name against the profile; throws ConfigError naming
// `origin` for a profile without steps.
FabricCalibration calibrate_fabric(const Plan& plan, const CollectiveProfile& profile, const std::string& origin);

}  // namespace fsdpx
