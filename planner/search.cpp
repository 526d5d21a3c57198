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

#include "planner/candidates.h"
#include "planner/ep_degrees.h"
#include "planner/refine.h"
#include "planner/results.h"
#include "planner/shape_bound.h"
#include "planner/shape_order.h"
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

// Throughput: refine while the next bound can beat the fastest fitting plan (shapes come in bound order, so
// the first that cannot ends the search, and the shapes behind it are never fully bounded).
// `floor_tps` stands for a plan found before the search (search_plan_above), 0 for none.
void search_throughput(ShapeOrder& shapes, const PlanRequest& r, const Space& s, Evaluator& ev, SearchCounts& counts,
                       const ProgressFn& progress, double floor_tps = 0) {
  double best_tps = floor_tps;
  std::size_t i = 0;
  for (; const ShapeBound* b = shapes.at(i); ++i) {
    if (b->options.empty()) continue;
    if (b->tps_bound <= best_tps) break;
    ++counts.shapes_refined;
    refine_shape(*b, r, s, ev, best_tps, true, best_tps > 0);
    if (progress) progress(std::min(0.95, 0.05 + 0.9 * double(i + 1) / double(shapes.bounded() + 1)));
  }
  shapes.count_pruned(i, counts);
}

// Families (parallel shapes) the search pruned are shown too: the best-bound shape of each missing family,
// in bound order, is simulated in its default configuration until top_k families have a fitting plan.
void sample_families(ShapeOrder& shapes, const PlanRequest& r, const Space& s, Evaluator& ev) {
  std::vector<std::string> seen;
  for (const Candidate& c : ev.all())
    if (c.fits && std::find(seen.begin(), seen.end(), family_of(c.plan)) == seen.end()) seen.push_back(family_of(c.plan));
  double unused_tps = 0;
  const bool fitting_only = !seen.empty();  // a plan fits: a family's sample counts only if it fits
  for (std::size_t i = 0; const ShapeBound* shape = shapes.at(i); ++i) {
    const ShapeBound& b = *shape;
    if (int(seen.size()) > r.top_k) return;
    if (b.options.empty() || std::find(seen.begin(), seen.end(), family_of(b.plan)) != seen.end()) continue;
    if (refine_shape(b, r, s, ev, unused_tps, false, fitting_only).fits) seen.push_back(family_of(b.plan));
  }
}

// A pipelined choice is compared with the best plan without a pipeline (report_pipeline); when the bounds
// pruned every unpipelined shape, the best-bound ones are simulated in their default configuration until
// one fits (at most kUnpipelinedSamples shapes), so that the comparison has a plan to show.
constexpr int kUnpipelinedSamples = 4;

void sample_unpipelined(ShapeOrder& shapes, const PlanRequest& r, const Space& s, Evaluator& ev) {
  const auto fits_unpipelined = [](const Candidate& c) { return c.fits && c.plan.parallelism.pp == 1; };
  if (std::any_of(ev.all().begin(), ev.all().end(), fits_unpipelined)) return;
  double unused_tps = 0;
  int tried = 0;
  for (std::size_t i = 0; const ShapeBound* b = shapes.at(i); ++i) {
    if (b->options.empty() || b->plan.parallelism.pp != 1) continue;
    if (refine_shape(*b, r, s, ev, unused_tps, false).fits || ++tried == kUnpipelinedSamples) return;
  }
}

const Candidate* fastest_fitting(const std::vector<Candidate>& all) {
  const Candidate* best = nullptr;
  for (const Candidate& c : all)
    if (c.fits && (!best || c.metrics.tokens_per_s_per_gpu > best->metrics.tokens_per_s_per_gpu)) best = &c;
  return best;
}

// Memory: shapes by least memory bound while it is below the least simulated peak that fits.
void search_memory(ShapeOrder& order, const PlanRequest& r, const Space& s, Evaluator& ev, SearchCounts& counts) {
  const std::vector<const ShapeBound*> shapes = order.by_least_memory();
  for (const ShapeBound* b : shapes)
    if (b->options.empty()) counts.pruned_memory += std::int64_t(b->choices);
  double least_peak = std::numeric_limits<double>::infinity();
  double unused_tps = 0;
  for (const ShapeBound* shape : shapes) {
    const ShapeBound& b = *shape;
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
// extrapolated, simulator/steady_state.h), and the best plan the search simulated without a pipeline. The
// figures are those of the chosen plan's own evaluation when the search proper simulated it (the same
// call, so the same figures); a sample chosen within the tolerance is simulated again with them.
void report_pipeline(PlanResult& res, const std::vector<Candidate>& all, Objective objective) {
  if (!res.best || res.best->plan.parallelism.pp == 1) return;
  res.pipeline = res.best->pipeline ? *res.best->pipeline : pipeline_report(simulate_step_totals(res.best->plan));
  for (const Candidate& c : all)
    if (c.plan.parallelism.pp == 1 && c.fits &&
        (!res.best_without_pipeline || better(c, *res.best_without_pipeline, objective)))
      res.best_without_pipeline = c;
}

// An empty result with the request's memory budget (resolve_memory filled it).
PlanResult budget_result(const PlanRequest& r) {
  PlanResult res;
  res.memory_limit_bytes = *r.memory_limit_bytes;
  res.memory_margin_bytes = *r.memory_margin_bytes;
  res.memory_capacity_bytes = res.memory_limit_bytes + res.memory_margin_bytes;
  return res;
}

}  // namespace

Framework request_framework(const PlanRequest& request) {
  if (request.framework) return *request.framework;
  return request.target.kind == TargetKind::torchtitan ? Framework::torchtitan : Framework::fsdpx;
}

PlanResult search_plans(const PlanRequest& request, const ProgressFn& progress) {
  refuse_unplanned_request(request, "plan request", "/model");
  const PlanRequest r = resolve_memory(request);
  PlanResult res = budget_result(r);
  const Space s = effective_space(r);
  Evaluator ev(res.memory_limit_bytes, res.counts);
  ShapeOrder shapes(r, s, res.counts);
  if (progress) progress(0.05);
  // The choice comes from the search proper (a sample only where it is within the tolerance with more
  // headroom): only its pipelined plans pay for the records their pipeline report needs.
  ev.set_stage_bubbles(StageBubbles::computed);
  if (r.objective == Objective::throughput) search_throughput(shapes, r, s, ev, res.counts, progress);
  else search_memory(shapes, r, s, ev, res.counts);
  ev.set_stage_bubbles(StageBubbles::skipped);
  sample_families(shapes, r, s, ev);
  if (const Candidate* c = fastest_fitting(ev.all()); c && c->plan.parallelism.pp > 1) sample_unpipelined(shapes, r, s, ev);
  res.counts.considered += res.counts.simulated + res.counts.reused;  // refinement variants are considered too
  finish_result(res, ev.all(), r);
  report_pipeline(res, ev.all(), r.objective);
  if (!res.best) explain_no_fit(res, shapes.all(), r, ev);
  if (progress) progress(1.0);
  return res;
}

std::optional<Candidate> search_plan_above(const PlanRequest& request, double floor_tps) {
  if (request.objective != Objective::throughput) return search_plans(request).best;
  refuse_unplanned_request(request, "plan request", "/model");
  const PlanRequest r = resolve_memory(request);
  PlanResult res = budget_result(r);
  Evaluator ev(res.memory_limit_bytes, res.counts);
  const Space s = effective_space(r);
  ShapeOrder order(r, s, res.counts);
  search_throughput(order, r, s, ev, res.counts, {}, floor_tps);
  finish_result(res, ev.all(), r);
  if (!res.best || res.best->metrics.tokens_per_s_per_gpu < floor_tps) return {};
  return res.best;
}

}  // namespace fsdpx
