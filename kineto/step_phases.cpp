// kineto/step_phases.cpp — attribution of a step's work to the step program's phases (see step_phases.h).
// Context lookups use merged interval sets per thread: "is time t on thread k inside an optimizer step or an
// autograd function". A GPU event belongs to the step whose annotation holds its launch, as in
// step_breakdown.cpp. Leaves out overlap within a phase: its time is the union of its work's intervals.
#include "kineto/step_phases.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "core/errors.h"
#include "kineto/intervals.h"
#include "kineto/kernel_class.h"

namespace fsdpx {

namespace {

double seconds(std::int64_t ns) { return double(ns) * 1e-9; }

bool inside(const std::vector<Interval>& disjoint, std::int64_t t) {
  auto it = std::upper_bound(disjoint.begin(), disjoint.end(), t,
                             [](std::int64_t v, const Interval& i) { return v < i.start_ns; });
  return it != disjoint.begin() && t < std::prev(it)->end_ns;
}

// Per thread: optimizer annotations and autograd functions, merged.
struct Context {
  std::unordered_map<std::int64_t, std::vector<Interval>> optimizer, autograd;
  std::int64_t loop_tid = 0;

  explicit Context(const RankTrace& t) : loop_tid(t.steps.front().tid) {
    for (const CpuEvent& c : t.cpu) {
      if (c.kind == CpuKind::annotation && c.name.starts_with("Optimizer.step#"))
        optimizer[c.tid].push_back({c.start_ns, c.end_ns()});
      else if (c.kind == CpuKind::op && c.name.starts_with("autograd::engine::evaluate_function"))
        autograd[c.tid].push_back({c.start_ns, c.end_ns()});
    }
    for (auto& [_, v] : optimizer) v = merged(std::move(v));
    for (auto& [_, v] : autograd) v = merged(std::move(v));
  }
  const char* phase(std::int64_t tid, std::int64_t t) const {
    if (auto it = optimizer.find(tid); it != optimizer.end() && inside(it->second, t)) return "optimizer";
    if (tid != loop_tid) return "backward";
    if (auto it = autograd.find(tid); it != autograd.end() && inside(it->second, t)) return "backward";
    return "forward";
  }
};

int step_of(const RankTrace& t, std::int64_t at) {
  for (std::size_t s = 0; s < t.steps.size(); ++s)
    if (t.steps[s].start_ns <= at && at < t.steps[s].end_ns()) return int(s);
  return -1;
}

struct Accumulator {
  std::map<std::string, std::vector<Interval>> busy;
  std::map<std::string, double> count;
  std::vector<Interval> compute, comm;
  void add(const std::string& phase, Interval i, bool communication) {
    busy[phase].push_back(i);
    count[phase] += 1;
    (communication ? comm : compute).push_back(i);
  }
};

void add_gpu_work(const RankTrace& t, const Context& ctx, Accumulator& acc) {
  std::unordered_map<std::int64_t, const CpuEvent*> launch;
  for (const CpuEvent& c : t.cpu)
    if (c.kind == CpuKind::launch && c.correlation >= 0) launch.emplace(c.correlation, &c);
  for (const GpuEvent& e : t.gpu) {
    const auto it = launch.find(e.correlation);
    const CpuEvent* l = it == launch.end() ? nullptr : it->second;
    if (step_of(t, l ? l->start_ns : e.start_ns) < 0) continue;
    const KernelClass k = classify_kernel(e.name);
    if (k == KernelClass::communication) acc.add(collective_kind(e), {e.start_ns, e.end_ns()}, true);
    else if (k == KernelClass::compute)
      acc.add(l ? ctx.phase(l->tid, l->start_ns) : "forward", {e.start_ns, e.end_ns()}, false);
  }
}

// Host traces (gloo): the training thread issues each collective as a c10d op ("c10d::_allgather_base_",
// "c10d::_reduce_scatter_base_", "c10d::allreduce_") and a gloo worker thread runs it, annotated "gloo:<kind>"
// (torch/csrc/distributed/c10d/ProcessGroupGloo.cpp). Workers take work in issue order, so the k-th worker
// annotation runs the k-th c10d op: the op names the collective (gloo runs a reduce-scatter as an
// all-reduce), the annotation gives its time. Compute: the thread's top-level ops less its c10d ops.
void add_host_work(const RankTrace& t, const Context& ctx, Accumulator& acc) {
  std::vector<const CpuEvent*> issued, ran;
  std::vector<Interval> top, c10d;
  std::int64_t top_end = -1;
  for (const CpuEvent& c : t.cpu) {
    if (step_of(t, c.start_ns) < 0) continue;
    if (c.kind == CpuKind::annotation && c.name.starts_with("gloo:")) ran.push_back(&c);
    if (c.tid != ctx.loop_tid || (c.kind != CpuKind::op && c.kind != CpuKind::comms)) continue;
    if (c.name.starts_with("c10d::") && c.name != "c10d::wait") {
      issued.push_back(&c);
      c10d.push_back({c.start_ns, c.end_ns()});
    }
    if (c.start_ns >= top_end) top.push_back({c.start_ns, top_end = c.end_ns()});  // later ones nest in it
  }
  const bool paired = issued.size() == ran.size();
  for (std::size_t k = 0; k < ran.size(); ++k)
    acc.add(collective_kind_of_name(paired ? issued[k]->name : ran[k]->name.substr(5)),
            {ran[k]->start_ns, ran[k]->end_ns()}, true);
  for (const Interval& i : subtracted(merged(top), merged(c10d))) acc.add(ctx.phase(ctx.loop_tid, i.start_ns), i, false);
}

}  // namespace

MeasuredPhases measured_phases(const RankTrace& t) {
  if (t.steps.empty()) throw ConfigError(fmt::format("{}: no ProfilerStep#N annotation: not a profiled step", t.file));
  MeasuredPhases m;
  m.host = t.gpu.empty();
  m.steps = int(t.steps.size());
  for (const ProfilerStep& s : t.steps) m.step_s += seconds(s.dur_ns) / m.steps;
  const Context ctx(t);
  Accumulator acc;
  m.host ? add_host_work(t, ctx, acc) : add_gpu_work(t, ctx, acc);
  for (auto& [phase, intervals] : acc.busy) {
    m.phase_s[phase] = seconds(length_ns(merged(intervals))) / m.steps;
    m.phase_count[phase] = acc.count[phase] / m.steps;
  }
  const auto comm = merged(acc.comm), compute = merged(acc.compute);
  m.exposed_communication_s = seconds(length_ns(comm) - overlap_ns(comm, compute)) / m.steps;
  return m;
}

}  // namespace fsdpx
