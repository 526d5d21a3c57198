// executor/runtime/runtime_program.h — what every rank's interpreter reads, built once from the plan
// and its step program: the checks that the CPU runtime can run the plan, the flat layout of each unit,
// which module sits where, the op after which a unit's unsharded parameters are released (derived from
// the program: the last compute op of the unit before its next all-gather or free, or the step's end),
// which reduce-scatters an all-reduce across replicas completes, and the bytes the CPU model saves per
// segment (from its buffer sizes). Leaves out timing: the CPU backend runs the ops one after another.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan.h"
#include "executor/model/param_layout.h"
#include "program/segment_work.h"
#include "program/step_program.h"

namespace fsdpx {

struct RuntimeProgram {
  Plan plan;
  StepProgram program;
  ParamLayout layout;
  std::vector<Segment> segments;
  std::vector<FlatUnitLayout> flats;  // per unit
  std::vector<int> module_unit, module_slot;  // per module: its unit and its index in flats[unit].modules
  bool replicated = false;  // DDP / ZeRO-1: unsharded parameters and gradients live all run
  int shard_count = 1;      // shards of each unit (dp_shard; 1 for DDP)
  std::int64_t grad_accum = 1;
  int dp_ranks = 1;
  std::vector<char> release_after;    // per op: release the op's unit after it
  std::vector<char> replica_reduce;   // per reduce-scatter op: an all-reduce across replicas follows
  std::vector<double> segment_saved_bytes;    // per segment: kept from forward to backward
  std::vector<double> segment_working_bytes;  // per segment: alive during its backward only
};

// Which backend will run the program: each computes one way, and a plan saying otherwise would be
// simulated for another program than the one run (cpu: fp32, unfused attention; cuda: bf16, flash2).
enum class ExecutorDevice { cpu, cuda };

// Lowers the plan and prepares the interpreter's tables. Throws ConfigError "plan: /path: ..." for
// plans the runtime cannot run on `device` (tp, cp or pp > 1, another precision or attention kernel,
// a tied head apart from its embedding, seq beyond the position table).
RuntimeProgram make_runtime_program(const Plan& plan, ExecutorDevice device = ExecutorDevice::cpu);

}  // namespace fsdpx
