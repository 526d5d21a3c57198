// planner/exhaustive.h — every plan of a request's space (space.h), for checking the search against
// brute force: shapes x micro-batches x wrappings x reshard x prefetch x all-gather cap x reduce dtype x
// every recompute choice (uniform modes and every member of the partial family). Plans whose memory lower
// bound is above the limit are left out (they cannot fit: the bound never exceeds the simulated peak).
#pragma once

#include <functional>

#include "planner/space.h"

namespace fsdpx {

struct SpacePlan {
  Plan plan;
  WrapPolicy wrapping = WrapPolicy::per_block;
  std::string wrap_label;
};

// Calls `visit` on every plan of the space of `r` (memory resolved with resolve_memory); returns how many.
std::int64_t for_each_plan(const PlanRequest& r, const std::function<void(const SpacePlan&)>& visit);

}  // namespace fsdpx
