// simulator/shared_prefix.cpp — shared_prefix.h. Why the time is exact: the engine is causal and
// deterministic (engine.cpp: at each event time it ends phases, then starts ready ops in a fixed order),
// and an op starts only when it heads its stream (every op before it on the stream has ended) and its
// dependencies have ended. Up to a time at which only shared ops have started, the two runs hold the same
// state at every event: shared ops read the same data, wait on the same dependencies and rendezvous
// partners. An op past its stream's shared prefix (in either program) can start only once the prefix's
// last op has ended and so have its dependencies; a dependency that is not shared cannot end before such
// an op starts. So no op past a prefix starts before the earliest of those times, and before it the runs
// do not differ.
#include "simulator/shared_prefix.h"

#include <algorithm>
#include <limits>
#include <span>

#include "core/errors.h"

namespace fsdpx::engine_detail {

namespace {

constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

bool same_effects(std::span<const MemEffect> x, std::span<const MemEffect> y) {
  return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const MemEffect& p, const MemEffect& q) {
    return p.category == q.category && p.bytes == q.bytes;
  });
}

std::span<const MemEffect> effects(const RoleData& rd, int begin, int end) {
  return {rd.effects.data() + begin, std::size_t(end - begin)};
}

bool same_members(const std::vector<OpRef>& x, const std::vector<OpRef>& y) {
  return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                    [](const OpRef& p, const OpRef& q) { return p.role == q.role && p.op == q.op; });
}

// Op i of role r is the same op to the engine in both programs.
bool same_op(const StepProgram& a, const RoleData& ra, const StepProgram& b, const RoleData& rb, int r, int i) {
  const OpData& x = ra.ops[std::size_t(i)];
  const OpData& y = rb.ops[std::size_t(i)];
  if (x.latency_ns != y.latency_ns || x.work_ns != y.work_ns || x.group != y.group || x.cls != y.cls ||
      x.kind != y.kind || x.stream != y.stream || x.async != y.async || x.load != y.load ||
      x.sm_share != y.sm_share || x.released_bytes != y.released_bytes)
    return false;
  if (!same_effects(effects(ra, x.alloc_begin, x.free_begin), effects(rb, y.alloc_begin, y.free_begin)) ||
      !same_effects(effects(ra, x.free_begin, x.free_end), effects(rb, y.free_begin, y.free_end)))
    return false;
  if (!(a.roles[std::size_t(r)].ops[std::size_t(i)].deps == b.roles[std::size_t(r)].ops[std::size_t(i)].deps))
    return false;
  if ((x.rendezvous < 0) != (y.rendezvous < 0)) return false;
  return x.rendezvous < 0 ||
         same_members(a.rendezvous[std::size_t(x.rendezvous)], b.rendezvous[std::size_t(y.rendezvous)]);
}

// Ops [0, result) of role r are the same in both programs.
int same_ops(const StepProgram& a, const RoleData& ra, const StepProgram& b, const RoleData& rb, int r) {
  const int n = int(std::min(ra.ops.size(), rb.ops.size()));
  for (int i = 0; i < n; ++i)
    if (!same_op(a, ra, b, rb, r, i)) return i;
  return n;
}

struct RolePrefix {
  std::array<int, kStreamCount> stream_ops{};
  std::vector<char> shared;  // per op id below the first that differs
};

RolePrefix role_prefix(const RoleProgram& a, const RoleProgram& b, int same) {
  RolePrefix p;
  p.shared.assign(std::size_t(same), 0);
  for (std::size_t s = 0; s < a.streams.size() && s < b.streams.size(); ++s) {
    const std::vector<int>& x = a.streams[s];
    const std::vector<int>& y = b.streams[s];
    int n = 0;
    while (std::size_t(n) < x.size() && std::size_t(n) < y.size() && x[std::size_t(n)] == y[std::size_t(n)] &&
           x[std::size_t(n)] < same)
      p.shared[std::size_t(x[std::size_t(n++)])] = 1;
    p.stream_ops[s] = n;
  }
  return p;
}

// The earliest time the op after stream s's shared prefix in `role` (of either program) could start, at the
// first run's end times of the shared ops; never where the stream has no such op.
TimeNs first_unshared_start(const RoleProgram& role, std::size_t s, const RolePrefix& p,
                            const std::vector<TimeNs>& end_ns) {
  if (s >= role.streams.size()) return kNever;
  const std::vector<int>& order = role.streams[s];
  const int n = p.stream_ops[s];
  if (std::size_t(n) >= order.size()) return kNever;
  TimeNs t = n > 0 ? end_ns[std::size_t(order[std::size_t(n - 1)])] : 0;
  for (int d : role.ops[std::size_t(order[std::size_t(n)])].deps)
    t = std::max(t, std::size_t(d) < p.shared.size() && p.shared[std::size_t(d)] ? end_ns[std::size_t(d)] : kNever);
  return t;
}

bool same_roles(const StepProgram& a, const StepProgram& b) {
  if (a.roles.size() != b.roles.size()) return false;
  for (std::size_t r = 0; r < a.roles.size(); ++r)
    if (a.roles[r].role_ranks != b.roles[r].role_ranks ||
        !same_effects(std::span<const MemEffect>(a.roles[r].resident), std::span<const MemEffect>(b.roles[r].resident)))
      return false;
  return true;
}

}  // namespace

SharedPrefix shared_prefix(const StepProgram& a, const std::vector<RoleData>& a_roles, const EngineResult& a_run,
                           const StepProgram& b, const std::vector<RoleData>& b_roles) {
  SharedPrefix out;
  out.stream_ops.resize(b.roles.size());
  if (!same_roles(a, b)) return out;
  std::vector<RolePrefix> prefix;
  std::vector<std::vector<TimeNs>> end_ns;
  for (int r = 0; r < int(a.roles.size()); ++r) {
    const int same = same_ops(a, a_roles[std::size_t(r)], b, b_roles[std::size_t(r)], r);
    prefix.push_back(role_prefix(a.roles[std::size_t(r)], b.roles[std::size_t(r)], same));
    out.stream_ops[std::size_t(r)] = prefix.back().stream_ops;
    end_ns.emplace_back(std::size_t(same), -1);
  }
  for (const OpTiming& t : a_run.ops)
    if (t.rank == 0 && std::size_t(t.op) < end_ns[std::size_t(t.role)].size())
      end_ns[std::size_t(t.role)][std::size_t(t.op)] = t.end_ns;
  out.until_ns = kNever;
  for (std::size_t r = 0; r < a.roles.size(); ++r) {
    for (std::size_t i = 0; i < prefix[r].shared.size(); ++i)
      FSDP_CHECK(!prefix[r].shared[i] || end_ns[r][i] >= 0, "a shared op without a record in the first run");
    for (std::size_t s = 0; s < std::size_t(kStreamCount); ++s)
      out.until_ns = std::min({out.until_ns, first_unshared_start(a.roles[r], s, prefix[r], end_ns[r]),
                               first_unshared_start(b.roles[r], s, prefix[r], end_ns[r])});
  }
  return out;
}

}  // namespace fsdpx::engine_detail
