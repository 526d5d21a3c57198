// planner/exhaustive.cpp — for_each_plan (exhaustive.h): the nested loops over space.h's lists.
#include "planner/exhaustive.h"

#include "planner/memory_bound.h"
#include "planner/shapes.h"

namespace fsdpx {

namespace {

std::vector<RecomputeChoice> all_recompute(const PlanRequest& r, const Space& s) {
  std::vector<RecomputeChoice> out;
  for (RecomputeMode m : s.knobs.uniform_recompute) out.push_back({m, 0});
  for (int member : partial_members(r.model.layers, s.partial)) out.push_back({RecomputeMode::none, member});
  return out;
}

std::vector<Config> all_configs(const Plan& shape, const PlanRequest& r, const Space& s, std::size_t wraps) {
  std::vector<Config> out;
  for (std::size_t w = 0; w < wraps; ++w)
    for (int g : reshard_choices(shape, r, s))
      for (int d : s.knobs.prefetch_depths)
        for (int c : s.knobs.all_gather_caps)
          for (DType t : s.knobs.reduce_dtypes) out.push_back(Config{w, g, d, c, t});
  return out;
}

}  // namespace

std::int64_t for_each_plan(const PlanRequest& request, const std::function<void(const SpacePlan&)>& visit) {
  const PlanRequest r = resolve_memory(request);
  const Space s = effective_space(r);
  PlanRequest narrowed = r;
  narrowed.space = s.knobs;
  std::int64_t n = 0;
  for (const Parallelism& par : parallel_shapes(narrowed))
    for (std::int64_t mb : micro_batch_choices(narrowed, par)) {
      const Plan shape = shape_plan(r, par, mb, RecomputeMode::none);
      const std::vector<WrapChoice> wraps = wrap_choices(shape, r, s);
      const std::vector<Config> configs = all_configs(shape, r, s, wraps.size());
      for (const RecomputeChoice& rc : all_recompute(r, s)) {
        const std::vector<RecomputeMode> pattern = recompute_pattern(rc, r.model.layers, s.partial);
        for (const Config& c : configs) {
          Plan p = configured_plan(shape, wraps, c, pattern);
          if (memory_lower_bound(p).total() > *r.memory_limit_bytes) continue;
          visit(SpacePlan{std::move(p), wraps[c.wrap].policy, wraps[c.wrap].label});
          ++n;
        }
      }
    }
  return n;
}

}  // namespace fsdpx
