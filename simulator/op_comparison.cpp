// simulator/op_comparison.cpp — joins a simulated step with measured op durations (see op_comparison.h).
#include "simulator/op_comparison.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

namespace {

// The simulated duration of each op of rank 0 of every role, keyed like the measurement.
std::map<std::pair<int, std::string>, const OpTiming*> predicted_ops(const Simulation& sim) {
  std::map<std::pair<int, std::string>, const OpTiming*> out;
  for (const OpTiming& t : sim.engine.ops) {
    if (t.rank != 0) continue;
    const std::string& name = sim.program.roles[std::size_t(t.role)].ops[std::size_t(t.op)].name;
    const bool fresh = out.emplace(std::pair{t.role, name}, &t).second;
    FSDP_CHECK(fresh, "compare_ops: an op name repeats within a role");
  }
  return out;
}

std::string role_words(const Simulation& sim, int role) {
  return sim.program.roles.size() > 1 ? fmt::format(" of stage {}", role) : "";
}

// Every op of each measured role must have been measured, and nothing else.
void check_join(const Simulation& sim, const OpMeasurement& m,
                const std::map<std::pair<int, std::string>, const OpTiming*>& predicted) {
  std::set<int> roles;
  for (const auto& [key, times] : m.op_time_s) {
    if (!predicted.count(key))
      throw ConfigError(fmt::format("{}: op '{}'{} is not in the plan's step program (a run of another plan?)",
                                    m.file, key.second, role_words(sim, key.first)));
    roles.insert(key.first);
  }
  if (roles.empty()) throw ConfigError(fmt::format("{}: no measured ops", m.file));
  for (const auto& [key, timing] : predicted)
    if (roles.count(key.first) && !m.op_time_s.count(key))
      throw ConfigError(fmt::format("{}: op '{}'{} of the plan's step program was not measured (a run of another "
                                    "plan?)", m.file, key.second, role_words(sim, key.first)));
}

std::vector<PhaseComparison> phase_sums(const std::vector<OpComparison>& ops) {
  std::map<std::string, PhaseComparison> by_phase;
  for (const OpComparison& o : ops) {
    PhaseComparison& p = by_phase[op_phase_name(o.kind)];
    p.phase = op_phase_name(o.kind);
    p.predicted_s += o.predicted_s;
    p.measured_s += o.measured_s;
    ++p.ops;
  }
  std::vector<PhaseComparison> out;
  for (auto& [name, p] : by_phase) out.push_back(p);
  std::stable_sort(out.begin(), out.end(), [](const PhaseComparison& a, const PhaseComparison& b) {
    return std::abs(a.predicted_s - a.measured_s) > std::abs(b.predicted_s - b.measured_s);
  });
  return out;
}

}  // namespace

const char* op_phase_name(OpKind kind) {
  switch (kind) {
    case OpKind::forward: return "forward";
    case OpKind::backward:
    case OpKind::backward_input:
    case OpKind::backward_weight: return "backward";
    case OpKind::unscale:  // fp16 loss scaling's pass before the step: simulate counts it in the optimizer phase
    case OpKind::optimizer: return "optimizer";
    case OpKind::all_gather: return "all_gather";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::send:
    case OpKind::recv: return "pipeline";
    case OpKind::free: return "free";
  }
  return "?";
}

Comparison compare_ops(const Simulation& sim, const OpMeasurement& m) {
  const auto predicted = predicted_ops(sim);
  check_join(sim, m, predicted);
  Comparison c;
  std::set<int> roles;
  for (const auto& [key, times] : m.op_time_s) {
    FSDP_CHECK(!times.empty(), "compare_ops: an op without measurements");
    const OpTiming& t = *predicted.at(key);
    OpComparison o;
    o.role = key.first;
    o.name = key.second;
    o.kind = sim.program.roles[std::size_t(t.role)].ops[std::size_t(t.op)].kind;
    o.predicted_s = double(t.end_ns - t.start_ns) * 1e-9;
    o.measured_s = std::accumulate(times.begin(), times.end(), 0.0) / double(times.size());
    o.samples = int(times.size());
    c.ops.push_back(o);
    roles.insert(key.first);
  }
  std::stable_sort(c.ops.begin(), c.ops.end(), [](const OpComparison& a, const OpComparison& b) {
    return std::abs(a.miss_s()) > std::abs(b.miss_s());
  });
  c.phases = phase_sums(c.ops);
  c.predicted_step_s = sim.step_time_s;
  c.measured_step_s = m.step_time_s;
  c.roles_compared = int(roles.size());
  return c;
}

}  // namespace fsdpx
