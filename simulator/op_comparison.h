// simulator/op_comparison.h — prediction against measurement, op by op: the simulated step of a plan
// joined with a measured run of the same step program by (role, op name), which both interpreters take
// from the one lowered program. Per op the simulated duration against the mean measured duration, per
// phase (forward, backward, optimizer, each collective kind, pipeline transfers) their sums, and the step
// time; rows ordered by the size of the miss. Leaves out start times: the executor runs a rank's ops in
// issue order and a collective's measured time includes waiting for its peers, so only durations compare.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "simulator/simulate.h"

namespace fsdpx {

// What a run measured, keyed by (role, op name): one duration per rank and step it was measured on.
struct OpMeasurement {
  std::string file;  // names the source in errors
  std::map<std::pair<int, std::string>, std::vector<double>> op_time_s;
  double step_time_s = 0;  // mean wall time of a step
  int steps = 0;           // steps the op times cover
  int ranks = 0;           // ranks measured
};

struct OpComparison {
  int role = 0;
  std::string name;
  OpKind kind = OpKind::forward;
  double predicted_s = 0;
  double measured_s = 0;  // mean over ranks and steps
  int samples = 0;
  double miss_s() const { return predicted_s - measured_s; }
  double error() const { return measured_s > 0 ? predicted_s / measured_s - 1 : 0; }  // relative
};

struct PhaseComparison {
  std::string phase;
  double predicted_s = 0, measured_s = 0;  // summed over the phase's ops (and pipeline stages)
  int ops = 0;
  double error() const { return measured_s > 0 ? predicted_s / measured_s - 1 : 0; }
};

struct Comparison {
  std::vector<OpComparison> ops;        // largest |miss_s| first
  std::vector<PhaseComparison> phases;  // largest |miss| first
  double predicted_step_s = 0, measured_step_s = 0;
  int roles_compared = 0;
};

// The phase an op kind's time is reported under ("forward", "backward", "optimizer", "all_gather",
// "reduce_scatter", "all_reduce", "pipeline", "free").
const char* op_phase_name(OpKind kind);

// Joins the simulation (one rank per role, the simulator's symmetry) with `m`. Throws ConfigError naming
// m.file when a measured op is not in the simulated program, or an op of a measured role was not measured.
Comparison compare_ops(const Simulation& sim, const OpMeasurement& m);

}  // namespace fsdpx
