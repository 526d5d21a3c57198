// simulator/certain_order.cpp — CertainOrder and certain_other_gathers_bytes (certain_order.h).
#include "simulator/certain_order.h"

#include <algorithm>

namespace fsdpx {

CertainOrder::CertainOrder(const RoleProgram& role) : role_(&role) {
  const int n = int(role.ops.size());
  pos_.assign(std::size_t(n), -1);
  before_.assign(std::size_t(n), -1);
  for (const std::vector<int>& stream : role.streams)
    for (std::size_t k = 0; k < stream.size(); ++k) {
      const int id = stream[k];
      if (id < 0 || id >= n || pos_[std::size_t(id)] >= 0 || (k > 0 && stream[k - 1] >= id)) valid_ = false;
      if (!valid_) return;
      pos_[std::size_t(id)] = int(k);
      before_[std::size_t(id)] = k > 0 ? stream[k - 1] : -1;
    }
  std::array<int, kStreamCount> none;
  none.fill(-1);
  clock_.assign(std::size_t(n), none);
  for (int id = 0; id < n; ++id) {
    const Op& op = role.ops[std::size_t(id)];
    if (op.rendezvous >= 0 || pos_[std::size_t(id)] < 0) {
      valid_ = false;
      return;
    }
    std::array<int, kStreamCount>& c = clock_[std::size_t(id)];
    auto join = [&](int p) {  // p and everything before it have ended before id starts
      const std::array<int, kStreamCount>& cp = clock_[std::size_t(p)];
      for (int s = 0; s < kStreamCount; ++s) c[std::size_t(s)] = std::max(c[std::size_t(s)], cp[std::size_t(s)]);
      int& own = c[std::size_t(role.ops[std::size_t(p)].stream)];
      own = std::max(own, pos_[std::size_t(p)]);
    };
    for (int d : op.deps) {
      if (d < 0 || d >= id) {  // not in id order: no facts rather than wrong ones
        valid_ = false;
        return;
      }
      join(d);
    }
    if (before_[std::size_t(id)] >= 0) join(before_[std::size_t(id)]);
  }
}

bool CertainOrder::ended_before(int a, int b) const {
  const auto s = std::size_t(role_->ops[std::size_t(a)].stream);
  return pos_[std::size_t(a)] <= clock_[std::size_t(b)][s];
}

bool CertainOrder::started_by(int a, int b) const {
  if (a == b) return false;
  if (ended_before(a, b)) return true;
  for (int d : role_->ops[std::size_t(a)].deps)
    if (!ended_before(d, b)) return false;
  const int p = before_[std::size_t(a)];
  return p < 0 || ended_before(p, b);
}

std::vector<double> certain_other_gathers_bytes(const StepProgram& program, int role, const std::vector<int>& at,
                                                const CertainOrder& order) {
  std::vector<double> bytes(at.size(), 0.0);
  if (!order.valid()) return bytes;
  const std::vector<Op>& ops = program.roles[std::size_t(role)].ops;
  // Per parameter all-gather: the op that frees what it gathered, the unit's next releasing op (-1: none,
  // they stay to the end of the step).
  struct Gather {
    int op, release;
    double bytes;
  };
  std::vector<Gather> gathers;
  std::vector<int> next_release(program.units.size(), -1);
  for (int id = int(ops.size()) - 1; id >= 0; --id) {
    const Op& op = ops[std::size_t(id)];
    if (op.unit < 0) continue;
    if (op.kind == OpKind::all_gather && op.payload == Payload::params) {
      double b = 0;
      for (const MemEffect& e : op.alloc_at_start)
        if (e.category == MemCategory::transient) b += e.bytes;
      if (b > 0) gathers.push_back({id, next_release[std::size_t(op.unit)], b});
    }
    if (op.release_params) next_release[std::size_t(op.unit)] = id;
  }
  for (std::size_t k = 0; k < at.size(); ++k) {
    const int b = at[k];
    for (const Gather& g : gathers)
      if (ops[std::size_t(g.op)].unit != ops[std::size_t(b)].unit && order.started_by(g.op, b) &&
          (g.release < 0 || order.ended_before(b, g.release)))
        bytes[k] += g.bytes;
  }
  return bytes;
}

}  // namespace fsdpx
