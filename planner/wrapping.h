// planner/wrapping.h — the three ways the planner groups modules into FSDP units, side by side:
// per-block (FSDP2 / torchtitan apply_fsdp, k blocks per unit, embedding and head alone or merged with
// their neighbours), FSDP1's size_based_auto_wrap_policy, and SimpleFSDP's greedy auto-bucketing
// (SimpleFSDP, arXiv 2411.00284). Works at module granularity (embedding, block.i, final_norm, head): it does
// not split a block into attention and MLP units as FSDP1's policy can.
#pragma once

#include <functional>
#include <vector>

#include "core/plan.h"

namespace fsdpx {

struct PerBlockWrapping {
  int blocks_per_unit = 1;
  bool merge_embedding = false;  // embedding joins the first block unit (untied models only)
  bool merge_head = false;       // final_norm + head join the last block unit
};
// reshard_after_forward is 1 for every unit except the last (backward needs it first), as torchtitan.
std::vector<PlanUnit> wrap_per_block(const ModelSpec& m, const PerBlockWrapping& w);

// FSDP1 size_based_auto_wrap_policy (Zhao et al. 2023, arXiv 2304.11277 §3; torch/distributed/fsdp/wrap.py
// _recursive_wrap): post-order over root -> {embedding, layers -> {block.i}, final_norm, head}; a module
// is wrapped when its not-yet-wrapped parameters reach `min_params` (default 1e8); the root takes the
// rest. A root remainder split around the layers becomes one unit per consecutive run (the schema
// needs consecutive units); a tied embedding joins the head's unit.
std::vector<PlanUnit> wrap_fsdp1_size_based(const ModelSpec& m, double min_params);

// SimpleFSDP greedy bucketing on per-module costs (meta-pytorch/autoparallel,
// autoparallel/graph_passes/autobucketing_inductor/bucket_plan.py get_simplefsdp_auto_plan), in forward order.
struct BucketingInputs {
  std::vector<double> compute_s;        // forward compute of each module
  std::vector<double> gathered_bytes;   // all-gather output (unsharded params) of each module
  std::vector<double> grad_bytes;       // reduce-scatter input of each module
  std::function<double(double bytes)> all_gather_time_s;
  std::function<double(double bytes)> reduce_scatter_time_s;
  double memory_budget_bytes = 0;  // room for the current and the prefetched bucket (0: unlimited)
  double max_bucket_bytes = 0;     // size rule: largest calibrated all-gather (0: unlimited)
  double relax_ratio = 0;          // autoparallel's default
};
// Buckets as lists of module indices. A bucket closes before module i when (1) the previous step's
// compute x (1 + relax) is shorter than the all-gather of the bucket with module i plus the previous
// reduce-scatter, (2) the current and prefetched buckets would exceed the memory budget
// (2 x gathered bytes), or (3) the bucket would exceed max_bucket_bytes. The first bucket closes
// after its first module (nothing earlier to overlap with).
std::vector<std::vector<int>> simplefsdp_buckets(const BucketingInputs& in);

// The same on a plan template (its model, cluster, parallelism, training shape and precision), with
// compute from the cost models and collectives from the NCCL model over the dp_shard group.
std::vector<PlanUnit> wrap_simplefsdp_auto(const Plan& tmpl, double memory_budget_bytes);

}  // namespace fsdpx
