// kineto/step_breakdown.cpp — whole-trace figures follow HTA's filter: with two or more ProfilerStep
// annotations, only GPU events launched (runtime call with the same correlation id) before the last step
// starts are kept, since the last step is often cut short by the profiler's window. Per step, a GPU event
// belongs to the step whose annotation holds its launch (its own start when the launch is not recorded).
// Leaves out GPU events on no stream (synchronisation markers), which HTA also leaves out.
#include "kineto/step_breakdown.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "kineto/intervals.h"
#include "kineto/kernel_class.h"

namespace fsdpx {

namespace {

double seconds(std::int64_t ns) { return double(ns) * 1e-9; }

// Bytes per element of the profiler's dtype names (c10 ScalarType names).
double dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, double> sizes{
      {"Float", 4}, {"Double", 8}, {"Half", 2}, {"BFloat16", 2}, {"Int", 4}, {"Long", 8}, {"Short", 2},
      {"Char", 1}, {"Byte", 1}, {"Bool", 1}, {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

double message_bytes(const NcclArgs& n) {
  return double(std::max(n.in_nelems, n.out_nelems)) * dtype_bytes(n.dtype);
}

std::vector<CollectiveTime> collective_times(const std::vector<const GpuEvent*>& comm) {
  std::map<std::pair<std::string, std::string>, CollectiveTime> by_key;
  for (const GpuEvent* e : comm) {
    const std::string group = e->nccl ? (e->nccl->pg_desc.empty() ? e->nccl->pg_name : e->nccl->pg_desc) : "";
    CollectiveTime& c = by_key[{collective_kind(*e), group}];
    c.kind = collective_kind(*e);
    c.group = group;
    c.count += 1;
    c.time_s += seconds(e->dur_ns);
    if (e->nccl) c.bytes += message_bytes(*e->nccl);
  }
  std::vector<CollectiveTime> out;
  for (auto& [_, c] : by_key) out.push_back(c);
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.time_s > b.time_s; });
  return out;
}

}  // namespace

TimeBreakdown time_breakdown(const std::vector<const GpuEvent*>& events) {
  TimeBreakdown b;
  std::vector<Interval> all, compute, comm, memory;
  std::vector<const GpuEvent*> comm_events;
  for (const GpuEvent* e : events) {
    const Interval i{e->start_ns, e->end_ns()};
    all.push_back(i);
    switch (classify_kernel(e->name)) {
      case KernelClass::compute: compute.push_back(i); b.compute_kernel_sum_s += seconds(e->dur_ns); break;
      case KernelClass::communication:
        comm.push_back(i), comm_events.push_back(e), b.communication_kernel_sum_s += seconds(e->dur_ns);
        break;
      case KernelClass::memory: memory.push_back(i); b.memory_kernel_sum_s += seconds(e->dur_ns); break;
      case KernelClass::other: break;
    }
  }
  b.events = int(events.size());
  if (events.empty()) return b;
  const auto busy = merged(all), compute_u = merged(compute), comm_u = merged(comm);
  b.span_s = seconds(busy.back().end_ns - busy.front().start_ns);
  b.idle_s = b.span_s - seconds(length_ns(busy));
  b.compute_s = seconds(length_ns(compute_u));
  b.communication_s = seconds(length_ns(comm_u));
  b.exposed_communication_s = b.communication_s - seconds(overlap_ns(comm_u, compute_u));
  b.memory_s = seconds(length_ns(merged(memory)));
  b.collectives = collective_times(comm_events);
  return b;
}

RankBreakdown rank_breakdown(const RankTrace& t) {
  RankBreakdown r;
  r.rank = t.rank;
  r.file = t.file;
  std::unordered_map<std::int64_t, std::int64_t> launch_ns;  // correlation -> launch start
  for (const CpuEvent& c : t.cpu)
    if (c.kind == CpuKind::launch && c.correlation >= 0) launch_ns.emplace(c.correlation, c.start_ns);
  r.last_step_excluded = t.steps.size() >= 2;
  const std::int64_t last_start = r.last_step_excluded ? t.steps.back().start_ns : 0;
  std::vector<const GpuEvent*> whole;
  std::vector<std::vector<const GpuEvent*>> per_step(t.steps.size());
  for (const GpuEvent& e : t.gpu) {
    const auto it = launch_ns.find(e.correlation);
    if (!r.last_step_excluded || (it != launch_ns.end() && it->second < last_start)) whole.push_back(&e);
    const std::int64_t at = it != launch_ns.end() ? it->second : e.start_ns;
    for (std::size_t s = 0; s < t.steps.size(); ++s)
      if (t.steps[s].start_ns <= at && at < t.steps[s].end_ns()) per_step[s].push_back(&e);
  }
  r.whole = time_breakdown(whole);
  for (std::size_t s = 0; s < t.steps.size(); ++s)
    r.steps.push_back({t.steps[s].number, seconds(t.steps[s].dur_ns), time_breakdown(per_step[s])});
  return r;
}

}  // namespace fsdpx
