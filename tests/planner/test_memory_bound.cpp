// tests/planner/test_memory_bound.cpp — the pipelined terms of the planner's memory lower bound
// (planner/memory_bound.h): the accumulated gradients in the dtype the lowering holds them (a flat unit's
// reduce dtype, autograd's param dtype), the gathered block and the backward working bytes at a backward's
// start stay below the simulated peak for every schedule, recompute mode, reshard choice and micro-batch
// count (one micro-batch included), and a flat unit's fp32 gradients count more than its bf16 ones; without
// a pipeline, the units a plan keeps gathered after forward, and a configured plan's gathered unit with the
// other units' gathers certainly live at its backward. The unpipelined bound is checked in
// test_search.cpp too.
#include <doctest/doctest.h>

#include <algorithm>

#include "core/config_paths.h"
#include "planner/backward_gather_bound.h"
#include "planner/kept_gathered.h"
#include "planner/memory_bound.h"
#include "planner/planner.h"
#include "planner/shapes.h"
#include "planner/space.h"
#include "planner/target.h"
#include "simulator/steady_state.h"

namespace fsdpx {

namespace {

PlanRequest pipelined_request(const char* target) {
  PlanRequest r;
  r.model = load_model("llama3.1-8b");
  r.cluster = load_cluster("dgx-h100");
  r.cluster.nodes = 2;
  r.seq = 4096;
  r.global_batch = 32;
  r.target = parse_target(target, "test");
  r.space.allow_tp = false;
  r.space.allow_cp = false;
  return r;
}

}  // namespace

TEST_CASE("the pipelined memory bound stays below the simulated peak and near it") {
  int checked = 0;
  double least_ratio = 1;
  for (const char* target : {"fsdpx", "torchtitan@0.2.2"}) {
    const PlanRequest r = pipelined_request(target);
    for (const Parallelism& par : parallel_shapes(r)) {
      if (par.pp < 2) continue;
      for (std::int64_t mb : micro_batch_choices(r, par))
        for (RecomputeMode rc : {RecomputeMode::none, RecomputeMode::selective_op, RecomputeMode::full})
          for (int reshard : {1, 0}) {
            Plan p = shape_plan(r, par, mb, rc);
            for (PlanUnit& u : p.units) u.reshard_after_forward = reshard;
            const double bound = memory_lower_bound(p).total();
            const double peak = simulate_step_totals(p).peak_memory_total_bytes;
            INFO(target << " " << pipeline_schedule_name(par.pp_schedule) << " pp " << par.pp << " vpp " << par.vpp
                        << " dp " << par.dp_replicate << "x" << par.dp_shard << " mb " << mb << " recompute "
                        << int(rc) << " reshard " << reshard << ": bound " << bound << " peak " << peak << " micro-batches " << p.grad_accum());
            CHECK(bound <= peak);
            least_ratio = std::min(least_ratio, bound / peak);
            ++checked;
          }
    }
  }
  CHECK(checked >= 40);
  MESSAGE("least bound / peak over pipelined plans: " << least_ratio);
  CHECK(least_ratio >= 0.3);  // and is not vacuous
}

TEST_CASE("without a pipeline, the units kept gathered after forward count, and stay below the simulated peak") {
  // reshard_after_forward 0 keeps every unit gathered until its backward, an int g a copy over g ranks
  // (program/lower_units.cpp): all are alive when the last forward op starts.
  PlanRequest r = pipelined_request("fsdpx");
  r.space.allow_pp = false;
  int checked = 0;
  for (const Parallelism& par : parallel_shapes(r)) {
    if (par.pp != 1 || par.dp_shard < 2) continue;
    for (RecomputeMode rc : {RecomputeMode::none, RecomputeMode::full}) {
      const Plan resharded = shape_plan(r, par, 1, rc);
      const double base = memory_lower_bound(resharded).total();
      for (int reshard : {0, 8}) {
        if (reshard > 1 && par.dp_shard <= reshard) continue;
        Plan p = resharded;
        for (PlanUnit& u : p.units) u.reshard_after_forward = reshard;
        const double bound = memory_lower_bound(p).total();
        const double peak = simulate_step_totals(p).peak_memory_total_bytes;
        INFO("dp " << par.dp_replicate << "x" << par.dp_shard << " recompute " << int(rc) << " reshard " << reshard
                   << ": bound " << bound << " (resharded " << base << ") peak " << peak);
        CHECK(bound <= peak);
        CHECK(bound > base);  // the kept gathers count
        ++checked;
      }
      // The bound the planner takes for "every unit kept" (kept_gathered_bound) is the reshard-0 plan's.
      Plan kept = resharded;
      for (PlanUnit& u : kept.units) u.reshard_after_forward = 0;
      CHECK(kept_gathered_bound(resharded, memory_lower_bound(resharded)).total() ==
            doctest::Approx(memory_lower_bound(kept).total()).epsilon(1e-12));
    }
  }
  CHECK(checked >= 6);
}

TEST_CASE("the pipelined bound holds a flat unit's gradients in its reduce dtype, and more than with bf16") {
  // fsdpx's flat units accumulate gradients in the reduce dtype (program/lower.cpp): fp32 holds twice what
  // bf16 does, and the bound (over the accumulated gradients of a stage) must see the difference.
  const PlanRequest r = pipelined_request("fsdpx");
  int checked = 0;
  for (const Parallelism& par : parallel_shapes(r)) {
    if (par.pp < 2 || par.pp_schedule != PipelineSchedule::one_f_one_b || par.dp_replicate > 1) continue;
    Plan fp32 = shape_plan(r, par, 1, RecomputeMode::full);
    fp32.precision.reduce = DType::fp32;
    Plan bf16 = fp32;
    bf16.precision.reduce = DType::bf16;
    const double hi = memory_lower_bound(fp32).total(), lo = memory_lower_bound(bf16).total();
    INFO("pp " << par.pp << ": fp32 " << hi << " bf16 " << lo);
    CHECK(hi > lo);
    CHECK(hi <= simulate_step_totals(fp32).peak_memory_total_bytes);
    ++checked;
  }
  CHECK(checked >= 1);
}

// The configured plan's bound (planner/backward_gather_bound.h: a block unit gathered with its unsharded
// gradient at its first backward op, the activations saved up to it) stays below the simulated peak for
// every wrapping the target offers (per_block k1 to k4, with the embedding and head folded in, FSDP1's
// size-based and SimpleFSDP's), reshard choice, recompute mode and a partial pattern, on both targets
// (fsdpx's flat reduce-dtype gradients, PyTorch autograd's), and every prefetch depth and all-gather cap
// of the space (the other units' gathers certainly live, simulator/certain_order.h, depend on them); and it
// is not vacuous: for a wrapping of several blocks per unit it exceeds the shape's bound (memory_bound.h) by
// at least one such unit's gather, and the certain gathers raise it further on many plans.
TEST_CASE("the configured bound counts a wrapping's gathered unit and gradient, and stays below the simulated peak") {
  int checked = 0, raised = 0, with_gathers = 0;
  double least_gap_bytes = 1e30;
  for (const char* target : {"fsdpx", "torchtitan@0.2.2"}) {
    PlanRequest q = pipelined_request(target);
    q.space.allow_pp = false;
    q.space.allow_tp = true;
    const PlanRequest r = resolve_memory(q);
    const Space s = effective_space(r);
    for (const Parallelism& par : parallel_shapes(r)) {
      if (par.pp != 1 || par.dp_shard < 2) continue;
      const Plan shape = shape_plan(r, par, 1, RecomputeMode::none);
      const std::vector<WrapChoice> wraps = wrap_choices(shape, r, s);
      const std::vector<int> members = partial_members(r.model.layers, s.partial);
      std::vector<std::vector<RecomputeMode>> patterns{
          recompute_pattern(RecomputeChoice{RecomputeMode::none, 0}, r.model.layers, s.partial),
          recompute_pattern(RecomputeChoice{RecomputeMode::full, 0}, r.model.layers, s.partial)};
      if (!members.empty())
        patterns.push_back(recompute_pattern(RecomputeChoice{RecomputeMode::none, members[members.size() / 2]},
                                             r.model.layers, s.partial));
      auto check = [&](const Config& cfg, const std::vector<RecomputeMode>& pattern) {
        const Plan p = configured_plan(shape, wraps, cfg, pattern);
        ConfiguredMemoryBound configured(p);
        const double gather_bound = configured.total(p.recompute);
        configured.count_certain_gathers();
        const double bound = configured.total(p.recompute);
        const double shape_bound = memory_lower_bound(p).total();
        const double peak = simulate_step_totals(p).peak_memory_total_bytes;
        INFO(target << " dp " << par.dp_replicate << "x" << par.dp_shard << " tp " << par.tp << " "
                    << wraps[cfg.wrap].label << " reshard " << cfg.reshard << " prefetch " << cfg.prefetch << " cap "
                    << cfg.cap << " full blocks " << std::count(p.recompute.begin(), p.recompute.end(), RecomputeMode::full)
                    << ": bound " << bound << " (shape " << shape_bound << ", without other gathers " << gather_bound
                    << ") peak " << peak);
        CHECK(bound <= peak);
        CHECK(bound >= gather_bound);
        CHECK(gather_bound >= shape_bound);
        // The refiner lowers only where the guess could prune (planner/refine.cpp cannot_fit): a guess below
        // what the lowering finds would lose prunings, never soundness.
        CHECK(configured.guessed_total(p.recompute) >= bound);
        raised += bound > shape_bound && p.units.size() < std::size_t(r.model.layers);
        with_gathers += bound > gather_bound;
        least_gap_bytes = std::min(least_gap_bytes, peak - bound);
        ++checked;
      };
      // Every pattern in the default prefetch depth and cap, the first two (none, full) in the others.
      for (std::size_t w = 0; w < wraps.size(); ++w)
        for (int reshard : reshard_choices(shape, r, s))
          for (int prefetch : s.knobs.prefetch_depths)
            for (int cap : s.knobs.all_gather_caps) {
              Config cfg = default_config(shape, r, s);
              const bool default_knobs = prefetch == cfg.prefetch && cap == cfg.cap;
              cfg.wrap = w;
              cfg.reshard = reshard;
              cfg.prefetch = prefetch;
              cfg.cap = cap;
              for (std::size_t i = 0; i < patterns.size(); ++i)
                if (default_knobs || i < 2) check(cfg, patterns[i]);
            }
    }
  }
  MESSAGE(checked << " configured plans, " << raised << " raised above the shape's bound with several blocks per unit, "
                  << with_gathers << " raised by other units' certain gathers; least peak - bound " << least_gap_bytes
                  << " bytes");
  CHECK(checked >= 100);
  CHECK(raised >= 10);
  CHECK(with_gathers >= 100);
}

// A pipelined plan keeping every unit gathered holds, when its rank's last unit starts its first backward,
// every unit gathered and every block unit's unsharded gradient (backward_gather_bound.cpp
// pipelined_kept_bytes): the configured bound counts them and stays below the simulated peak, for every
// schedule but ZB, tp, micro-batch, recompute mode and reduce dtype; it raises the bound where the shape
// bound's one gathered block falls short (405B on 32 nodes, fsdp 16 tp 4 pp 4 interleaved x4, no reshard:
// a peak of 215.6 GB against a shape bound of 73.6 GB).
TEST_CASE("the configured bound of a pipelined plan counts the units it keeps gathered, below the simulated peak") {
  int checked = 0, raised = 0;
  double least_ratio = 1;
  for (const char* target : {"fsdpx", "torchtitan@0.2.2"}) {
    for (const bool tp : {false, true}) {
      PlanRequest r = pipelined_request(target);
      r.space.allow_tp = tp;
      for (const Parallelism& par : parallel_shapes(r)) {
        if (par.pp < 2 || par.pp_schedule == PipelineSchedule::zero_bubble || (tp && par.tp == 1)) continue;
        for (std::int64_t mb : micro_batch_choices(r, par))
          for (RecomputeMode rc : {RecomputeMode::none, RecomputeMode::full})
            for (DType reduce : {DType::bf16, DType::fp32}) {
              Plan p = shape_plan(r, par, mb, rc);
              for (PlanUnit& u : p.units) u.reshard_after_forward = 0;
              p.precision.reduce = reduce;
              const double shape = memory_lower_bound(p).total();
              const double bound = ConfiguredMemoryBound(p).total(p.recompute);
              const double peak = simulate_step_totals(p).peak_memory_total_bytes;
              INFO(target << " " << pipeline_schedule_name(par.pp_schedule) << " pp " << par.pp << " vpp " << par.vpp
                          << " tp " << par.tp << " dp " << par.dp_replicate << "x" << par.dp_shard << " mb " << mb
                          << " recompute " << int(rc) << " reduce " << dtype_name(reduce) << ": bound " << bound << " shape " << shape
                          << " peak " << peak << " micro-batches " << p.grad_accum());
              CHECK(bound <= peak);
              CHECK(bound >= shape);
              raised += bound > shape;
              least_ratio = std::min(least_ratio, bound / peak);
              ++checked;
            }
      }
    }
  }
  MESSAGE("pipelined plans keeping their units gathered: " << checked << ", bound raised on " << raised
                                                           << ", least bound / peak " << least_ratio);
  CHECK(checked >= 40);
  CHECK(raised >= 50);
}

}  // namespace fsdpx
