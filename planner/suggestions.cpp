// planner/suggestions.cpp — the computed suggestions of suggestions.h. A request "may fit" when some
// shape's least memory bound is within the limit (bound <= simulated peak, so no other can fit); it
// fits when one of its three least-bound plans, simulated, does.
#include "planner/suggestions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "cost_models/memory.h"
#include "core/input_ranges.h"
#include "cost_models/moe_params.h"
#include "cost_models/params.h"
#include "planner/memory_bound.h"
#include "planner/shapes.h"
#include "planner/target.h"

namespace fsdpx {

namespace {

std::string gib_text(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }

// The least-memory plan of each shape (smallest micro-batch, full recompute where the space has it),
// least bound first; for fsdpx's executor only plans its backend's row runs (target.h target_gaps), so that
// no suggestion names a plan the target refuses.
std::vector<std::pair<double, Plan>> least_plans(const PlanRequest& r, const Space& s) {
  std::vector<std::pair<double, Plan>> out;
  PlanRequest narrowed = r;
  narrowed.space = s.knobs;
  const auto& modes = s.knobs.uniform_recompute;
  const bool has_full = std::find(modes.begin(), modes.end(), RecomputeMode::full) != modes.end();
  const RecomputeMode least = has_full || modes.empty() ? RecomputeMode::full : modes.back();
  for (const Parallelism& par : parallel_shapes(narrowed)) {
    const std::vector<std::int64_t> mbs = micro_batch_choices(narrowed, par);
    if (mbs.empty()) continue;
    Plan p = shape_plan(r, par, mbs.front(), least);
    if (r.target.kind == TargetKind::fsdpx && !target_gaps(p, r.target).empty()) continue;
    out.emplace_back(memory_lower_bound(p).total(), std::move(p));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// A fitting plan's description for request `r`, or empty.
std::string fitting_plan(const PlanRequest& r, const Space& s) {
  const std::vector<std::pair<double, Plan>> plans = least_plans(r, s);
  SearchCounts counts;
  Evaluator ev(*r.memory_limit_bytes, counts);
  for (std::size_t i = 0; i < plans.size() && i < 3 && plans[i].first <= *r.memory_limit_bytes; ++i) {
    const Candidate c = ev.run(plans[i].second, WrapPolicy::per_block, "per_block k1");
    if (c.fits) return c.label;
  }
  return {};
}

constexpr int kNodeCountsTried = 64;

// The node counts more_gpus tries: from the next one up, or the first whose fully sharded model state
// (ZeRO's 16P/N with nothing else) fits the limit, to kNodeCountsTried counts later or the largest world.
std::pair<int, int> node_counts_tried(const PlanRequest& r) {
  const double params = r.model.is_moe() ? double(count_moe_params(r.model).total()) : double(count_params(r.model).total());
  const double state_bytes = fsdp2_state_bytes(params, 1, PrecisionPolicy{}).total();
  const int per_node = r.cluster.gpus_per_node;
  const int first = std::max(r.cluster.nodes + 1, int(std::ceil(state_bytes / *r.memory_limit_bytes / per_node)));
  return {first, std::min({first + kNodeCountsTried - 1, kMaxWorldSize / per_node, int(input_range::kNodes.max)})};
}

// Whole nodes from the next count up, at the same global batch or at the same batch per GPU; skips counts
// whose fully sharded model state alone exceeds the limit (ZeRO's 16P/N with nothing else), then confirms
// by simulation.
std::string more_gpus(const PlanRequest& r, const Space& s, bool same_batch_per_gpu) {
  const int per_node = r.cluster.gpus_per_node;
  const auto [first, last] = node_counts_tried(r);
  for (int nodes = first; nodes <= last; ++nodes) {
    PlanRequest q = r;
    q.cluster.nodes = nodes;
    if (same_batch_per_gpu) q.global_batch = r.global_batch * nodes / r.cluster.nodes;
    if (same_batch_per_gpu && q.global_batch * r.cluster.nodes != r.global_batch * nodes) continue;
    const std::string plan = fitting_plan(q, s);
    if (!plan.empty())
      return fmt::format("more GPUs: the smallest world size that fits at global batch {} is {} nodes ({} ranks), "
                         "e.g. {}", q.global_batch, nodes, nodes * per_node, plan);
  }
  return {};
}

std::string more_gpus(const PlanRequest& r, const Space& s) {
  if (r.cluster.inter.nics_per_node <= 0) return "more GPUs: the cluster holds one node only";
  std::string same = more_gpus(r, s, false);
  if (!same.empty()) return same;
  std::string scaled = more_gpus(r, s, true);
  const auto [first, last] = node_counts_tried(r);
  const std::string none = fmt::format("no node count from {} to {} fits global batch {}", first, last, r.global_batch);
  return scaled.empty() ? "more GPUs: " + none + ", nor the same batch per GPU" : scaled + " (" + none + ")";
}

// Multiples of the data-parallel degrees of this world size around the requested batch, nearest first.
std::string nearest_batch(const PlanRequest& r, const Space& s) {
  std::set<std::pair<std::int64_t, std::int64_t>> candidates;  // (distance, batch)
  PlanRequest narrowed = r;
  narrowed.space = s.knobs;
  for (const Parallelism& par : parallel_shapes(narrowed)) {
    const std::int64_t dp = par.data_parallel_ranks();
    for (std::int64_t b : {r.global_batch / dp * dp, (r.global_batch / dp + 1) * dp})
      if (b >= dp && b != r.global_batch) candidates.insert({std::abs(b - r.global_batch), b});
  }
  int tried = 0;
  for (const auto& [distance, batch] : candidates) {
    if (++tried > 24) break;
    PlanRequest q = r;
    q.global_batch = batch;
    const std::string plan = fitting_plan(q, s);
    if (!plan.empty())
      return fmt::format("the nearest global batch with a fitting plan on {} ranks is {} (e.g. {})",
                         r.cluster.world_size(), batch, plan);
  }
  return {};
}

}  // namespace

void explain_no_fit(PlanResult& res, const std::vector<ShapeBound>& shapes, const PlanRequest& r, Evaluator& ev) {
  const Space s = effective_space(r);
  const ShapeBound* least = nullptr;
  for (const ShapeBound& b : shapes)
    if (!least || b.least_memory_bound_bytes < least->least_memory_bound_bytes) least = &b;
  if (least) {
    Plan p = least->plan;
    p.recompute = recompute_pattern(least->least_choice, r.model.layers, s.partial);
    double peak = ev.run(p, WrapPolicy::per_block, "per_block k1").metrics.peak_memory_bytes;
    for (const auto& c : ev.all()) peak = std::min(peak, c.metrics.peak_memory_bytes);
    res.least_memory_needed_bytes = peak;
    res.suggestions.push_back(more_gpus(r, s));
  }
  if (const std::string b = nearest_batch(r, s); !b.empty()) res.suggestions.push_back(b);
  if (least)
    res.suggestions.push_back(
        res.least_memory_needed_bytes < res.memory_capacity_bytes
            ? fmt::format("a margin of at most {} (--memory-margin) or a memory limit of at least {} with the {} "
                          "margin (--memory-limit)", gib_text(res.memory_capacity_bytes - res.least_memory_needed_bytes),
                          gib_text(res.least_memory_needed_bytes + res.memory_margin_bytes),
                          gib_text(res.memory_margin_bytes))
            : fmt::format("a memory limit of at least {} with the {} margin (--memory-limit)",
                          gib_text(res.least_memory_needed_bytes + res.memory_margin_bytes),
                          gib_text(res.memory_margin_bytes)));
}

}  // namespace fsdpx
