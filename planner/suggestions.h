// planner/suggestions.h — when nothing fits: the least memory any plan needs, and what would make one fit,
// each computed rather than guessed: the smallest world size (whole nodes) at which a plan fits, found by
// searching node counts upward (the memory bound skips those that cannot fit, a simulation confirms the
// first that may); the nearest global batch at this world size with a fitting plan (when the batch is what
// stands in the way); and the memory limit or margin that would do.
#pragma once

#include <vector>

#include "planner/candidates.h"
#include "planner/shape_bound.h"

namespace fsdpx {

// Fills res.least_memory_needed_bytes and res.suggestions. `shapes` are the request's bounded shapes.
void explain_no_fit(PlanResult& res, const std::vector<ShapeBound>& shapes, const PlanRequest& r, Evaluator& ev);

}  // namespace fsdpx
