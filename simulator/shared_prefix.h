// simulator/shared_prefix.h — how long two engine runs start the same ops at the same times: a run
// already made of program A (a pipelined probe of k micro-batches) and one to be made of program B (the
// step of m > k), whose roles open with the same ops (lowering emits a role's passes in schedule order, and
// the schedule of k micro-batches is that of m up to the probe's cool-down). An op is shared where both
// programs hold it at the same id, the same in everything the engine reads (its engine data, memory
// effects, dependencies, rendezvous members) with every op before it, and it lies in the common prefix of
// its stream's order in both. Leaves out expanded ranks and runs without overlap (the caller's check).
#pragma once

#include <array>
#include <vector>

#include "simulator/engine_state.h"

namespace fsdpx::engine_detail {

struct SharedPrefix {
  // Per role, per stream: how many of the stream's first ops both programs share.
  std::vector<std::array<int, kStreamCount>> stream_ops;
  // Before it both runs start only shared ops, each at the same time: the earliest time any op past a
  // stream's shared prefix, in either program, could start (its stream's last shared op has ended and
  // every dependency of it is a shared op that has ended, at A's times), 0 where the programs differ in
  // roles or resident state.
  TimeNs until_ns = 0;
};

// `a_roles` and `b_roles` are the engine data of `a` and `b` (build_roles); `a_run` is a's run, with its
// per-op records (every op of every role's instance 0).
SharedPrefix shared_prefix(const StepProgram& a, const std::vector<RoleData>& a_roles, const EngineResult& a_run,
                           const StepProgram& b, const std::vector<RoleData>& b_roles);

}  // namespace fsdpx::engine_detail
