// program/all_to_all_contract.h — what an executor's variable-count all-to-all must keep of the step
// program. The ep group's dispatch and combine (moe_block.h add_moe_all_to_alls) move data-dependent
// bytes: the program states nccl-tests' S of the slowest rank, the mean (tokens x top_k x hidden x dtype
// bytes) x min(imbalance, ep). A rank's issued S (the larger of what it sent and what it received, its own
// chunk included) lies between the mean (it sends, or gets back, each of its routed rows once) and ep x the
// mean (every routed row of its group comes to it). Leaves out the order inside an op (dispatch before
// combine), which the executor's pairing of counts enforces.
#pragma once

#include "program/step_program.h"

namespace fsdpx {

// The serial collective is a variable-count all-to-all: an all-to-all on the ep group.
bool is_variable_all_to_all(const StepProgram& p, const SerialCollective& sc);

// issued_bytes within [stated / ranks, stated x ranks] (x (1 ± 1e-9)): holds whatever imbalance the plan
// assumed, since 1 <= min(imbalance, ranks) <= ranks. `ranks`: the group's size.
bool variable_all_to_all_within(double stated_bytes, int ranks, double issued_bytes);

}  // namespace fsdpx
