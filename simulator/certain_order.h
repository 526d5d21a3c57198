// simulator/certain_order.h — what the engine (engine.h, with overlap) has certainly done by the time an op
// of a role starts, read from the program alone, without timing it. Two facts of engine.cpp make this
// sound: an op starts only after its dependencies and its stream predecessor have ended (its ancestors,
// which have therefore all ended), and an op whose dependencies and stream predecessor have ended starts
// at once (start_ready scans every instance an ended op touched until nothing more starts), so an op
// whose predecessors are all ancestors of b has started by b's start. Each stream is a total order, so
// an op's ancestors are a prefix of every stream: one position per stream (a vector clock) holds them.
// Leaves out rendezvous (pipelines) and rank expansion: a role with a rendezvous op, or whose
// dependencies or stream orders do not follow op ids, gets no facts (valid() false).
#pragma once

#include <array>
#include <vector>

#include "program/step_program.h"

namespace fsdpx {

class CertainOrder {
 public:
  explicit CertainOrder(const RoleProgram& role);
  bool valid() const { return valid_; }
  // `a` has ended before `b` starts (a is an ancestor of b by dependencies and stream order).
  bool ended_before(int a, int b) const;
  // `a` has started by the time `b` starts: an ancestor, or every predecessor of `a` is one.
  bool started_by(int a, int b) const;

 private:
  const RoleProgram* role_;
  bool valid_ = true;
  std::vector<int> pos_;     // per op: its position in its stream
  std::vector<int> before_;  // per op: its stream predecessor, or -1
  // per op, per stream: the last position in that stream that has ended before the op starts (-1: none)
  std::vector<std::array<int, kStreamCount>> clock_;
};

// Per op `at[k]` of `role`: the unsharded parameter bytes of other units certainly live when it starts, in
// the engine's accounting (engine_ops.cpp: an all-gather allocates them at its start, the unit's next op
// that releases its parameters frees them at its end): all-gathers of units other than the op's that have
// started by then (CertainOrder) and whose releasing op starts only after it ends. 0 without facts.
std::vector<double> certain_other_gathers_bytes(const StepProgram& program, int role, const std::vector<int>& at,
                                                const CertainOrder& order);

}  // namespace fsdpx
