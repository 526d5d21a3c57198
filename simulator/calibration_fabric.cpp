// simulator/calibration_fabric.cpp — fits the intra-node fabric to measured TP/CP collectives (see
// calibration_fabric.h): a log-spaced grid over bandwidth and latency around the plan's figures,
// refined twice around the best point; deterministic.
#include "simulator/calibration_fabric.h"

#include <cmath>

#include "core/errors.h"
#include "cost_models/communication.h"
#include "program/lower.h"
#include "program/parallel_comms.h"

namespace fsdpx {

namespace {

struct Entry {
  CollectiveComparison c;
  Collective kind = Collective::all_gather;
  GroupShape shape;
};

// Serial collectives of rank 0's compute ops in one step, by the profile's names.
std::map<std::string, Entry> program_collectives(const Plan& plan) {
  const StepProgram program = lower(plan);
  std::map<std::string, Entry> out;
  for (const WorkSet* w : rank0_work_sets(program)) {
    for (const SerialCollective& sc : w->serial_comms) {
      const ProcessGroup& g = program.groups[std::size_t(sc.group)];
      const std::string name = serial_collective_name(g.kind, sc.kind, sc.bytes);
      Entry& e = out[name];
      e.c.name = name, e.c.bytes = sc.bytes, e.c.ranks = g.shape.ranks;
      e.c.calls += sc.count;
      e.kind = sc.kind, e.shape = g.shape;
    }
  }
  return out;
}

double model_s(const Entry& e, const ClusterSpec& c) {
  return e.c.calls * collective_time_s(e.kind, e.c.bytes, e.shape, c);
}

// Σ calls · (log predicted − log measured)² over the fitted entries.
double misfit(const std::vector<const Entry*>& fit, const ClusterSpec& c) {
  double sum = 0;
  for (const Entry* e : fit) {
    const double r = std::log(model_s(*e, c) / e->c.measured_s);
    sum += e->c.calls * r * r;
  }
  return sum;
}

// Grid of 2·half+1 points per figure, spaced by `step` (a factor), around the current figures.
void grid_search(const std::vector<const Entry*>& fit, ClusterSpec& c, double step, int half) {
  const IntraNodeFabric centre = c.intra;
  IntraNodeFabric best = centre;
  double best_misfit = misfit(fit, c);
  for (int i = -half; i <= half; ++i)
    for (int j = -half; j <= half; ++j) {
      c.intra.bus_bw_bytes_per_s = centre.bus_bw_bytes_per_s * std::pow(step, i);
      c.intra.latency_s = centre.latency_s * std::pow(step, j);
      const double m = misfit(fit, c);
      if (m < best_misfit) best_misfit = m, best = c.intra;
    }
  c.intra = best;
}

}  // namespace

FabricCalibration calibrate_fabric(const Plan& plan, const CollectiveProfile& profile, const std::string& origin) {
  if (profile.steps <= 0) throw ConfigError(origin + ": profile has no steps (run with --profile and --steps >= 1)");
  std::map<std::string, Entry> entries = program_collectives(plan);
  FabricCalibration cal;
  cal.intra = plan.cluster.intra;
  std::vector<const Entry*> fit;
  for (auto& [name, e] : entries) {
    if (!measured_per_step(profile, name, e.c.measured_s, e.c.measured_calls, cal.unmatched)) continue;
    e.c.predicted_s = model_s(e, plan.cluster);
    if (e.shape.nodes() == 1 && e.c.ranks > 1) fit.push_back(&e);
  }
  for (const auto& [name, t] : profile.time_s)
    if (!entries.count(name)) cal.unmatched.push_back(name + " (in the profile, not in the step program)");
  ClusterSpec c = plan.cluster;
  if (!fit.empty() && c.intra.bus_bw_bytes_per_s > 0 && c.intra.latency_s > 0) {
    for (double step : {4.0, 1.5, 1.1}) grid_search(fit, c, step, 8);
    cal.intra = c.intra;
    cal.fitted = true;
  }
  for (auto& [name, e] : entries) {
    if (e.c.measured_s <= 0) continue;
    e.c.calibrated_s = model_s(e, c);
    cal.collectives.push_back(e.c);
  }
  return cal;
}

}  // namespace fsdpx
