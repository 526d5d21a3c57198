// planner/local_search.h — stage 2 of the search: coordinate descent around one simulated shape.
// One dimension at a time (wrapping policy, reshard_after_forward, prefetch depth, all-gather cap,
// reduce dtype, recompute on the first k blocks), every option of the dimension is simulated with the
// others fixed and the best (by the objective, fitting first) is kept. Deterministic; leaves out joint
// moves across dimensions.
#pragma once

#include "planner/candidates.h"

namespace fsdpx {

// Returns the best candidate found; every simulated variant is recorded in `ev`.
Candidate refine(const Candidate& start, const PlanRequest& r, Evaluator& ev);

}  // namespace fsdpx
