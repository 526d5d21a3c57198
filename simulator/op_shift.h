// simulator/op_shift.h — "the same op d micro-batches later" in one role's step program, which the
// pipelined steady-state windows (steady_state_pipeline.cpp) compare every op with. An op's identity is its
// kind, stream, payload, whether it gathers from a kept copy, stage, segment, unit, micro-batch and its
// ordinal among ops equal in all of these (a unit all-gathered in forward and again in backward). The table
// is built once per role program and answers every span d (issue 36: a probe looked up windows of d and 2d
// micro-batches, and built two hash tables per role for each). Leaves out ops of no micro-batch (no shift)
// and identities whose fields do not fit 64 bits (no shift either, so no window containing them recurs).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "program/step_program.h"

namespace fsdpx {

class OpShiftTable {
 public:
  explicit OpShiftTable(const RoleProgram& role);
  // Per op of the role: the id of the same op d micro-batches later, -1 where there is none.
  std::vector<int> shift(int d) const;

 private:
  struct OpKey {
    std::uint64_t key = 0;  // the identity at ordinal 0 (0 where a field does not fit)
    int ordinal = 0;        // among the ops of the same `key`, in program order
    int micro_batch = -1;   // -1: no micro-batch, no shift
    bool fits = false;      // every field fits its bits (the ordinal checked apart)
  };
  std::vector<OpKey> ops_;                                 // per op
  std::vector<std::pair<std::uint64_t, int>> by_key_;      // (key, op id) of ops with a micro-batch, sorted
};

}  // namespace fsdpx
