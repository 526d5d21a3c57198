// planner/shape_bound.h — bounds of one parallel shape with its micro-batch over all its refinements:
// which recompute choices could fit by the analytic memory lower bound (memory_bound.h; for the partial
// family, the fewest fully recomputed blocks that could fit), and for each an upper bound on tokens/s per
// GPU from estimate()'s cost terms: the step is at least the compute stream's work (kernels and the serial
// TP/CP collectives) and at least the data-parallel traffic of the configuration that moves least (perfect
// overlap otherwise; without pipelining, when no configuration may keep the units gathered after forward
// by the memory bound, the backward all-gathers of all but the largest last unit count too); partial recompute interpolated between none and full, blocks being identical. Under
// pipeline parallelism the compute stream is bounded per pipeline rank from its stages' kernel and serial
// TP/CP collective time (the first micro-batch's way in, all its passes, the last gradient's way back),
// per stage for partial recompute. An MoE model (estimate() has no MoE timing) is bounded the same way at
// every pp, pp = 1 included: its passes carry the grouped expert GEMMs at their per-expert shape efficiency
// and the dispatch/combine all-to-alls on the ep group as the lowering lays it out, and its partial
// patterns add each recomputed block's own extra (dense leading blocks differ from MoE ones). No
// wrapping, reshard, prefetch or cap can beat them, so a shape whose best bound is below a simulated plan
// cannot win.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "planner/memory_bound.h"
#include "planner/space.h"

namespace fsdpx {

struct RecomputeOption {
  RecomputeChoice choice;    // a partial one names the family's first member that could fit
  int member_index = -1;     // partial: index into partial_members(); -1 for uniform
  double tps_bound = 0;      // tokens/s per GPU upper bound
  double memory_bound_bytes = 0;
};

struct ShapeBound {
  Plan plan;  // per-block k1, recompute none (shapes.h shape_plan)
  std::vector<RecomputeOption> options;  // could fit by the memory bound, highest tps_bound first
  double tps_bound = 0;                  // of the first option; 0 when nothing could fit
  std::size_t choices = 0;               // recompute choices the shape stands for (uniform + partial)
  double least_memory_bound_bytes = 0;   // over every recompute choice
  MemoryBound least_bound;
  RecomputeChoice least_choice;          // the recompute choice with the least bound
  double saved_per_full_block_bytes = 0; // bound saved by one more fully recomputed block
  double regather_share = 0;             // share of the all-gather bytes every fitting configuration
                                         // gathers again for backward (no pipeline, no reshard fits);
                                         // 0 for a shape without options (not computed)
};

ShapeBound bound_shape(const PlanRequest& r, const Space& s, const Parallelism& par, std::int64_t micro_batch);
// The same from the shape's plan (shapes.h shape_plan with recompute none). `memo` (optional, for one
// search's shapes) shares the memory bound's part that does not depend on the data-parallel degrees
// (memory_bound.h MemoryBoundPart) between shapes of one key.
ShapeBound bound_shape(const PlanRequest& r, const Space& s, Plan shape, MemoryBoundMemo* memo = nullptr);

// A cheaper limit no option of the shape can beat: the bound of the shape without recompute (recompute only
// adds compute and TP/CP traffic, cost_models/estimate.cpp, and passes to every stage), ignoring memory.
// ShapeOrder (shape_order.h) bounds a shape fully only while this could win.
// `memo` (optional) keeps the pipeline path of shapes that differ only in their data-parallel degrees.
using PipelinePathMemo = std::map<std::string, double>;
double shape_speed_limit(const Space& s, const Plan& shape, PipelinePathMemo* memo = nullptr);

}  // namespace fsdpx
