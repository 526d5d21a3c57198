// executor/runtime/op_timeline.h — what a traced run measured on one rank: the wall-clock interval of
// every op of the step program (the same op ids and names the simulator times) and the live bytes per
// memory category of the rank's backend after each op. Times are steady_clock nanoseconds (one clock for
// every thread and process of a host). Leaves out the memory an op allocates and frees inside itself
// (sampled between ops only) and the host work between ops (batch slicing, loss bookkeeping).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "program/step_program.h"

namespace fsdpx {

struct MeasuredOp {
  int op = 0;              // index into the role's ops
  std::int64_t step = 0;   // 0-based step of the run
  std::int64_t start_ns = 0, end_ns = 0;  // end after the backend synchronised
};

struct MeasuredMemory {
  std::int64_t at_ns = 0;
  std::int64_t step = 0;
  std::array<double, kMemCategoryCount> bytes{};
};

// One rank's record: `role` is its pipeline rank, `mesh_rank` its place in the role (the step
// program's role and rank instance).
struct RankTimeline {
  int rank = 0, role = 0, mesh_rank = 0;
  std::vector<MeasuredOp> ops;
  std::vector<MeasuredMemory> memory;
};

}  // namespace fsdpx
