// planner/search.cpp — search_plans: every parallel shape x micro-batch of the target's space is bounded
// (shape_bound.h: the recompute choices that could fit, each with a throughput upper bound), the shapes
// are refined best-bound-first (refine.h) while their bound can still beat the fastest fitting plan
// simulated so far, and the answer is assembled (results.h), with what pipelining does in a pipelined
// choice. Under the memory objective, shapes go by
// their least memory bound while it is below the least simulated peak. Deterministic: bounds and counts,
// never a clock.
#include "planner/planner.h"

#include <algorithm>
#include <limits>

#include "core/model_spec_moe.h"
#include "planner/candidates.h"
#include "planner/refine.h"
#include "planner/results.h"
#include "planner/shape_bound.h"
#include "planner/shapes.h"
#include "planner/suggestions.h"
#include "simulator/steady_state.h"

namespace fsdpx {

const char* objective_name(Objective o) { return o == Objective::throughput ? "throughput" : "memory"; }

const char* wrap_policy_name(WrapPolicy w) {
  switch (w) {
    case WrapPolicy::per_block: return "per_block";
    case WrapPolicy::fsdp1_size_based: return "fsdp1_size_based";
    case WrapPolicy::simplefsdp_auto: return "simplefsdp_auto";
  }
  return "";
}

namespace {

std::vector<ShapeBound> bound_shapes(const PlanRequest& r, const Space& s, SearchCounts& counts) {
  std::vector<ShapeBound> out;
  PlanRequest narrowed = r;
  narrowed.space = s.knobs;
  for (const Parallelism& par : parallel_shapes(narrowed))
    for (std::int64_t mb : micro_batch_choices(narrowed, par)) {
      ShapeBound b = bound_shape(r, s, par, mb);
      counts.considered += std::int64_t(b.choices);
      if (b.options.empty()) counts.pruned_memory += std::int64_t(b.choices);
      out.push_back(std::move(b));
    }
  return out;
}

void order_shapes(std::vector<ShapeBound>& shapes, Objective objective) {
  std::stable_sort(shapes.begin(), shapes.end(), [objective](const ShapeBound& a, const ShapeBound& b) {
    if (objective == Objective::throughput && a.tps_bound != b.tps_bound) return a.tps_bound > b.tps_bound;
    return a.least_memory_bound_bytes < b.least_memory_bound_bytes;
  });
}

// Throughput: refine while the next bound can beat the fastest fitting plan (shapes are sorted, so the
// first that cannot ends the search).
void search_throughput(const std::vector<ShapeBound>& shapes, const PlanRequest& r, const Space& s, Evaluator& ev,
                       SearchCounts& counts, const ProgressFn& progress) {
  double best_tps = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const ShapeBound& b = shapes[i];
    if (b.options.empty()) continue;
    if (b.tps_bound <= best_tps) {
      for (std::size_t j = i; j < shapes.size(); ++j)
        if (!shapes[j].options.empty()) counts.pruned_bound += std::int64_t(shapes[j].choices);
      break;
    }
    ++counts.shapes_refined;
    refine_shape(b, r, s, ev, best_tps);
    if (progress) progress(0.05 + 0.9 * double(i + 1) / double(shapes.size()));
  }
}

// Families (parallel shapes) the search pruned are shown too: the best-bound shape of each missing family,
// in bound order, is simulated in its default configuration until top_k families have a fitting plan.
void sample_families(const std::vector<ShapeBound>& shapes, const PlanRequest& r, const Space& s, Evaluator& ev) {
  std::vector<std::string> seen;
  for (const Candidate& c : ev.all())
    if (c.fits && std::find(seen.begin(), seen.end(), family_of(c.plan)) == seen.end()) seen.push_back(family_of(c.plan));
  double unused_tps = 0;
  for (const ShapeBound& b : shapes) {
    if (int(seen.size()) > r.top_k) return;
    if (b.options.empty() || std::find(seen.begin(), seen.end(), family_of(b.plan)) != seen.end()) continue;
    if (refine_shape(b, r, s, ev, unused_tps, false).fits) seen.push_back(family_of(b.plan));
  }
}

// Memory: shapes by least memory bound while it is below the least simulated peak that fits.
void search_memory(const std::vector<ShapeBound>& shapes, const PlanRequest& r, const Space& s, Evaluator& ev,
                   SearchCounts& counts) {
  double least_peak = std::numeric_limits<double>::infinity();
  double unused_tps = 0;
  for (const ShapeBound& b : shapes) {
    if (b.options.empty()) continue;
    if (b.least_memory_bound_bytes >= least_peak) {
      counts.pruned_bound += std::int64_t(b.choices);
      continue;
    }
    ++counts.shapes_refined;
    const Candidate c = refine_shape(b, r, s, ev, unused_tps);
    if (c.fits) least_peak = std::min(least_peak, c.metrics.peak_memory_bytes);
  }
}

// What pipelining does in the chosen plan: its stages' bubble, idle time and peaks (the steady state
// extrapolated, simulator/steady_state.h), and the best plan the search simulated without a pipeline.
void report_pipeline(PlanResult& res, const std::vector<Candidate>& all, Objective objective) {
  if (!res.best || res.best->plan.parallelism.pp == 1) return;
  const StepTotals sim = simulate_step_totals(res.best->plan);
  PipelineReport p;
  p.bubble_fraction = sim.bubble_fraction;
  for (const StageSummary& st : sim.stages) {
    p.stage_peak_memory_bytes.push_back(st.peak_memory_bytes);
    p.stage_idle_fraction.push_back(st.idle_fraction);
  }
  res.pipeline = p;
  for (const Candidate& c : all)
    if (c.plan.parallelism.pp == 1 && c.fits &&
        (!res.best_without_pipeline || better(c, *res.best_without_pipeline, objective)))
      res.best_without_pipeline = c;
}

}  // namespace

Framework request_framework(const PlanRequest& request) {
  if (request.framework) return *request.framework;
  return request.target.kind == TargetKind::torchtitan ? Framework::torchtitan : Framework::fsdpx;
}

PlanResult search_plans(const PlanRequest& request, const ProgressFn& progress) {
  refuse_unplanned_model(request.model, "plan request", "/model");
  const PlanRequest r = resolve_memory(request);
  PlanResult res;
  res.memory_limit_bytes = *r.memory_limit_bytes;
  res.memory_margin_bytes = *r.memory_margin_bytes;
  res.memory_capacity_bytes = res.memory_limit_bytes + res.memory_margin_bytes;
  const Space s = effective_space(r);
  Evaluator ev(res.memory_limit_bytes, res.counts);
  std::vector<ShapeBound> shapes = bound_shapes(r, s, res.counts);
  order_shapes(shapes, r.objective);
  if (progress) progress(0.05);
  if (r.objective == Objective::throughput) search_throughput(shapes, r, s, ev, res.counts, progress);
  else search_memory(shapes, r, s, ev, res.counts);
  sample_families(shapes, r, s, ev);
  res.counts.considered += res.counts.simulated + res.counts.reused;  // refinement variants are considered too
  finish_result(res, ev.all(), r);
  report_pipeline(res, ev.all(), r.objective);
  if (!res.best) explain_no_fit(res, shapes, r, ev);
  if (progress) progress(1.0);
  return res;
}

}  // namespace fsdpx
