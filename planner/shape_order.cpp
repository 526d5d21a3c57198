// planner/shape_order.cpp — ShapeOrder (shape_order.h).
#include "planner/shape_order.h"

#include <algorithm>


#include "core/errors.h"
#include "planner/shapes.h"

namespace fsdpx {

namespace {

// order_shapes' order (search.cpp before the lazy order): throughput bound down, least memory bound up,
// then enumeration order, as std::stable_sort left them.
bool before(const std::pair<ShapeBound, std::size_t>& a, const std::pair<ShapeBound, std::size_t>& b) {
  if (a.first.tps_bound != b.first.tps_bound) return a.first.tps_bound > b.first.tps_bound;
  if (a.first.least_memory_bound_bytes != b.first.least_memory_bound_bytes)
    return a.first.least_memory_bound_bytes < b.first.least_memory_bound_bytes;
  return a.second < b.second;
}

// Heap order: the top is the shape that comes first.
bool heap_less(const std::pair<ShapeBound, std::size_t>& a, const std::pair<ShapeBound, std::size_t>& b) {
  return before(b, a);
}

}  // namespace

ShapeOrder::ShapeOrder(const PlanRequest& r, const Space& s, SearchCounts& counts) : r_(r), s_(s) {
  PlanRequest narrowed = r;
  narrowed.space = s.knobs;
  choices_per_shape_ = s.knobs.uniform_recompute.size() + partial_members(r.model.layers, s.partial).size();
  PipelinePathMemo paths;
  for (const Parallelism& par : parallel_shapes(narrowed))
    for (std::int64_t mb : micro_batch_choices(narrowed, par)) {
      Plan plan = shape_plan(r, par, mb, RecomputeMode::none);
      const double limit = shape_speed_limit(s, plan, &paths);
      pending_.push_back({limit, pending_.size(), std::move(plan)});
      counts.considered += std::int64_t(choices_per_shape_);
    }
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const Pending& a, const Pending& b) { return a.limit_tps > b.limit_tps; });
}

void ShapeOrder::bound_next_pending() {
  Pending& p = pending_[next_pending_++];
  ShapeBound b = bound_shape(r_, s_, std::move(p.plan), &memory_parts_);
  // The order is exact only if no shape's bound exceeds its limit (shape_bound.h).
  FSDP_CHECK(b.tps_bound <= p.limit_tps * (1 + 1e-12), "shape bound above its speed limit");
  ready_.emplace_back(std::move(b), p.index);
  std::push_heap(ready_.begin(), ready_.end(), heap_less);
  ++bounded_count_;
}

const ShapeBound* ShapeOrder::at(std::size_t i) {
  while (placed_.size() <= i) {
    // A pending shape whose limit reaches the front could come first (or tie): bound it before placing.
    while (next_pending_ < pending_.size() &&
           (ready_.empty() || pending_[next_pending_].limit_tps >= ready_.front().first.tps_bound))
      bound_next_pending();
    if (ready_.empty()) return nullptr;
    std::pop_heap(ready_.begin(), ready_.end(), heap_less);
    placed_.push_back(std::move(ready_.back().first));
    placed_index_.push_back(ready_.back().second);
    ready_.pop_back();
  }
  return &placed_[i];
}

const std::vector<ShapeBound>& ShapeOrder::all() {
  at(pending_.size());
  return placed_;
}

std::vector<const ShapeBound*> ShapeOrder::by_least_memory() {
  all();
  std::vector<std::size_t> order(placed_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const double ma = placed_[a].least_memory_bound_bytes, mb = placed_[b].least_memory_bound_bytes;
    return ma != mb ? ma < mb : placed_index_[a] < placed_index_[b];
  });
  std::vector<const ShapeBound*> out;
  for (std::size_t i : order) out.push_back(&placed_[i]);
  return out;
}

void ShapeOrder::count_pruned(std::size_t from, SearchCounts& counts) const {
  const auto choices = std::int64_t(choices_per_shape_);
  for (std::size_t i = 0; i < placed_.size(); ++i)
    if (placed_[i].options.empty()) counts.pruned_memory += choices;
    else if (i >= from) counts.pruned_bound += choices;
  for (const auto& [b, index] : ready_) (b.options.empty() ? counts.pruned_memory : counts.pruned_bound) += choices;
  counts.pruned_bound += std::int64_t(pending_.size() - next_pending_) * choices;
}

}  // namespace fsdpx
