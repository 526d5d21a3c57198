// simulator/critical_path.cpp — critical_path_ns (critical_path.h): Kahn's order over every role's ops,
// an op ready once its dependencies and stream predecessor have ended, a rendezvous started once all its
// members are ready, at the latest of their ready times.
#include "simulator/critical_path.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace fsdpx {

namespace {

// engine_setup.cpp's rounding of a full-rate duration (ceil_ns), so that the path matches the engine's
// integer clock: free ops take no time.
std::int64_t full_rate_ns(const Op& op) {
  if (op.kind == OpKind::free) return 0;
  const double ns = op.duration_s * 1e9;
  return ns <= 0 ? 0 : std::int64_t(std::ceil(ns - 1e-3));
}

}  // namespace

std::int64_t critical_path_ns(const StepProgram& program) {
  const std::size_t roles = program.roles.size();
  std::vector<std::size_t> base(roles + 1, 0);  // flat index of (role, op)
  for (std::size_t r = 0; r < roles; ++r) base[r + 1] = base[r] + program.roles[r].ops.size();
  const std::size_t n = base[roles];
  std::vector<int> waiting(n, 0);                        // predecessors not yet ended
  std::vector<std::vector<std::size_t>> succ(n);
  std::vector<std::int64_t> ready(n, 0), end(n, 0);
  for (std::size_t r = 0; r < roles; ++r) {
    const RoleProgram& role = program.roles[r];
    for (std::size_t i = 0; i < role.ops.size(); ++i)
      for (int d : role.ops[i].deps) {
        succ[base[r] + std::size_t(d)].push_back(base[r] + i);
        ++waiting[base[r] + i];
      }
    for (const std::vector<int>& stream : role.streams)
      for (std::size_t k = 1; k < stream.size(); ++k) {
        succ[base[r] + std::size_t(stream[k - 1])].push_back(base[r] + std::size_t(stream[k]));
        ++waiting[base[r] + std::size_t(stream[k])];
      }
  }
  std::vector<int> arrived(program.rendezvous.size(), 0);
  std::vector<std::size_t> todo;  // ready ops whose start is known
  auto become_ready = [&](std::size_t r, std::size_t i) {
    const int v = program.roles[r].ops[i].rendezvous;
    if (v < 0) return todo.push_back(base[r] + i);
    const auto& members = program.rendezvous[std::size_t(v)];
    if (++arrived[std::size_t(v)] < int(members.size())) return;
    std::int64_t start = 0;
    for (const OpRef& m : members) start = std::max(start, ready[base[std::size_t(m.role)] + std::size_t(m.op)]);
    for (const OpRef& m : members) {
      ready[base[std::size_t(m.role)] + std::size_t(m.op)] = start;
      todo.push_back(base[std::size_t(m.role)] + std::size_t(m.op));
    }
  };
  std::vector<std::size_t> role_of(n);
  for (std::size_t r = 0; r < roles; ++r)
    for (std::size_t k = base[r]; k < base[r + 1]; ++k) role_of[k] = r;
  for (std::size_t k = 0; k < n; ++k)
    if (waiting[k] == 0) become_ready(role_of[k], k - base[role_of[k]]);
  std::size_t done = 0;
  std::int64_t longest = 0;
  while (!todo.empty()) {
    const std::size_t k = todo.back();
    todo.pop_back();
    ++done;
    const std::size_t r = role_of[k];
    end[k] = ready[k] + full_rate_ns(program.roles[r].ops[k - base[r]]);
    longest = std::max(longest, end[k]);
    for (std::size_t s : succ[k]) {
      ready[s] = std::max(ready[s], end[k]);
      if (--waiting[s] == 0) become_ready(r, s - base[r]);
    }
  }
  return done == n ? longest : -1;
}

}  // namespace fsdpx
