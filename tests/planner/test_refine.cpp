// tests/planner/test_refine.cpp — refine_shape's shortcut for shapes where nothing fits (refine.h): once an
// option does not fit, the option with the least memory bound is simulated next and ends the shape when it
// does not fit either. Checked against every recompute choice of the shape simulated in its default
// configuration: a shape the shortcut rejects has no fitting choice there, its representative's peak is
// the least of them, and it costs fewer simulations than trying every choice.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "core/config_paths.h"
#include "planner/candidates.h"
#include "planner/refine.h"
#include "planner/shape_bound.h"
#include "planner/shapes.h"
#include "planner/space.h"
#include "planner/target.h"

namespace fsdpx {

namespace {

// Every recompute choice the shape's bound lets through (uniform modes, partial members from the first
// whose bound fits), simulated in the default configuration: the least peak, and whether any fits.
struct Everything {
  double least_peak_bytes = 1e300;
  bool any_fits = false;
};

Everything every_choice(const ShapeBound& b, const PlanRequest& r, const Space& s, Evaluator& ev) {
  const std::vector<WrapChoice> wraps = wrap_choices(b.plan, r, s);
  const Config cfg = default_config(b.plan, r, s);
  const std::vector<int> members = partial_members(r.model.layers, s.partial);
  Everything e;
  auto run = [&](const RecomputeChoice& rc) {
    const Plan p = configured_plan(b.plan, wraps, cfg, recompute_pattern(rc, r.model.layers, s.partial));
    const Candidate c = ev.run(p, wraps[cfg.wrap].policy, wraps[cfg.wrap].label);
    e.least_peak_bytes = std::min(e.least_peak_bytes, c.metrics.peak_memory_bytes);
    e.any_fits |= c.fits;
  };
  for (const RecomputeOption& o : b.options) {
    if (o.member_index < 0) {
      run(o.choice);
      continue;
    }
    for (std::size_t i = std::size_t(o.member_index); i < members.size(); ++i)
      run(RecomputeChoice{RecomputeMode::none, members[i]});
  }
  return e;
}

}  // namespace

TEST_CASE("a shape where nothing fits is rejected after its first and its least-memory option, as every choice would be") {
  int rejected = 0, with_choices = 0, shortcut = 0;
  for (const std::string target : {"fsdpx", "torchtitan@0.2.2"}) {
    CAPTURE(target);
    PlanRequest q;
    q.model = load_model("llama3.1-8b");
    q.cluster = load_cluster("dgx-h100");
    q.cluster.nodes = 4;
    q.seq = 8192;
    q.global_batch = 32;
    q.memory_limit_bytes = 24.0 * 1024 * 1024 * 1024;
    q.target = parse_target(target, "test");
    const PlanRequest r = resolve_memory(q);
    const Space s = effective_space(r);
    for (const Parallelism& par : parallel_shapes(r)) {
      const ShapeBound b = bound_shape(r, s, par, 1);
      if (b.options.empty()) continue;
      SearchCounts counts;
      Evaluator ev(*r.memory_limit_bytes, counts);
      double best_tps = 0;
      const Candidate c = refine_shape(b, r, s, ev, best_tps);
      if (c.fits || c.label.empty()) continue;
      INFO(c.label);
      ++rejected;
      with_choices += b.options.size() > 2;
      // The default configuration and each lower all-gather cap or reduce dtype it tried (refine.cpp).
      const std::int64_t configurations =
          1 + std::count_if(s.knobs.all_gather_caps.begin(), s.knobs.all_gather_caps.end(),
                            [&](int k) { return k < default_config(b.plan, r, s).cap; }) +
          std::count_if(s.knobs.reduce_dtypes.begin(), s.knobs.reduce_dtypes.end(),
                        [&](DType t) { return dtype_bytes(t) < dtype_bytes(default_config(b.plan, r, s).reduce); });
      SearchCounts all_counts;
      Evaluator all(*r.memory_limit_bytes, all_counts);
      const Everything e = every_choice(b, r, s, all);
      CHECK_FALSE(e.any_fits);
      CHECK(c.metrics.peak_memory_bytes <= e.least_peak_bytes);
      // Never more than every choice in every configuration; with options between the first and the
      // least, at most every choice in the default configuration and one more per lower configuration.
      // (Every choice when the first option's excess is below what the least saves by the bounds: then an
      // option in between may fit and is tried, refine.cpp; so with cp 8's state divided over the cp
      // ranks, torchtitan's hsdp 4x1 cp 8 tries its three options.)
      CHECK(counts.simulated <= all_counts.simulated * configurations);
      if (b.options.size() > 2) CHECK(counts.simulated <= all_counts.simulated + configurations - 1);
      // The shortcut at work: the first and the least option only, then the least alone per lower
      // configuration (trying every option costs at least three simulations per configuration).
      shortcut += b.options.size() > 2 && counts.simulated <= 2 * configurations;
    }
  }
  CHECK(rejected > 0);
  CHECK(with_choices > 0);
  CHECK(shortcut > 0);
}

}  // namespace fsdpx
