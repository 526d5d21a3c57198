// planner/shape_bound.cpp — the memory and throughput bounds of shape_bound.h.
#include "planner/shape_bound.h"

#include <algorithm>

#include "cost_models/estimate.h"
#include "planner/shapes.h"

namespace fsdpx {

namespace {

// Lower bounds on one step's two resources. The compute stream runs the kernels and, serially inside them,
// the TP/CP collectives (simulator/segment_work.cpp); the data-parallel collectives run on their own
// streams and fabric. Their traffic is bounded by the configuration that moves least: no reshard after
// forward (one all-gather per micro-batch; estimate()'s ZeRO-2 form counts even fewer) and the cheapest
// reduce dtype of the space.
struct Timing {
  double compute_s = 0, comm_s = 0;
};

Timing timing(const Plan& p, DType reduce, bool no_reshard) {
  TrainingShape ts = training_shape_of(p);
  ts.precision.reduce = reduce;
  if (no_reshard && (ts.mode == ShardingMode::zero3 || ts.mode == ShardingMode::hsdp)) ts.mode = ShardingMode::zero2;
  const Estimate e = estimate(p.model, p.cluster, ts);
  return {e.compute_time_s + e.tp_cp_comm_time_s, e.dp_comm_time_s};
}

double tps_of(const Plan& p, double step_s) {
  return double(p.training.global_batch) * double(p.training.seq) / step_s / double(p.parallelism.world_size());
}

Plan with(const Plan& base, const std::vector<RecomputeMode>& r) {
  Plan p = base;
  p.recompute = r;
  return p;
}

// The partial family: its first member whose bound fits, with the bound interpolated between none and
// full (identical blocks: compute, TP traffic and saved activations are linear in the recomputed blocks).
void add_partial(ShapeBound& b, const PlanRequest& r, const Space& s, double none_bound_bytes, const Timing& none,
                 const Timing& full) {
  const std::int64_t layers = r.model.layers;
  const std::vector<int> members = partial_members(layers, s.partial);
  // Start at the fewest blocks the linear bound allows; the exact bound of each member then decides.
  const double excess = none_bound_bytes - *r.memory_limit_bytes;
  const double needed = b.saved_per_full_block_bytes > 0 ? excess / b.saved_per_full_block_bytes : 0;
  std::size_t first = 0;
  while (first < members.size() && full_blocks(members[first], layers, s.partial) + 1 < needed) ++first;
  for (std::size_t i = first; i < members.size(); ++i) {
    const RecomputeChoice c{RecomputeMode::none, members[i]};
    const double bound = memory_lower_bound(with(b.plan, recompute_pattern(c, layers, s.partial))).total();
    if (bound > *r.memory_limit_bytes) continue;
    const double f = double(full_blocks(c.member, layers, s.partial)) / double(layers);
    const double step_s = std::max(none.compute_s + f * (full.compute_s - none.compute_s),
                                   none.comm_s + f * (full.comm_s - none.comm_s));
    b.options.push_back({c, int(i), tps_of(b.plan, step_s), bound});
    return;
  }
}

}  // namespace

ShapeBound bound_shape(const PlanRequest& r, const Space& s, const Parallelism& par, std::int64_t micro_batch) {
  ShapeBound b;
  b.plan = shape_plan(r, par, micro_batch, RecomputeMode::none);
  const std::int64_t layers = r.model.layers;
  const DType reduce = s.knobs.reduce_dtypes.size() > 1 ? DType::bf16 : s.knobs.reduce_dtypes.front();
  b.choices = s.knobs.uniform_recompute.size() + partial_members(layers, s.partial).size();
  const MemoryBound none_bound = memory_lower_bound(b.plan);
  const Plan full_plan = with(b.plan, std::vector<RecomputeMode>(std::size_t(layers), RecomputeMode::full));
  const MemoryBound full_bound = memory_lower_bound(full_plan);
  b.saved_per_full_block_bytes = std::max(0.0, (none_bound.total() - full_bound.total()) / double(layers));
  b.least_memory_bound_bytes = none_bound.total() + 1;
  for (RecomputeMode m : s.knobs.uniform_recompute) {
    const Plan p = with(b.plan, std::vector<RecomputeMode>(std::size_t(layers), m));
    const MemoryBound mb = memory_lower_bound(p);
    if (mb.total() < b.least_memory_bound_bytes)
      b.least_memory_bound_bytes = mb.total(), b.least_bound = mb, b.least_choice = RecomputeChoice{m, 0};
    if (mb.total() > *r.memory_limit_bytes) continue;
    const Timing t = timing(p, reduce, s.knobs.try_no_reshard);
    b.options.push_back({RecomputeChoice{m, 0}, -1, tps_of(p, std::max(t.compute_s, t.comm_s)), mb.total()});
  }
  if (s.partial != PartialRecompute::none)
    add_partial(b, r, s, none_bound.total(), timing(b.plan, reduce, s.knobs.try_no_reshard),
                timing(full_plan, reduce, s.knobs.try_no_reshard));
  std::stable_sort(b.options.begin(), b.options.end(),
                   [](const RecomputeOption& x, const RecomputeOption& y) { return x.tps_bound > y.tps_bound; });
  if (!b.options.empty()) b.tps_bound = b.options.front().tps_bound;
  return b;
}

}  // namespace fsdpx
