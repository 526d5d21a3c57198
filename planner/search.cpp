// planner/search.cpp — search_plans: stage 1 enumerates parallel shapes x micro-batch x uniform
// recompute, prunes by the analytic memory lower bound (memory_bound.h), orders the survivors by the
// estimate() throughput upper bound and simulates them best-bound-first until the next bound cannot
// beat the best simulated plan or the beam (SearchSpace::shapes_to_simulate) is spent; stage 2 refines
// the best shapes locally (local_search.h). Deterministic: the beam is a count, never a clock.
#include "planner/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "cost_models/estimate.h"
#include "planner/candidates.h"
#include "planner/local_search.h"
#include "planner/memory_bound.h"
#include "planner/results.h"
#include "planner/shapes.h"

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

struct Survivor {
  Plan plan;
  double bound_bytes = 0;
  double tps_bound = 0;  // tokens/s per GPU upper bound (estimate(): perfect overlap)
  std::string key;
};

double throughput_bound(const Plan& p) {
  return estimate(p.model, p.cluster, training_shape_of(p)).tokens_per_s_per_gpu_upper_bound;
}

struct Stage1 {
  std::vector<Survivor> survivors;
  Plan least_plan;
  MemoryBound least_bound;
  double least_bound_bytes = std::numeric_limits<double>::infinity();
};

Stage1 enumerate_shapes(const PlanRequest& r, SearchCounts& counts) {
  Stage1 st;
  for (const Parallelism& par : parallel_shapes(r)) {
    for (std::int64_t mb : micro_batch_choices(r, par.data_parallel_ranks())) {
      for (RecomputeMode rc : {RecomputeMode::none, RecomputeMode::selective, RecomputeMode::selective_op,
                               RecomputeMode::full}) {
        // The CPU model does not re-run op-level SAC's tensor-parallel collectives (executor/runtime).
        if (r.cluster.host_threads && par.tp > 1 && rc == RecomputeMode::selective_op) continue;
        // Sequence parallelism on the CPU splits a micro-batch's tokens evenly across the tp ranks.
        if (r.cluster.host_threads && par.sequence_parallel && (mb * r.seq / par.cp) % par.tp != 0) continue;
        ++counts.considered;
        Plan p = shape_plan(r, par, mb, rc);
        const MemoryBound b = memory_lower_bound(p);
        if (b.total() < st.least_bound_bytes) {
          st.least_bound_bytes = b.total();
          st.least_bound = b;
          st.least_plan = p;
        }
        if (b.total() > *r.memory_limit_bytes) {
          ++counts.pruned_memory;
          continue;
        }
        const double tps = throughput_bound(p);
        std::string key = plan_key(p);
        st.survivors.push_back(Survivor{std::move(p), b.total(), tps, std::move(key)});
      }
    }
  }
  std::sort(st.survivors.begin(), st.survivors.end(), [&](const Survivor& a, const Survivor& b) {
    if (r.objective == Objective::throughput && a.tps_bound != b.tps_bound) return a.tps_bound > b.tps_bound;
    if (a.bound_bytes != b.bound_bytes) return a.bound_bytes < b.bound_bytes;
    if (a.tps_bound != b.tps_bound) return a.tps_bound > b.tps_bound;
    return a.key < b.key;
  });
  return st;
}

// Simulates survivors best-bound-first. Under the throughput objective, stops when the next bound is
// below the best fitting plan simulated so far (it cannot win). The beam counts fitting plans
// (shapes_to_simulate), with at most 8x as many simulations in all, since the memory bound is loose.
std::vector<Candidate> simulate_shapes(const Stage1& st, const PlanRequest& r, Evaluator& ev, SearchCounts& counts,
                                       const ProgressFn& progress) {
  std::vector<Candidate> out;
  double best_tps = 0;
  std::size_t i = 0;
  int fitting = 0;
  const int beam = std::max(1, r.space.shapes_to_simulate);
  const std::size_t cap = std::size_t(8 * beam);
  for (; i < st.survivors.size() && fitting < beam && out.size() < cap; ++i) {
    const Survivor& s = st.survivors[i];
    if (r.objective == Objective::throughput && s.tps_bound < best_tps) break;
    Candidate c = ev.run(s.plan, WrapPolicy::per_block, "per_block k1");
    if (c.fits) {
      best_tps = std::max(best_tps, c.metrics.tokens_per_s_per_gpu);
      ++fitting;
    }
    out.push_back(std::move(c));
    if (progress) progress(0.05 + 0.35 * std::max(double(fitting) / beam, double(out.size()) / double(cap)));
  }
  counts.pruned_bound += std::int64_t(st.survivors.size() - i);
  return out;
}

// Stage-2 starting points: the best fitting stage-1 candidates of distinct parallel shapes.
std::vector<Candidate> refine_starts(std::vector<Candidate> shapes, const PlanRequest& r) {
  std::sort(shapes.begin(), shapes.end(), [&](const Candidate& a, const Candidate& b) { return better(a, b, r.objective); });
  std::vector<Candidate> out;
  std::vector<std::string> seen;
  for (auto& c : shapes) {
    if (!c.fits || int(out.size()) >= r.space.shapes_to_refine) continue;
    const auto& par = c.plan.parallelism;
    const std::string shape = fmt::format("{} {} {} {} {}", par.dp_replicate, par.dp_shard, par.tp, par.cp,
                                          c.plan.training.micro_batch);
    if (std::find(seen.begin(), seen.end(), shape) != seen.end()) continue;
    seen.push_back(shape);
    out.push_back(std::move(c));
  }
  return out;
}

void explain_no_fit(PlanResult& res, const Stage1& st, const PlanRequest& r, Evaluator& ev) {
  if (st.least_plan.units.empty()) return;  // no valid shape at all (batch not divisible)
  // The plan with the smallest bound, simulated, anchors the suggestions; the least peak of any
  // simulated plan is reported.
  const double anchor = ev.run(st.least_plan, WrapPolicy::per_block, "per_block k1").metrics.peak_memory_bytes;
  double least = anchor;
  for (const auto& c : ev.all()) least = std::min(least, c.metrics.peak_memory_bytes);
  res.least_memory_needed_bytes = least;
  res.suggestions = fit_suggestions(r, st.least_plan, st.least_bound, anchor);
}

}  // namespace

PlanResult search_plans(const PlanRequest& request, const ProgressFn& progress) {
  PlanRequest r = request;
  if (!r.memory_limit_bytes) r.memory_limit_bytes = r.cluster.gpu.hbm_bytes;
  PlanResult res;
  res.memory_limit_bytes = *r.memory_limit_bytes;
  Evaluator ev(res.memory_limit_bytes, res.counts);
  const Stage1 st = enumerate_shapes(r, res.counts);
  if (progress) progress(0.05);
  const std::vector<Candidate> shapes = simulate_shapes(st, r, ev, res.counts, progress);
  const std::vector<Candidate> starts = refine_starts(shapes, r);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    refine(starts[i], r, ev);
    if (progress) progress(0.4 + 0.6 * double(i + 1) / double(starts.size()));
  }
  // Local variants count as considered too (each was a distinct plan put to the simulator or cache).
  res.counts.considered += res.counts.simulated + res.counts.reused - std::int64_t(shapes.size());
  finish_result(res, ev.all(), r);
  if (!res.best) explain_no_fit(res, st, r, ev);
  if (progress) progress(1.0);
  return res;
}

}  // namespace fsdpx
