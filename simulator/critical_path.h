// simulator/critical_path.h — a lower bound on the step time the engine (engine.h, with overlap, one
// instance per role) gives a timed program, without running it: the longest path through the ops, each at
// its full-rate duration (op_timing.h: alone on its fabric and SMs). The engine starts an op no earlier
// than its dependencies' and its stream predecessor's ends and, for a rendezvous (pipeline send/receive,
// cross-stage all-reduce), than every member's readiness; it then runs it at rates of at most 1 (shared
// fabrics, SMs held by collectives), so every op ends no earlier than on this path. Leaves out rank
// expansion (identical ranks wait for nothing more under symmetry), overlap off and infinite bandwidth.
#pragma once

#include <cstdint>

#include "program/step_program.h"

namespace fsdpx {

// The longest path in integer ns (each op's duration rounded as the engine rounds it), or -1 when the
// program's dependencies, stream orders and rendezvous leave an op unreachable (a program the engine
// would report as deadlocked).
std::int64_t critical_path_ns(const StepProgram& program);

}  // namespace fsdpx
