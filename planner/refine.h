// planner/refine.h — the refinement of one shape: steepest coordinate descent over its communication
// configuration (wrapping, reshard_after_forward, prefetch depth, all-gather cap, reduce dtype), and for
// every configuration tried, the cheapest recompute that fits in simulation: the recompute options of the
// shape's bound in order of their throughput bound, the partial family searched for its fewest fully
// recomputed blocks that fit (a step predicted from the simulated excess, then bisection). An option or a
// configuration whose bound, or whose simulation with less recompute, is already below the best fitting
// plan is skipped: more recompute only adds compute; so is uniform full recompute once a member of the
// partial family fits (throughput objective). Once an option does not fit while none has, the
// option with the least memory bound is simulated next, and a shape where that does not fit either ends
// there (more recompute never raises the peak: the bisection's premise too); the configurations it then
// tries are those that lower memory (fewer all-gathers in flight, except for a pipelined stage that keeps
// its units gathered and gathers each once per step; a smaller reduce dtype). Deterministic; leaves out
// joint moves of two configuration dimensions at once.
#pragma once

#include "planner/candidates.h"
#include "planner/shape_bound.h"

namespace fsdpx {

// Returns the shape's best candidate; every simulated plan is recorded in `ev`. `best_tps` is the fastest
// fitting plan of the whole search so far (updated). Without `descend`, only the default configuration
// with its cheapest fitting recompute (a representative of the shape for the alternatives list). With
// `fitting_only` (a fitting plan is known, so the answer is one), a pipelined shape that no configuration
// refine would try in its default or lowered configurations can fit by the configured memory bound
// (backward_gather_bound.h) is not simulated: an empty candidate.
Candidate refine_shape(const ShapeBound& b, const PlanRequest& r, const Space& s, Evaluator& ev, double& best_tps,
                       bool descend = true, bool fitting_only = false);

}  // namespace fsdpx
