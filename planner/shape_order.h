// planner/shape_order.h — the shapes of a search (parallel shape x micro-batch) in the order of their
// bounds (throughput bound down, then least memory bound up, then enumeration order), bounded lazily: each
// shape first gets a speed limit (shape_bound.h shape_speed_limit: no recompute, memory ignored, never below
// its bound), and is fully bounded only once its limit could still reach the front of the order. A search
// that stops at a bound therefore never pays for the memory and recompute bounds of shapes behind it.
// Leaves out the memory objective's order (least memory first), which needs every shape bounded (all()).
#pragma once

#include <cstddef>
#include <set>
#include <utility>
#include <vector>

#include "planner/shape_bound.h"

namespace fsdpx {

class ShapeOrder {
 public:
  // Enumerates the shapes of `r` within `s` (shapes.h) and their speed limits; counts every choice as
  // considered.
  ShapeOrder(const PlanRequest& r, const Space& s, SearchCounts& counts);

  // The i-th shape in bound order, bounding shapes as needed; nullptr past the last. Valid until the next
  // call of at() or all().
  const ShapeBound* at(std::size_t i);
  // Every shape bounded, in bound order (for the "no plan fits" explanation and the memory objective).
  const std::vector<ShapeBound>& all();
  // Every shape, least memory bound first, then in enumeration order (the memory objective's order).
  std::vector<const ShapeBound*> by_least_memory();
  // Adds to `counts` the shapes pruned: by the memory bound (bounded, nothing could fit), or by the
  // throughput bound (from position `from` on, the search stopping there, and every shape whose speed limit
  // could not win, never bounded).
  void count_pruned(std::size_t from, SearchCounts& counts) const;
  std::size_t bounded() const { return bounded_count_; }
  std::size_t total() const { return pending_.size(); }

 private:
  struct Pending {
    double limit_tps = 0;
    std::size_t index = 0;  // enumeration order
    Plan plan;
  };
  void bound_next_pending();

  const PlanRequest& r_;
  const Space& s_;
  std::vector<Pending> pending_;              // by speed limit down, then enumeration order
  std::size_t next_pending_ = 0;
  std::vector<std::pair<ShapeBound, std::size_t>> ready_;  // bounded, not yet placed (heap by order)
  std::vector<ShapeBound> placed_;            // the prefix of the order
  std::vector<std::size_t> placed_index_;     // their enumeration indices
  std::size_t bounded_count_ = 0;
  std::size_t choices_per_shape_ = 0;
  MemoryBoundMemo memory_parts_;              // the shapes' memory bounds, shared across dp splits
};

}  // namespace fsdpx
