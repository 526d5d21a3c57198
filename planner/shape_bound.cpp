// planner/shape_bound.cpp — the memory and throughput bounds of shape_bound.h.
#include "planner/shape_bound.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>

#include "core/pipeline.h"
#include "cost_models/compute.h"
#include "cost_models/estimate.h"
#include "planner/shapes.h"
#include "program/segment_work.h"

namespace fsdpx {

namespace {

// Lower bounds on one step's two resources. The compute stream runs the kernels and, serially inside them,
// the TP/CP collectives (program/segment_work.cpp); the data-parallel collectives run on their own
// streams and fabric. Their traffic is bounded by the configuration that moves least: no reshard after
// forward (one all-gather per micro-batch; estimate()'s ZeRO-2 form counts even fewer) and the cheapest
// reduce dtype of the space.
struct Timing {
  double compute_s = 0, comm_s = 0;
};

// Kernel time of one micro-batch's passes of each virtual stage, from the segments the lowering builds
// (program/segment_work.h; identical segments timed once); the serial TP/CP collectives are left out,
// which only shortens. b is the whole backward, or ZB's B with w its W.
struct StagePasses {
  std::vector<double> f, b, w;
};

StagePasses stage_passes(const Plan& p) {
  const Parallelism& par = p.parallelism;
  const bool split = par.pp_schedule == PipelineSchedule::zero_bubble;
  const std::vector<double> zero(std::size_t(virtual_stages(par.pp, par.vpp)), 0.0);
  StagePasses out{zero, zero, zero};
  std::map<std::string, std::array<double, 3>> timed;  // by segment signature
  const StepGroups no_groups;
  auto time_s = [&](const WorkSet& w) { return kernels_time_s(w.kernels, p.cluster.gpu, p.precision.param); };
  for (const Segment& seg : plan_segments(p)) {
    const std::string key = segment_signature(p, seg.first_module, seg.module_count);
    auto it = timed.find(key);
    if (it == timed.end()) {
      const int first = seg.first_module, count = seg.module_count;
      const std::array<double, 3> t{
          time_s(segment_forward_work(p, first, count, no_groups)),
          time_s(segment_backward_work(p, first, count, no_groups, split ? BackwardPart::input : BackwardPart::all)),
          split ? time_s(segment_backward_work(p, first, count, no_groups, BackwardPart::weight)) : 0.0};
      it = timed.emplace(key, t).first;
    }
    const auto v = std::size_t(p.units[std::size_t(seg.unit)].stage);
    out.f[v] += it->second[0], out.b[v] += it->second[1], out.w[v] += it->second[2];
  }
  return out;
}

// A lower bound on a pipelined step's compute stream, for any schedule and unequal stages: pipeline rank
// r starts when the first micro-batch's forward has passed the virtual stages before its first chunk, then
// runs all its passes of m micro-batches one after another; outside ZB its last pass is its first chunk's
// backward, whose gradient must still pass back through those stages (1F1B: (m + p - 1)(F + B) for equal
// stages, Narayanan et al. 2021 §2.2; interleaved (m v + p - 1) per chunk, §2.2.1). ZB-H1 may end on
// weight passes (Qi et al. 2023 §3), so no way back is counted there.
double pipeline_compute_bound_s(const Plan& p) {
  const Parallelism& par = p.parallelism;
  const StagePasses s = stage_passes(p);
  const double m = double(p.grad_accum());
  const bool way_back = par.pp_schedule != PipelineSchedule::zero_bubble;
  double most = 0, before_f = 0, before_b = 0;
  for (int r = 0; r < par.pp; ++r) {
    double work = 0;
    for (int c = 0; c < par.vpp; ++c) {
      const auto v = std::size_t(chunk_stage(c, r, par.pp));
      work += m * (s.f[v] + s.b[v] + s.w[v]);
    }
    most = std::max(most, before_f + work + (way_back ? before_b : 0.0));
    before_f += s.f[std::size_t(r)];
    before_b += s.b[std::size_t(r)];
  }
  return most;
}

// Under pipeline parallelism a stage holds 1/pp of the model and runs on 1/pp of the ranks: estimate()
// runs on one stage's mesh (a stage fills whole nodes or fits in one, shapes.cpp) and its per-GPU terms
// divided by pp are the average stage's (the busiest does at least that); the compute stream also waits
// at least as pipeline_compute_bound_s says. FSDP under PP gathers once and reduces once per step
// (torchtitan's defaults), ZeRO-1's traffic.
Timing timing(const Plan& p, DType reduce, bool no_reshard) {
  TrainingShape ts = training_shape_of(p);
  ts.precision.reduce = reduce;
  const int pp = p.parallelism.pp;
  const bool fsdp = ts.mode == ShardingMode::zero3 || ts.mode == ShardingMode::hsdp;
  if (pp > 1 && (fsdp || ts.mode == ShardingMode::zero2)) ts.mode = ShardingMode::zero1;
  else if (no_reshard && fsdp) ts.mode = ShardingMode::zero2;
  ClusterSpec stage = p.cluster;
  stage.gpus_per_node = std::min(stage.gpus_per_node, ts.world_size());
  stage.nodes = ts.world_size() / stage.gpus_per_node;
  const Estimate e = estimate(p.model, stage, ts);
  const double average_s = (e.compute_time_s + e.tp_cp_comm_time_s) / pp;
  if (pp == 1) return {average_s, e.dp_comm_time_s};
  return {std::max(average_s, pipeline_compute_bound_s(p)), e.dp_comm_time_s / pp};
}

double tps_of(const Plan& p, double step_s) {
  return double(p.training.global_batch) * double(p.training.seq) / step_s / double(p.parallelism.world_size());
}

Plan with(const Plan& base, const std::vector<RecomputeMode>& r) {
  Plan p = base;
  p.recompute = r;
  return p;
}

// Whether the partial family's memory bounds never rise along its members, so that bisection finds the
// first that fits: each rank's bound grows with every block's saved activations (memory_bound.h: in-flight
// counts times bytes) and a fully recomputed block saves less, so nested members (the first k blocks)
// qualify, and without PP every block is on the one rank and only the count matters (every n-th: the
// count floor(L / n) grows along the members). Every n-th block under PP recomputes other blocks on
// other stages at each member: no order.
bool monotone_family(const Plan& p, PartialRecompute partial) {
  return partial == PartialRecompute::first_k || p.parallelism.pp == 1;
}

// Step lower bound of one member (the interpolation of the comment below; its own pipeline bound under PP).
double member_step_s(const Plan& plan, const RecomputeChoice& c, const Space& s, const Timing& none,
                     const Timing& full, DType reduce) {
  const std::int64_t layers = plan.model.layers;
  if (plan.parallelism.pp > 1) {
    const Timing t = timing(with(plan, recompute_pattern(c, layers, s.partial)), reduce, s.knobs.try_no_reshard);
    return std::max(t.compute_s, t.comm_s);
  }
  const double f = double(full_blocks(c.member, layers, s.partial)) / double(layers);
  return std::max(none.compute_s + f * (full.compute_s - none.compute_s), none.comm_s + f * (full.comm_s - none.comm_s));
}

// The partial family: its first member whose memory bound fits, with a throughput bound that holds for
// every member from it on. Without PP the bound is interpolated between none and full (identical blocks:
// compute, TP traffic and saved activations are linear in the recomputed blocks). Under PP the recomputed
// blocks load some stages more than others: each member has its own pipeline bound; nested members
// (first k) only add recompute to every stage, so the first one's bound holds for the later ones, and for
// every n-th block the best bound of the members that could fit is taken.
void add_partial(ShapeBound& b, const PlanRequest& r, const Space& s, const Timing& none, const Timing& full,
                 DType reduce) {
  const std::int64_t layers = r.model.layers;
  const std::vector<int> members = partial_members(layers, s.partial);
  auto fits = [&](std::size_t i) {
    const RecomputeChoice c{RecomputeMode::none, members[i]};
    return memory_lower_bound(with(b.plan, recompute_pattern(c, layers, s.partial))).total() <= *r.memory_limit_bytes;
  };
  const bool monotone = monotone_family(b.plan, s.partial);
  std::size_t lo = 0, hi = members.size();  // monotone: the first fitting member is in [lo, hi)
  while (monotone && lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) hi = mid;
    else lo = mid + 1;
  }
  double best_tps = 0;
  int first = -1;
  for (std::size_t i = lo; i < members.size(); ++i) {
    if (!monotone && !fits(i)) continue;
    const RecomputeChoice c{RecomputeMode::none, members[i]};
    best_tps = std::max(best_tps, tps_of(b.plan, member_step_s(b.plan, c, s, none, full, reduce)));
    if (first < 0) first = int(i);
    if (monotone) break;
  }
  if (first < 0) return;
  const RecomputeChoice c{RecomputeMode::none, members[std::size_t(first)]};
  const double bound = memory_lower_bound(with(b.plan, recompute_pattern(c, layers, s.partial))).total();
  b.options.push_back({c, first, best_tps, bound});
}

}  // namespace

ShapeBound bound_shape(const PlanRequest& r, const Space& s, const Parallelism& par, std::int64_t micro_batch) {
  ShapeBound b;
  b.plan = shape_plan(r, par, micro_batch, RecomputeMode::none);
  const std::int64_t layers = r.model.layers;
  const DType reduce = s.knobs.reduce_dtypes.size() > 1 ? DType::bf16 : s.knobs.reduce_dtypes.front();
  b.choices = s.knobs.uniform_recompute.size() + partial_members(layers, s.partial).size();
  const MemoryBound none_bound = memory_lower_bound(b.plan);
  const Plan full_plan = with(b.plan, std::vector<RecomputeMode>(std::size_t(layers), RecomputeMode::full));
  const MemoryBound full_bound = memory_lower_bound(full_plan);
  b.saved_per_full_block_bytes = std::max(0.0, (none_bound.total() - full_bound.total()) / double(layers));
  b.least_memory_bound_bytes = none_bound.total() + 1;
  for (RecomputeMode m : s.knobs.uniform_recompute) {
    const Plan p = with(b.plan, std::vector<RecomputeMode>(std::size_t(layers), m));
    const MemoryBound mb = memory_lower_bound(p);
    if (mb.total() < b.least_memory_bound_bytes)
      b.least_memory_bound_bytes = mb.total(), b.least_bound = mb, b.least_choice = RecomputeChoice{m, 0};
    if (mb.total() > *r.memory_limit_bytes) continue;
    const Timing t = timing(p, reduce, s.knobs.try_no_reshard);
    b.options.push_back({RecomputeChoice{m, 0}, -1, tps_of(p, std::max(t.compute_s, t.comm_s)), mb.total()});
  }
  if (s.partial != PartialRecompute::none)
    add_partial(b, r, s, timing(b.plan, reduce, s.knobs.try_no_reshard), timing(full_plan, reduce, s.knobs.try_no_reshard),
                reduce);
  std::stable_sort(b.options.begin(), b.options.end(),
                   [](const RecomputeOption& x, const RecomputeOption& y) { return x.tps_bound > y.tps_bound; });
  if (!b.options.empty()) b.tps_bound = b.options.front().tps_bound;
  return b;
}

}  // namespace fsdpx
