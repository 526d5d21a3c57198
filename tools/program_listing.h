// tools/program_listing.h — `fsdpx simulate --program`: one role's step program as a table read top to
// bottom like llm.c's training loop: per op in issue order its id, stream, kind, name, unit, micro-batch,
// group (kind and ranks), bytes (nccl-tests' S), effects (release, kept copy, reduction complete),
// dependencies and simulated duration. Leaves out the simulated start times (the trace has them) and
// the ops' memory effects.
#pragma once

#include <string>

#include "program/step_program.h"

namespace fsdpx {

// The ops of pipeline rank `role` (0 without pipeline parallelism) of a timed program, one per line
// under a header; ConfigError "--role: ..." when the program has no such role.
std::string program_listing(const StepProgram& program, int role);

}  // namespace fsdpx
