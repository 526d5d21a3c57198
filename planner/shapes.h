// planner/shapes.h — the outer search space: factorisations of the world size into dp_replicate x
// dp_shard x tp x cp x pp (tp within a node, dividing the heads; cp with seq divisible by 2·cp; pp with at
// least one block per virtual stage) with the pipeline schedules and interleaved chunks per rank,
// micro-batch sizes that divide the per-rank batch (and that interleaving accepts), and the starting plan
// of each shape (per-block wrapping, torchtitan defaults; under PP the stages balanced by compute).
#pragma once

#include <cstdint>
#include <vector>

#include "planner/planner.h"

namespace fsdpx {

// In a fixed order: tp ascending, then cp, then pp (with its schedules), then dp_replicate, then ep (MoE
// models on a target that runs it: planner/ep_degrees.h). Degrees the request fixes (SearchSpace::fixed)
// are the only ones enumerated.
std::vector<Parallelism> parallel_shapes(const PlanRequest& r);
// Micro-batch sizes dividing global_batch / dp_ranks (none when dp_ranks does not divide the batch); with
// interleaved 1F1B only those giving a multiple of pp micro-batches (Megatron-LM's groups of pp).
std::vector<std::int64_t> micro_batch_choices(const PlanRequest& r, const Parallelism& par);
// How the planner splits blocks over pipeline stages: torchtitan's rule (embedding and head count as one
// block each) for a torchtitan target, so the export is exact; otherwise weights from the compute cost
// model, the embedding's and the head's (with the loss) forward + backward time in blocks.
StageAccounting planner_stage_accounting(const PlanRequest& r, const Parallelism& par, std::int64_t micro_batch);
// One unit per block (FSDP2 / torchtitan), prefetch 1/1, two all-gathers in flight, fp32 reduce; with
// pp > 1 default_plan's stages (planner_stage_accounting), parameters kept across micro-batches.
Plan shape_plan(const PlanRequest& r, const Parallelism& par, std::int64_t micro_batch, RecomputeMode recompute);

}  // namespace fsdpx
