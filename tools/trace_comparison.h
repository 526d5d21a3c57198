// tools/trace_comparison.h — `fsdpx compare --plan P --trace DIR` and `fsdpx calibrate --trace DIR`: a plan's
// simulated step beside the profiled steps of a user's own run (kineto/step_phases.h), per phase (forward,
// backward, optimizer) and per collective kind, largest misses first, with the step time and exposed
// communication; and the efficiencies that make the simulation reproduce those totals. Leaves out op-by-op
// rows (the user's run has no fsdpx op names) and per-block rows.
#pragma once

#include <string>
#include <vector>

#include "core/cluster_spec.h"
#include "core/plan.h"
#include "kineto/step_phases.h"
#include "simulator/op_comparison.h"

namespace fsdpx {

struct TraceMeasurement {
  std::string path;
  int ranks = 0;
  int steps = 0;              // profiled steps per rank
  bool host = false;          // CPU-only traces (gloo)
  MeasuredPhases mean;        // means over ranks of each rank's per-step means
};

// Reads every rank's trace under `path` and averages their phases (ConfigError naming a file without steps).
TraceMeasurement measure_traces(const std::string& path);

// Phases and step of `sim` (role 0, rank 0; busy time per phase, collectives by kind) against `m`; the
// exposed communication is one more row ("exposed_communication"). Comparison::ops stays empty.
Comparison compare_phases(const Simulation& sim, const TraceMeasurement& m);

// Calibration from a trace: compute time scales with one factor (measured / predicted forward + backward +
// optimizer), applied to the GPU's efficiency curves and vector throughput; collective time with another,
// applied to the fabrics' bus bandwidth. Efficiencies stay in their documented range (core/input_ranges.h).
struct TraceCalibration {
  double compute_factor = 1;     // measured / predicted compute time
  double collective_factor = 1;  // measured / predicted collective time (1 when either is 0)
  ClusterSpec cluster;           // the plan's cluster, calibrated
  std::vector<std::string> notes;  // clamps and what was left alone
};
TraceCalibration calibrate_from_trace(const Plan& plan, const Comparison& before);

}  // namespace fsdpx
