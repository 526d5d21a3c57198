// tools/trace_comparison.cpp — the join of a simulated step with a user's profiled steps by phase name
// (simulator/op_comparison.h op_phase_name: the measured side uses the same names, kineto/step_phases.h),
// and the two-factor calibration. The factors are plain ratios of time: compute time in the cost model is
// work / (peak x efficiency) (cost_models/compute.h), so dividing every efficiency by the factor multiplies
// every kernel's time by it, up to the range clamps; a collective's bandwidth term likewise with bus bandwidth.
#include "tools/trace_comparison.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/input_ranges.h"
#include "kineto/kineto_trace.h"

namespace fsdpx {

namespace {

bool is_compute_phase(const std::string& p) { return p == "forward" || p == "backward" || p == "optimizer"; }

double sum_of(const std::vector<PhaseComparison>& phases, bool compute, bool measured) {
  double s = 0;
  for (const PhaseComparison& p : phases)
    if (p.phase != "exposed_communication" && is_compute_phase(p.phase) == compute)
      s += measured ? p.measured_s : p.predicted_s;
  return s;
}

// Scales a curve's efficiencies by 1/factor within the documented range; notes when a point was clamped.
void scale_curve(EfficiencyCurve& c, double factor, const char* name, std::vector<std::string>& notes) {
  bool clamped = false;
  for (auto& [size, eff] : c.points) {
    const double want = eff / factor;
    eff = std::clamp(want, input_range::kEfficiency.min, input_range::kEfficiency.max);
    clamped = clamped || eff != want;
  }
  if (clamped) notes.push_back(fmt::format("{}: clamped to [{}, {}]", name, input_range::kEfficiency.min,
                                           input_range::kEfficiency.max));
}

}  // namespace

TraceMeasurement measure_traces(const std::string& path) {
  TraceMeasurement m;
  m.path = path;
  const std::vector<RankTrace> ranks = read_kineto_traces(path);
  m.ranks = int(ranks.size());
  for (const RankTrace& t : ranks) {
    const MeasuredPhases p = measured_phases(t);
    const double w = 1.0 / double(ranks.size());
    m.steps = p.steps;
    m.host = p.host;
    m.mean.step_s += w * p.step_s;
    m.mean.exposed_communication_s += w * p.exposed_communication_s;
    for (const auto& [phase, s] : p.phase_s) m.mean.phase_s[phase] += w * s;
    for (const auto& [phase, n] : p.phase_count) m.mean.phase_count[phase] += w * n;
  }
  m.mean.host = m.host;
  m.mean.steps = m.steps;
  return m;
}

Comparison compare_phases(const Simulation& sim, const TraceMeasurement& m) {
  std::map<std::string, PhaseComparison> by_phase;
  for (const OpTiming& t : sim.engine.ops) {
    if (t.role != 0 || t.rank != 0) continue;
    const std::string phase = op_phase_name(sim.program.roles[0].ops[std::size_t(t.op)].kind);
    if (phase == "free" || phase == "pipeline") continue;
    PhaseComparison& p = by_phase[phase];
    p.phase = phase;
    p.predicted_s += double(t.end_ns - t.start_ns) * 1e-9;
    ++p.ops;
  }
  for (const auto& [phase, s] : m.mean.phase_s) {
    by_phase[phase].phase = phase;
    by_phase[phase].measured_s = s;
  }
  by_phase["exposed_communication"] = {"exposed_communication", sim.exposed_comm_s, m.mean.exposed_communication_s, 0};
  Comparison c;
  for (auto& [_, p] : by_phase) c.phases.push_back(p);
  std::stable_sort(c.phases.begin(), c.phases.end(), [](const PhaseComparison& a, const PhaseComparison& b) {
    return std::abs(a.predicted_s - a.measured_s) > std::abs(b.predicted_s - b.measured_s);
  });
  c.predicted_step_s = sim.step_time_s;
  c.measured_step_s = m.mean.step_s;
  c.roles_compared = 1;
  return c;
}

TraceCalibration calibrate_from_trace(const Plan& plan, const Comparison& before) {
  TraceCalibration cal;
  cal.cluster = plan.cluster;
  const double pc = sum_of(before.phases, true, false), mc = sum_of(before.phases, true, true);
  const double pn = sum_of(before.phases, false, false), mn = sum_of(before.phases, false, true);
  if (pc > 0 && mc > 0) cal.compute_factor = mc / pc;
  else cal.notes.push_back("compute: nothing measured or predicted; efficiencies left as they are");
  if (pn > 0 && mn > 0) cal.collective_factor = mn / pn;
  else cal.notes.push_back("collectives: nothing measured or predicted; fabric left as it is");
  GpuSpec& g = cal.cluster.gpu;
  scale_curve(g.matmul_efficiency, cal.compute_factor, "matmul_efficiency", cal.notes);
  scale_curve(g.memory_efficiency, cal.compute_factor, "memory_efficiency", cal.notes);
  scale_curve(g.attention_efficiency, cal.compute_factor, "attention_efficiency", cal.notes);
  scale_curve(g.attention_backward_efficiency, cal.compute_factor, "attention_backward_efficiency", cal.notes);
  g.vector_flops_per_s /= cal.compute_factor;
  cal.cluster.intra.bus_bw_bytes_per_s /= cal.collective_factor;
  cal.cluster.intra.latency_s *= cal.collective_factor;
  cal.cluster.inter.nic_bw_bytes_per_s /= cal.collective_factor;
  cal.cluster.inter.latency_s *= cal.collective_factor;
  return cal;
}

}  // namespace fsdpx
