// simulator/calibration.cpp — measured efficiencies from a kernel profile. Inverts the roofline of
// cost_models/compute.h kernel_time_s: eff = work / (peak · t) for the bound that applies.
#include "simulator/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/cluster_spec.h"
#include "core/config_paths.h"
#include "core/errors.h"
#include "cost_models/compute.h"
#include "program/lower.h"

namespace fsdpx {

namespace {

struct Aggregate {
  KernelComparison c;
  KernelWork first;  // shape of the kernel (min_dim, attention fields)
};

// Kernels of rank 0's compute ops in one step, summed by name.
std::map<std::string, Aggregate> program_kernels(const Plan& plan) {
  const StepProgram program = lower(plan);
  std::map<std::string, Aggregate> out;
  for (const WorkSet* w : rank0_work_sets(program)) {
    for (const KernelWork& k : w->kernels) {
      auto [it, fresh] = out.try_emplace(k.name);
      Aggregate& a = it->second;
      if (fresh) a.first = k, a.c.name = k.name, a.c.matmul = k.matmul, a.c.attention = k.attention_seq > 0;
      ++a.c.calls;
      a.c.flops += k.flops;
      a.c.bytes += k.bytes;
      a.c.predicted_s += kernel_time_s(k, plan.cluster.gpu, plan.precision.param);
    }
  }
  return out;
}

// A measured point: at this work size, `ideal_s` at efficiency 1 took `measured_s`.
struct Point {
  double size, ideal_s, measured_s;
};
using Points = std::vector<Point>;

// Outside the measured sizes, the default curve's trend anchored at the nearest measurement: its points
// beyond either end, scaled by measured / default efficiency at that end. One measured sequence length
// then moves FlashAttention-2's efficiency-by-length curve (Dao 2023, arXiv:2307.08691 Fig. 4-6: longer
// sequences run closer to the peak) to the kernel's level instead of flattening it into a constant.
void extend_with_prior(EfficiencyCurve& c, const EfficiencyCurve& prior) {
  if (prior.points.empty() || c.points.empty()) return;
  const auto [lo_size, lo_eff] = c.points.front();
  const auto [hi_size, hi_eff] = c.points.back();
  const double lo_ratio = lo_eff / prior.at(lo_size), hi_ratio = hi_eff / prior.at(hi_size);
  std::vector<std::pair<double, double>> below, above;
  for (const auto& [size, eff] : prior.points) {
    if (size < lo_size) below.emplace_back(size, std::clamp(eff * lo_ratio, 1e-6, 1.0));
    if (size > hi_size) above.emplace_back(size, std::clamp(eff * hi_ratio, 1e-6, 1.0));
  }
  c.points.insert(c.points.begin(), below.begin(), below.end());
  c.points.insert(c.points.end(), above.begin(), above.end());
}

// Efficiency curve through the points, sorted by size; points of equal size (the forward, dx and dw
// GEMMs of one layer) merge by summing times, so the curve reproduces their total time (a harmonic
// mean of their efficiencies). Efficiencies are divided by `scale` and clamped to (0, 1]; `shape` extends
// the curve beyond them (extend_with_prior); without points, `fallback`.
EfficiencyCurve make_curve(Points pts, double scale, const EfficiencyCurve& fallback, const EfficiencyCurve& shape) {
  if (pts.empty()) return fallback;
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.size < b.size; });
  Points merged;
  for (const Point& p : pts) {
    if (!merged.empty() && p.size <= merged.back().size * (1 + 1e-9)) {
      merged.back().ideal_s += p.ideal_s;
      merged.back().measured_s += p.measured_s;
    } else {
      merged.push_back(p);
    }
  }
  EfficiencyCurve c;
  for (const Point& p : merged) c.points.emplace_back(p.size, std::clamp(p.ideal_s / p.measured_s / scale, 1e-6, 1.0));
  extend_with_prior(c, shape);
  return c;
}

double max_eff(const Points& a, const Points& b = {}) {
  double m = 0;
  for (const auto& p : a) m = std::max(m, p.ideal_s / p.measured_s);
  for (const auto& p : b) m = std::max(m, p.ideal_s / p.measured_s);
  return m;
}

struct Measured {
  Points matmul, attn_fwd, attn_bwd, memory;
  // The same points by kernel name: each measured kernel gets its own curve (GpuSpec::*_by_kernel).
  std::map<std::string, Points> matmul_named, attention_named, memory_named;
  std::map<std::string, bool> attention_backward;  // of the attention names
  double vector_flops_per_s = 0;
};

void add_point(const Aggregate& a, const GpuSpec& gpu, DType dt, Measured& m) {
  const KernelComparison& c = a.c;
  const double t = c.measured_s;
  if (c.matmul && c.flops > 0) {
    const double ideal_s = c.flops / gpu.peak(dt);  // at efficiency 1
    if (c.attention) {
      const Point p{a.first.attention_seq, ideal_s / a.first.attention_relative_speed, t};
      (a.first.attention_backward ? m.attn_bwd : m.attn_fwd).push_back(p);
      m.attention_named[c.name].push_back(p);
      m.attention_backward[c.name] = a.first.attention_backward;
    } else {
      const Point p{gemm_executed_flops(c.flops / c.calls, a.first.min_dim, gpu),
                    ideal_s / gemm_shape_factor(a.first.min_dim, gpu), t};
      m.matmul.push_back(p);
      m.matmul_named[c.name].push_back(p);
    }
    return;
  }
  // Vector work: roofline max(flops / vector peak, bytes / (bw · eff)). Raise the vector peak if the
  // measured time beats it, then attribute the time to memory.
  if (c.flops > 0) m.vector_flops_per_s = std::max(m.vector_flops_per_s, c.flops / t);
  if (c.bytes > 0) {
    const Point p{c.bytes / c.calls, c.bytes / gpu.hbm_bw_bytes_per_s, t};
    m.memory.push_back(p);
    m.memory_named[c.name].push_back(p);
  }
}

// The curves whose shape a calibration keeps outside the measured sizes: the shipped GPU's of that name
// (configs/gpus), not a plan's GPU that an earlier calibration already bent through its own points.
GpuSpec shape_prior(const GpuSpec& base) {
  try {
    return load_gpu(base.name);
  } catch (const ConfigError&) {
    return base;  // a GPU defined inline, not shipped: its own curves
  }
}

GpuSpec fit_gpu(const GpuSpec& base, const Measured& m) {
  const GpuSpec prior = shape_prior(base);
  GpuSpec g = base;
  const double flop_scale = std::max({1.0, max_eff(m.matmul, m.attn_fwd), max_eff(m.attn_bwd)});
  for (auto& [dt, peak] : g.peak_flops_per_s) peak *= flop_scale;
  g.matmul_efficiency = make_curve(m.matmul, flop_scale, base.matmul_efficiency, prior.matmul_efficiency);
  if (!m.matmul.empty()) g.matmul_sustained_efficiency = 0, g.fp8_matmul_sustained_efficiency = 0;  // rate as it ran
  g.attention_efficiency = make_curve(m.attn_fwd, flop_scale, base.attention_efficiency, prior.attention_efficiency);
  g.attention_backward_efficiency =
      make_curve(m.attn_bwd, flop_scale, base.attention_backward_efficiency, prior.attention_backward_efficiency);
  const double bw_scale = std::max(1.0, max_eff(m.memory));
  g.hbm_bw_bytes_per_s *= bw_scale;
  g.memory_efficiency = make_curve(m.memory, bw_scale, base.memory_efficiency, prior.memory_efficiency);
  g.vector_flops_per_s = std::max(base.vector_flops_per_s, m.vector_flops_per_s);
  // Each kernel's own curve, the default class curve's shape outside its sizes: a kernel's measured efficiency
  // carries to the same kernel at another batch or length better than the class curve through other kernels'
  // points does (two profiles of llama3.2-1b on an H200: docs/performance.md, issue 29).
  for (const auto& [name, pts] : m.matmul_named)
    g.matmul_by_kernel[name] = make_curve(pts, flop_scale, prior.matmul_efficiency, prior.matmul_efficiency);
  for (const auto& [name, pts] : m.memory_named)
    g.memory_by_kernel[name] = make_curve(pts, bw_scale, prior.memory_efficiency, prior.memory_efficiency);
  for (const auto& [name, pts] : m.attention_named) {
    const EfficiencyCurve& shape =
        m.attention_backward.at(name) ? prior.attention_backward_efficiency : prior.attention_efficiency;
    g.attention_by_kernel[name] = make_curve(pts, flop_scale, shape, shape);
  }
  return g;
}

// Kernels the backend does not time one by one (the CUDA and CPU backends time the model's kernels, not
// the optimizer's) but whose op it times: an op of rank 0 whose kernels are all missing from the kernel
// profile and whose wall time is in `op_times` gives them that time, shared by their predicted times.
// A kernel is measured so only when every op running it was; its note leaves `missing` then.
void attribute_op_times(const Plan& plan, const ProfileTimes& op_times, std::map<std::string, Aggregate>& kernels,
                        std::vector<std::string>& missing) {
  if (op_times.steps <= 0 || op_times.time_s.empty()) return;
  const StepProgram program = lower(plan);
  std::map<std::string, double> from_ops_s;  // kernel name -> per-step time from its ops
  std::map<std::string, int> unmeasured_ops;  // kernel name -> ops running it without a time
  for (const Op& op : program.roles.front().ops) {
    if (op.work_set < 0) continue;
    const auto& ks = program.work_sets[std::size_t(op.work_set)].kernels;
    const bool all_missing = std::all_of(ks.begin(), ks.end(), [&](const KernelWork& k) {
      return kernels.at(k.name).c.measured_s <= 0;
    });
    const auto t = op_times.time_s.find(op.name);
    double predicted_s = 0;
    for (const KernelWork& k : ks) predicted_s += kernel_time_s(k, plan.cluster.gpu, plan.precision.param);
    if (!all_missing || t == op_times.time_s.end() || !(t->second > 0) || !(predicted_s > 0)) {
      for (const KernelWork& k : ks) ++unmeasured_ops[k.name];
      continue;
    }
    for (const KernelWork& k : ks)
      from_ops_s[k.name] += t->second / op_times.steps * kernel_time_s(k, plan.cluster.gpu, plan.precision.param) /
                            predicted_s;
  }
  for (const auto& [name, time_s] : from_ops_s) {
    if (unmeasured_ops[name] > 0) continue;
    Aggregate& a = kernels.at(name);
    a.c.measured_s = time_s, a.c.measured_calls = a.c.calls;
    const std::string prefix = name + " (";
    std::erase_if(missing, [&](const std::string& note) { return note.rfind(prefix, 0) == 0; });
  }
}

}  // namespace

std::vector<const WorkSet*> rank0_work_sets(const StepProgram& program) {
  std::vector<const WorkSet*> out;
  for (const Op& op : program.roles.front().ops)
    if (op.work_set >= 0) out.push_back(&program.work_sets[std::size_t(op.work_set)]);
  return out;
}

bool measured_per_step(const ProfileTimes& p, const std::string& name, double& measured_s, double& measured_calls,
                       std::vector<std::string>& unmatched) {
  const auto t = p.time_s.find(name);
  if (t == p.time_s.end() || !(t->second > 0)) {
    unmatched.push_back(name + " (in the step program, not in the profile)");
    return false;
  }
  measured_s = t->second / p.steps;
  const auto calls = p.calls.find(name);
  measured_calls = calls == p.calls.end() ? 0 : double(calls->second) / p.steps;
  return true;
}

Calibration calibrate_gpu(const Plan& plan, const KernelProfile& profile, const std::string& origin,
                          const ProfileTimes& op_times) {
  if (profile.steps <= 0) throw ConfigError(origin + ": profile has no steps (run with --profile and --steps >= 1)");
  std::map<std::string, Aggregate> kernels = program_kernels(plan);
  Calibration cal;
  Measured m;
  std::vector<std::string> missing;
  for (auto& [name, a] : kernels)
    measured_per_step(profile, name, a.c.measured_s, a.c.measured_calls, missing);
  attribute_op_times(plan, op_times, kernels, missing);
  for (const std::string& note : missing) cal.unmatched.push_back(note);
  for (auto& [name, a] : kernels)
    if (a.c.measured_s > 0) add_point(a, plan.cluster.gpu, plan.precision.param, m);
  for (const auto& [name, t] : profile.time_s)
    if (!kernels.count(name)) cal.unmatched.push_back(name + " (in the profile, not in the step program)");
  if (m.matmul.empty() && m.memory.empty() && m.attn_fwd.empty() && m.attn_bwd.empty())
    throw ConfigError(origin + ": no kernel of the profile matches the plan's step program");
  cal.gpu = fit_gpu(plan.cluster.gpu, m);
  for (auto& [name, a] : kernels) {
    if (a.c.measured_s <= 0) continue;
    KernelWork k = a.first;  // the average call, as the curve points were placed
    k.flops = a.c.flops / a.c.calls, k.bytes = a.c.bytes / a.c.calls;
    a.c.calibrated_s = a.c.calls * kernel_time_s(k, cal.gpu, plan.precision.param);
    cal.kernels.push_back(a.c);
  }
  return cal;
}

nlohmann::json calibrated_cluster_json(const ClusterSpec& cluster, const GpuSpec& calibrated, const std::string& name,
                                       const std::string& source_note) {
  ClusterSpec c = cluster;
  c.name = name;
  c.gpu = calibrated;
  nlohmann::json j = cluster_spec_to_json(c);
  const nlohmann::json full = gpu_spec_to_json(calibrated);
  for (const char* key : {"vector_tflops", "matmul_efficiency", "memory_efficiency", "attention_efficiency",
                          "attention_backward_efficiency"})
    j["gpu"][key] = full.at(key);
  if (full.contains("kernel_efficiency")) j["gpu"]["kernel_efficiency"] = full.at("kernel_efficiency");
  j["sources"] = {{"gpu", source_note}};
  return j;
}

}  // namespace fsdpx
