// simulator/pipeline_window.cpp — pipeline_window.h. ends_recur: in a window that recurs, the shift maps
// the window's ops one to one onto the next window's (it is injective: an op's identity and ordinal name
// it, and ops_recur counts both windows), each P later. An op ending in (t, t + P) starts before t + P and
// ends after t, so it is in the window; one ending in (t + P, t + 2P) is in the next. So the ends in the
// first range, P later, are those in the second, in order (the records are in end order). An op in
// [t, t + 2P) starts before t + 2P and ends at or after t, so it ends in [t, t + 2P + longest op): the full
// check reads that range of the role's ops in end order, fails at the first op that does not recur, and
// sums a passing window's busy time and floor in program order, as the scan of every op did (the same
// figures to the bit).
#include "simulator/pipeline_window.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "core/errors.h"

namespace fsdpx {

PipelineProbe make_pipeline_probe(const StepProgram& p, const EngineResult& e) {
  PipelineProbe pr{p, e, 1, {}, {}, {}, {}, {}, {}, {}};
  for (const RoleProgram& role : p.roles) {
    pr.start.emplace_back(role.ops.size(), -1);
    pr.end.emplace_back(role.ops.size(), -1);
  }
  pr.by_end.resize(p.roles.size());
  pr.longest_ns.assign(p.roles.size(), 0);
  pr.samples.resize(p.roles.size());
  // The records are in (end, role, rank, op) order (engine.cpp sort_records), so each role's are in end order.
  for (const OpTiming& o : e.ops) {
    if (o.rank != 0) continue;
    const auto r = std::size_t(o.role);
    pr.start[r][std::size_t(o.op)] = o.start_ns;
    pr.end[r][std::size_t(o.op)] = o.end_ns;
    pr.by_end[r].push_back(o.op);
    pr.longest_ns[r] = std::max(pr.longest_ns[r], o.end_ns - o.start_ns);
  }
  for (std::size_t r = 0; r < p.roles.size(); ++r)
    FSDP_CHECK(pr.by_end[r].size() == p.roles[r].ops.size(), "a pipelined probe without a record of every op");
  for (const MemorySample& s : e.memory_samples)
    if (s.rank == 0) pr.samples[std::size_t(s.role)].push_back(&s);
  return pr;
}

void set_span(PipelineProbe& pr, int d) {
  pr.d = d;
  pr.shift.clear();
}

void build_shift(PipelineProbe& pr) {
  if (pr.tables.empty())
    for (const RoleProgram& role : pr.program.roles) pr.tables.emplace_back(role);
  if (pr.shift.empty())
    for (const OpShiftTable& t : pr.tables) pr.shift.push_back(t.shift(pr.d));
}

bool ends_recur(const PipelineProbe& pr, TimeNs t, TimeNs period) {
  for (std::size_t r = 0; r < pr.by_end.size(); ++r) {
    const auto& ids = pr.by_end[r];
    const auto& end = pr.end[r];
    const auto after = [&](TimeNs x) {  // the first op ending after x
      return std::partition_point(ids.begin(), ids.end(), [&](int i) { return end[std::size_t(i)] <= x; });
    };
    const auto before = [&](TimeNs x) {  // the first op ending at or after x
      return std::partition_point(ids.begin(), ids.end(), [&](int i) { return end[std::size_t(i)] < x; });
    };
    const auto a = after(t), a_end = before(t + period), b = after(t + period), b_end = before(t + 2 * period);
    if (a_end - a != b_end - b) return false;
    for (auto x = a, y = b; x != a_end; ++x, ++y)
      if (end[std::size_t(*y)] != end[std::size_t(*x)] + period) return false;
  }
  return true;
}

namespace {

bool same_effects(std::span<const MemEffect> a, std::span<const MemEffect> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const MemEffect& x, const MemEffect& y) { return x.category == y.category && x.bytes == y.bytes; });
}

int shifted(const PipelineProbe& pr, int role, int op) {
  const int s = pr.shift[std::size_t(role)][std::size_t(op)];
  return s >= 0 ? s : op;
}

bool in_window(TimeNs start, TimeNs end, TimeNs from, TimeNs to) {
  return (start >= from && start < to) || (start < from && end > from);
}

// The ops of `role` that can lie in [from, to): those ending in [from, to + its longest op), in end order.
std::span<const int> ops_near(const PipelineProbe& pr, int role, TimeNs from, TimeNs to) {
  const auto& ids = pr.by_end[std::size_t(role)];
  const auto& end = pr.end[std::size_t(role)];
  const TimeNs last = to + pr.longest_ns[std::size_t(role)];
  const auto lo = std::partition_point(ids.begin(), ids.end(), [&](int i) { return end[std::size_t(i)] < from; });
  const auto hi = std::partition_point(lo, ids.end(), [&](int i) { return end[std::size_t(i)] < last; });
  return {ids.data() + (lo - ids.begin()), std::size_t(hi - lo)};
}

// The ops of `role` in [t, t + P) recur exactly P later, as their shifts, and nothing else runs then.
bool ops_recur(const PipelineProbe& pr, int role, TimeNs t, TimeNs period, Window& w) {
  const auto& start = pr.start[std::size_t(role)];
  const auto& end = pr.end[std::size_t(role)];
  const RoleProgram& rp = pr.program.roles[std::size_t(role)];
  int in_first = 0, in_second = 0;
  std::vector<int> starting;  // ops of the first window that start in it
  for (const int i : ops_near(pr, role, t, t + 2 * period)) {
    in_second += in_window(start[std::size_t(i)], end[std::size_t(i)], t + period, t + 2 * period);
    if (!in_window(start[std::size_t(i)], end[std::size_t(i)], t, t + period)) continue;
    const int s = pr.shift[std::size_t(role)][std::size_t(i)];
    if (s < 0 || start[std::size_t(s)] != start[std::size_t(i)] + period ||
        end[std::size_t(s)] != end[std::size_t(i)] + period || !same_shifted_op(pr, role, i, s))
      return false;
    ++in_first;
    if (start[std::size_t(i)] >= t) starting.push_back(i);
  }
  if (in_first != in_second) return false;
  std::sort(starting.begin(), starting.end());  // program order: the floor's sum as before
  for (const int i : starting) {
    ++w.ops[std::size_t(role)];
    if (rp.ops[std::size_t(i)].stream != StreamKind::compute) continue;
    w.busy_ns[std::size_t(role)] += end[std::size_t(i)] - start[std::size_t(i)];
    w.floor_s[std::size_t(role)] += rp.ops[std::size_t(i)].duration_s;
  }
  return true;
}

// Live memory of `role` during [t + P, t + 2P) is that of [t, t + P), P later (to rounding of sums).
bool memory_recurs(const PipelineProbe& pr, int role, TimeNs t, TimeNs period) {
  const auto& samples = pr.samples[std::size_t(role)];
  const auto at = [&](TimeNs x) {
    return std::partition_point(samples.begin(), samples.end(), [&](const MemorySample* s) { return s->at_ns < x; });
  };
  const auto a = at(t), b = at(t + period), b_end = at(t + 2 * period);
  if (b - a != b_end - b) return false;
  for (auto x = a, y = b; x != b; ++x, ++y) {
    if ((*y)->at_ns != (*x)->at_ns + period) return false;
    for (std::size_t c = 0; c < (*x)->by_category.size(); ++c) {
      const double u = (*x)->by_category[c], v = (*y)->by_category[c];
      if (std::abs(u - v) > 1e-9 * std::max({1.0, std::abs(u), std::abs(v)})) return false;
    }
  }
  return true;
}

}  // namespace

bool same_shifted_op(const PipelineProbe& pr, int role, int a_id, int b_id) {
  const RoleProgram& rp = pr.program.roles[std::size_t(role)];
  const Op& a = rp.ops[std::size_t(a_id)];
  const Op& b = rp.ops[std::size_t(b_id)];
  if (a.kind != b.kind || a.stream != b.stream || a.work_set != b.work_set || a.collective != b.collective ||
      a.comm_bytes != b.comm_bytes || a.group != b.group || a.duration_s != b.duration_s ||
      a.latency_s != b.latency_s || a.nvlink_load != b.nvlink_load || a.nic_load != b.nic_load ||
      a.sm_share != b.sm_share || a.release_params != b.release_params || a.deps.size() != b.deps.size() ||
      (a.rendezvous < 0) != (b.rendezvous < 0) || !same_effects(a.alloc_at_start, b.alloc_at_start) ||
      !same_effects(a.free_at_end, b.free_at_end))
    return false;
  for (std::size_t k = 0; k < a.deps.size(); ++k)
    if (b.deps[k] != shifted(pr, role, a.deps[k])) return false;
  if (a.rendezvous < 0) return true;
  const auto& ma = pr.program.rendezvous[std::size_t(a.rendezvous)];
  const auto& mb = pr.program.rendezvous[std::size_t(b.rendezvous)];
  if (ma.size() != mb.size()) return false;
  for (std::size_t k = 0; k < ma.size(); ++k)
    if (mb[k].role != ma[k].role || mb[k].op != shifted(pr, ma[k].role, ma[k].op)) return false;
  return true;
}

std::optional<Window> check_window(PipelineProbe& pr, TimeNs t, TimeNs period) {
  if (!ends_recur(pr, t, period)) return std::nullopt;
  build_shift(pr);
  const std::size_t roles = pr.program.roles.size();
  Window w{t, period, std::vector<int>(roles, 0), std::vector<TimeNs>(roles, 0), std::vector<double>(roles, 0)};
  for (int r = 0; r < int(roles); ++r)
    if (!ops_recur(pr, r, t, period, w) || !memory_recurs(pr, r, t, period)) return std::nullopt;
  return w;
}

}  // namespace fsdpx
