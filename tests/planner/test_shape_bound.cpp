// tests/planner/test_shape_bound.cpp — the data-parallel part of a shape's throughput bound
// (planner/shape_bound.h) without pipelining: when no configuration may keep every unit gathered after
// forward (its memory bound exceeds the limit), the bound counts the backward all-gathers of every unit
// but the largest last one (regather_share). Checked against every fitting plan of such shapes, simulated,
// and against the same shapes with memory to spare (where the bound must not count them).
#include <doctest/doctest.h>

#include <map>

#include "core/config_paths.h"
#include "planner/candidates.h"
#include "planner/exhaustive.h"
#include "planner/planner.h"
#include "planner/shape_bound.h"
#include "planner/space.h"

namespace fsdpx {

namespace {

// llama3.1-70b on 4 nodes at tp 8, one micro-batch per rank: dp_shard 4 spans the nodes (no reshard to a
// node's ranks), and every unit kept gathered (17.6 GB of bf16 weights per GPU on top of the sharded
// state) does not fit under 46 GiB while the resharded plans do. Uniform recompute only, to keep the
// exhaustive enumeration small.
PlanRequest tight_request(double limit_gib) {
  PlanRequest r;
  r.model = load_model("llama3.1-70b");
  r.cluster = load_cluster("dgx-h100");
  r.cluster.nodes = 4;
  r.seq = 4096;
  r.global_batch = 4;
  r.memory_limit_bytes = limit_gib * 1024 * 1024 * 1024;
  r.memory_margin_bytes = 0;
  r.space.allow_pp = false;
  r.space.allow_cp = false;
  r.space.allow_hsdp = false;
  r.space.partial_recompute = false;
  r.space.fixed.tp = 8;
  return r;
}

}  // namespace

TEST_CASE("without a pipeline, a shape that cannot keep its units gathered is bounded with their backward gathers") {
  const PlanRequest r = resolve_memory(tight_request(46));
  const Space s = effective_space(r);
  SearchCounts counts;
  Evaluator ev(*r.memory_limit_bytes, counts);
  std::map<std::int64_t, ShapeBound> bounds;  // per micro-batch (one shape: dp_shard 8)
  int fitting = 0, kept_fitting = 0;
  double worst_ratio = 0;
  for_each_plan(r, [&](const SpacePlan& sp) {
    const std::int64_t mb = sp.plan.training.micro_batch;
    if (!bounds.count(mb)) bounds.emplace(mb, bound_shape(r, s, sp.plan.parallelism, mb));
    const ShapeBound& b = bounds.at(mb);
    REQUIRE(b.regather_share > 0.5);  // every wrapping's last unit is far below half the model
    const Candidate c = ev.run(sp.plan, sp.wrapping, sp.wrap_label);
    if (!c.fits) return;
    ++fitting;
    kept_fitting += sp.plan.units.front().reshard_after_forward == 0;
    INFO(c.label << ": " << c.metrics.tokens_per_s_per_gpu << " tokens/s/GPU, bound " << b.tps_bound);
    CHECK(c.metrics.tokens_per_s_per_gpu <= b.tps_bound * (1 + 1e-9));
    worst_ratio = std::max(worst_ratio, c.metrics.tokens_per_s_per_gpu / b.tps_bound);
  });
  CHECK(fitting >= 10);
  CHECK(kept_fitting == 0);  // no plan that keeps its units gathered fits: the premise holds
  MESSAGE("fitting plans " << fitting << ", best simulated / bound " << worst_ratio);
}

TEST_CASE("with memory to spare the bound keeps the ZeRO-2 traffic, and is the looser one") {
  const PlanRequest tight = resolve_memory(tight_request(46)), loose = resolve_memory(tight_request(80));
  const Space st = effective_space(tight), sl = effective_space(loose);
  Parallelism par;
  par.dp_shard = 4;
  par.tp = 8;
  const ShapeBound bt = bound_shape(tight, st, par, 1), bl = bound_shape(loose, sl, par, 1);
  CHECK(bt.regather_share > 0.5);
  CHECK(bl.regather_share == 0);
  // With full recompute on both (the tight request's fastest option), the tight bound is lower.
  auto full_bound = [](const ShapeBound& b) {
    for (const RecomputeOption& o : b.options)
      if (o.member_index < 0 && o.choice.uniform == RecomputeMode::full) return o.tps_bound;
    return 0.0;
  };
  CHECK(full_bound(bt) > 0);
  CHECK(full_bound(bt) < full_bound(bl));
}

}  // namespace fsdpx
