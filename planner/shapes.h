// planner/shapes.h — the outer search space: factorisations of the world size into dp_replicate x
// dp_shard x tp x cp (tp within a node, dividing the heads; cp with seq divisible by 2·cp), micro-batch
// sizes that divide the per-rank batch, and the starting plan of each shape (per-block wrapping,
// torchtitan defaults). Leaves out pp (rejected by the simulator until the pipeline issue lands).
#pragma once

#include <cstdint>
#include <vector>

#include "planner/planner.h"

namespace fsdpx {

// In a fixed order: tp ascending, then cp, then dp_replicate (deterministic enumeration).
std::vector<Parallelism> parallel_shapes(const PlanRequest& r);
// Micro-batch sizes dividing global_batch / dp_ranks (none when dp_ranks does not divide the batch).
std::vector<std::int64_t> micro_batch_choices(const PlanRequest& r, int dp_ranks);
// One unit per block (FSDP2 / torchtitan), prefetch 1/1, two all-gathers in flight, fp32 reduce.
Plan shape_plan(const PlanRequest& r, const Parallelism& par, std::int64_t micro_batch, RecomputeMode recompute);

}  // namespace fsdpx
