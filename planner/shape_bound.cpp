// planner/shape_bound.cpp — the memory and throughput bounds of shape_bound.h.
#include "planner/shape_bound.h"

#include "planner/ep_degrees.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "core/pipeline.h"
#include "cost_models/communication.h"
#include "cost_models/compute.h"
#include "cost_models/estimate.h"
#include "cost_models/mesh.h"
#include "cost_models/stack_costs.h"
#include "planner/kept_gathered.h"
#include "planner/pipeline_path.h"
#include "planner/shapes.h"
#include "program/group_members.h"
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

// Compute-stream time of one micro-batch's passes of each virtual stage, from the segments the lowering
// builds (program/segment_work.h; identical segments timed once): kernels and the serial TP/CP
// collectives, timed as the simulator times them (simulator/op_timing.cpp) on the groups the mesh gives
// them (cost_models/mesh.h), and an MoE block's dispatch/combine all-to-alls on its ep group as the
// lowering lays it out (program/lower.cpp make_groups). A stack whose Transformer Engine hides TP
// collectives behind GEMMs counts none of its TP/CP collectives (its overlap hides only tp exchanges,
// simulator/op_timing.cpp), and the FSDP copies the simulator adds are left out: both only shorten. b is
// the whole backward, or ZB's B with w its W.

// One segment's (f, b, w) for a plan, memoised by segment signature (the work is identical).
class PassTimer {
 public:
  explicit PassTimer(const Plan& p) : p_(p), serial_(!stack_costs(p.framework, p.compiled).te_tp_overlap) {
    const Parallelism& par = p.parallelism;
    const int gpn = p.cluster.gpus_per_node;
    shapes_[0] = mesh_axis_group(par.tp, 1, gpn);
    shapes_[1] = mesh_axis_group(par.cp, par.tp, gpn);
    if (par.tp > 1) groups_.tp = 0;
    if (par.cp > 1) groups_.cp = 1;
    if (par.ep > 1) {
      const Mesh mesh{par.dp_replicate, par.dp_shard, par.cp, par.tp};
      shapes_[2] = group_shape(mesh, ProcessGroup{GroupKind::ep, {}, par.ep}, gpn);
      groups_.ep = 2;
    }
  }
  // The segment's passes under `plan` (the timer's shape with its own recompute).
  const std::array<double, 3>& time(const Plan& plan, int first, int count) {
    const std::string key = segment_signature(plan, first, count);
    auto it = timed_.find(key);
    if (it != timed_.end()) return it->second;
    const bool split = plan.parallelism.pp_schedule == PipelineSchedule::zero_bubble;
    const std::array<double, 3> t{
        time_s(segment_forward_work(plan, first, count, groups_)),
        time_s(segment_backward_work(plan, first, count, groups_, split ? BackwardPart::input : BackwardPart::all)),
        split ? time_s(segment_backward_work(plan, first, count, groups_, BackwardPart::weight)) : 0.0};
    return timed_.emplace(key, t).first->second;
  }

 private:
  double time_s(const WorkSet& w) const {
    double t = kernels_time_s(w.kernels, p_.cluster.gpu, p_.precision.param);
    for (const SerialCollective& sc : w.serial_comms)
      if (serial_ || sc.group == groups_.ep)
        t += sc.count * collective_time_s(sc.kind, sc.bytes, shapes_[std::size_t(sc.group)], p_.cluster);
    return t;
  }
  const Plan& p_;
  bool serial_;
  std::array<GroupShape, 3> shapes_{};
  StepGroups groups_;
  std::map<std::string, std::array<double, 3>> timed_;
};

StagePasses stage_passes(const Plan& p, PassTimer& timer) {
  const Parallelism& par = p.parallelism;
  const std::vector<double> zero(std::size_t(virtual_stages(par.pp, par.vpp)), 0.0);
  StagePasses out{zero, zero, zero};
  for (const Segment& seg : plan_segments(p)) {
    const std::array<double, 3>& t = timer.time(p, seg.first_module, seg.module_count);
    const auto v = std::size_t(p.units[std::size_t(seg.unit)].stage);
    out.f[v] += t[0], out.b[v] += t[1], out.w[v] += t[2];
  }
  return out;
}

StagePasses stage_passes(const Plan& p) {
  PassTimer timer(p);
  return stage_passes(p, timer);
}

// Whether a shape's step is bounded by its ranks' compute streams walked pass by pass (pipeline_path_s):
// under pipelining, and for an MoE model at any pp, whose estimate() has no timing (ep_degrees.h); with
// pp = 1 the path is the one rank's m x (F + B + W).
bool walks_passes(const Plan& p) { return p.parallelism.pp > 1 || p.model.is_moe(); }

// Under pipeline parallelism a stage holds 1/pp of the model and runs on 1/pp of the ranks: estimate()
// runs on one stage's mesh (a stage fills whole nodes or fits in one, shapes.cpp) and its per-GPU terms
// divided by pp are the average stage's (the busiest does at least that). FSDP under PP gathers once and
// reduces once per step (torchtitan's defaults), ZeRO-1's traffic. estimate() reads one recompute mode
// for every block: partial patterns are interpolated by the caller.
// `regather` (regather_share) is the share of the parameters every configuration gathers again for
// backward: ZeRO-2's traffic plus that share of the backward all-gathers ZeRO-3 adds (estimate()'s zero3
// k (2 ag + rs) less zero2's k rs + ag is (2k - 1) ag; a share of one all-gather's bytes takes at most that
// share of its time, latency included).
Timing average_timing(const Plan& p, DType reduce, bool no_reshard, double regather = 0) {
  if (p.model.is_moe()) return {moe_compute_floor_s(p), 0.0};  // estimate() has no MoE timing (ep_degrees.h)
  TrainingShape ts = training_shape_of(p);
  ts.precision.reduce = reduce;
  const int pp = p.parallelism.pp;
  const ShardingMode mode = ts.mode;
  const bool fsdp = ts.mode == ShardingMode::zero3 || ts.mode == ShardingMode::hsdp;
  if (pp > 1 && (fsdp || ts.mode == ShardingMode::zero2)) ts.mode = ShardingMode::zero1;
  else if (no_reshard && fsdp) ts.mode = ShardingMode::zero2;
  ClusterSpec stage = p.cluster;
  stage.gpus_per_node = std::min(stage.gpus_per_node, ts.world_size());
  stage.nodes = ts.world_size() / stage.gpus_per_node;
  const Estimate e = estimate(p.model, stage, ts);
  Timing t{(e.compute_time_s + e.tp_cp_comm_time_s) / pp, e.dp_comm_time_s / pp};
  if (regather > 0 && pp == 1 && fsdp && ts.mode == ShardingMode::zero2) {
    ts.mode = mode;
    const double k = double(ts.grad_accum);
    const double ag_s = (estimate(p.model, stage, ts).dp_comm_time_s - e.dp_comm_time_s) / (2 * k - 1);
    t.comm_s += regather * k * std::max(0.0, ag_s);
  }
  return t;
}

double tps_of(const Plan& p, double step_s) {
  return double(p.training.global_batch) * double(p.training.seq) / step_s / double(p.parallelism.world_size());
}

Plan with(const Plan& base, const std::vector<RecomputeMode>& r) {
  Plan p = base;
  p.recompute = r;
  return p;
}

// The partial family's ends, none and every block fully recomputed: blocks are identical, so a pattern's
// average compute and traffic are linear in its recomputed blocks, and under PP each stage's passes are
// linear in the blocks it recomputes (blocks[v] per virtual stage v).
struct FamilyEnds {
  Timing none, full;
  StagePasses none_passes, full_passes;  // under PP
  std::vector<int> block_stage;          // per block, its virtual stage
  std::vector<int> blocks;               // per virtual stage
  // MoE models, whose dense leading blocks and MoE blocks differ: per block, what recomputing it fully
  // adds to its stage's f, b and w (empty for dense models, whose blocks are identical).
  std::vector<std::array<double, 3>> full_extra;
};

// Per uniform recompute mode, its average terms and (under PP) its stages' passes, each computed once per
// shape: the uniform options and the partial family's ends share them.
class ModeTerms {
 public:
  ModeTerms(const Plan& shape, DType reduce, bool no_reshard, double regather)
      : shape_(shape), reduce_(reduce), no_reshard_(no_reshard), regather_(regather), timer_(shape) {}
  // The shape with mode m on every block, copied once per mode.
  const Plan& plan(RecomputeMode m) {
    auto& p = plans_[std::size_t(m)];
    if (!p) p = with(shape_, std::vector<RecomputeMode>(std::size_t(shape_.model.layers), m));
    return *p;
  }
  const Timing& timing(RecomputeMode m) {
    auto& t = timing_[std::size_t(m)];
    if (!t) t = average_timing(plan(m), reduce_, no_reshard_, regather_);
    return *t;
  }
  const StagePasses& passes(RecomputeMode m) {
    auto& s = passes_[std::size_t(m)];
    if (!s) s = stage_passes(plan(m), timer_);
    return *s;
  }
  PassTimer& timer() { return timer_; }
  // A uniform mode's step bound: the average terms, and under PP the compute stream also waits at least as
  // pipeline_path_s says.
  double uniform_step_s(RecomputeMode m) {
    const Timing& t = timing(m);
    // The path reads the shape's parallelism and micro-batch count, which the mode does not change.
    const double path_s = walks_passes(shape_) ? pipeline_path_s(shape_, passes(m)) : 0.0;
    return std::max({t.compute_s, path_s, t.comm_s});
  }

 private:
  const Plan& shape_;
  DType reduce_;
  bool no_reshard_;
  double regather_;
  std::array<std::optional<Plan>, 4> plans_;
  std::array<std::optional<Timing>, 4> timing_;
  std::array<std::optional<StagePasses>, 4> passes_;
  PassTimer timer_;
};

FamilyEnds family_ends(const Plan& none_plan, ModeTerms& terms) {
  FamilyEnds e{terms.timing(RecomputeMode::none), terms.timing(RecomputeMode::full), {}, {},
               std::vector<int>(std::size_t(none_plan.model.layers), 0), {}, {}};
  if (!walks_passes(none_plan)) return e;
  e.none_passes = terms.passes(RecomputeMode::none);
  e.full_passes = terms.passes(RecomputeMode::full);
  e.blocks.assign(e.none_passes.f.size(), 0);
  for (const PlanUnit& u : none_plan.units)
    for (const std::string& name : u.modules)
      if (name.rfind("block.", 0) == 0) {
        e.block_stage[std::size_t(std::stoi(name.substr(6)))] = u.stage;
        ++e.blocks[std::size_t(u.stage)];
      }
  if (none_plan.model.is_moe()) {
    const Plan& full = terms.plan(RecomputeMode::full);
    for (int i = 0; i < int(none_plan.model.layers); ++i) {
      const std::array<double, 3> n = terms.timer().time(none_plan, i + 1, 1);
      const std::array<double, 3>& f = terms.timer().time(full, i + 1, 1);
      e.full_extra.push_back({f[0] - n[0], f[1] - n[1], f[2] - n[2]});
    }
  }
  return e;
}

// Step lower bound of a pattern of none and full blocks (a partial member), from the family's ends.
double pattern_step_s(const Plan& plan, const FamilyEnds& e, const std::vector<RecomputeMode>& pattern) {
  const auto full_count = std::count(pattern.begin(), pattern.end(), RecomputeMode::full);
  const double f = double(full_count) / double(pattern.size());
  const double compute_s = e.none.compute_s + f * (e.full.compute_s - e.none.compute_s);
  const double comm_s = e.none.comm_s + f * (e.full.comm_s - e.none.comm_s);
  if (!walks_passes(plan)) return std::max(compute_s, comm_s);
  std::vector<int> recomputed(e.blocks.size(), 0);
  StagePasses s = e.none_passes;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != RecomputeMode::full) continue;
    const auto v = std::size_t(e.block_stage[i]);
    ++recomputed[v];
    if (e.full_extra.empty()) continue;
    s.f[v] += e.full_extra[i][0], s.b[v] += e.full_extra[i][1], s.w[v] += e.full_extra[i][2];
  }
  for (std::size_t v = 0; v < s.f.size() && e.full_extra.empty(); ++v) {
    const double x = e.blocks[v] > 0 ? double(recomputed[v]) / double(e.blocks[v]) : 0.0;
    s.f[v] += x * (e.full_passes.f[v] - e.none_passes.f[v]);
    s.b[v] += x * (e.full_passes.b[v] - e.none_passes.b[v]);
    s.w[v] += x * (e.full_passes.w[v] - e.none_passes.w[v]);
  }
  return std::max({compute_s, pipeline_path_s(plan, s), comm_s});
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

// The partial family: its first member whose memory bound fits, with a throughput bound that holds for
// every member from it on (pattern_step_s). More recomputed blocks never shorten a step: where the members
// are nested (the first k blocks) or only their count matters (no PP), the first member that could fit
// bounds the later ones. Every n-th block under PP recomputes other blocks on other stages at each n: the
// best bound of the members that could fit is the family's, memory checked only where it could raise it.
void add_partial(ShapeBound& b, const PlanRequest& r, const Space& s, const MemoryBoundModel& memory,
                 double full_bound_bytes, ModeTerms& terms) {
  // A member saves at most what every block fully recomputed saves: if that does not fit, none does.
  if (full_bound_bytes > *r.memory_limit_bytes) return;
  const FamilyEnds ends = family_ends(b.plan, terms);
  const std::int64_t layers = r.model.layers;
  const std::vector<int> members = partial_members(layers, s.partial);
  auto pattern = [&](std::size_t i) { return recompute_pattern({RecomputeMode::none, members[i]}, layers, s.partial); };
  auto bound_bytes = [&](std::size_t i) { return memory.bound(pattern(i)).total(); };
  auto fits = [&](std::size_t i) { return bound_bytes(i) <= *r.memory_limit_bytes; };
  std::size_t first = 0;
  if (monotone_family(b.plan, s.partial)) {
    std::size_t hi = members.size();  // the first fitting member is in [first, hi)
    while (first < hi) {
      const std::size_t mid = first + (hi - first) / 2;
      if (fits(mid)) hi = mid;
      else first = mid + 1;
    }
  } else {
    while (first < members.size() && !fits(first)) ++first;
  }
  if (first == members.size()) return;
  double best_step_s = pattern_step_s(b.plan, ends, pattern(first));
  for (std::size_t i = first + 1; i < members.size() && !monotone_family(b.plan, s.partial); ++i) {
    const double step_s = pattern_step_s(b.plan, ends, pattern(i));
    if (step_s < best_step_s && fits(i)) best_step_s = step_s;
  }
  b.options.push_back({RecomputeChoice{RecomputeMode::none, members[first]}, int(first), tps_of(b.plan, best_step_s),
                       bound_bytes(first)});
}

// Without pipelining, the share of a dense shape's all-gather bytes that every fitting configuration
// gathers again for backward. When keeping every unit gathered after forward cannot fit by the memory
// bound (kept_gathered_bound of the recompute choice that holds least) and the space has no reshard to a
// node's ranks (whose backward gather runs on another fabric), a fitting plan reshards every unit but its
// last (space.cpp configured_plan), so it gathers again at least all but the largest last unit of the
// shape's wrappings. 0 when a configuration may keep them, or the gathers are not FSDP's.
double regather_share(const PlanRequest& r, const Space& s, const ShapeBound& b) {
  const Plan& shape = b.plan;
  const auto& par = shape.parallelism;
  if (par.pp > 1 || par.dp_shard < 2 || shape.model.is_moe() || shape.lora) return 0;
  const std::vector<int> reshards = reshard_choices(shape, r, s);
  if (std::any_of(reshards.begin(), reshards.end(), [](int g) { return g > 1; })) return 0;
  const bool may_keep = std::find(reshards.begin(), reshards.end(), 0) != reshards.end();
  if (may_keep && kept_gathered_bound(shape, b.least_bound).total() <= *r.memory_limit_bytes) return 0;
  // Every wrapping gathers the same modules: the total from the shape's units, each wrapping's last unit
  // from one plan that lists them (unit_params counts per unit).
  const std::vector<double> all = unit_gather_bytes(shape);
  const double total = std::accumulate(all.begin(), all.end(), 0.0);
  Plan lasts = shape;
  lasts.units.clear();
  for (const WrapChoice& w : wrap_choices(shape, r, s)) lasts.units.push_back(w.units.back());
  if (lasts.units.empty() || total <= 0) return 0;
  const std::vector<double> last = unit_gather_bytes(lasts);
  return std::max(0.0, 1 - *std::max_element(last.begin(), last.end()) / total);
}

DType least_reduce(const Space& s) {
  return s.knobs.reduce_dtypes.size() > 1 ? DType::bf16 : s.knobs.reduce_dtypes.front();
}

}  // namespace

double shape_speed_limit(const Space& s, const Plan& shape, PipelinePathMemo* memo) {
  const Timing t = average_timing(shape, least_reduce(s), s.knobs.try_no_reshard);
  const Parallelism& par = shape.parallelism;
  double path_s = 0;
  if (walks_passes(shape)) {
    // The path reads the stages' passes (tp, cp, ep, the micro-batch, the units' stages) and the
    // micro-batch count; the data-parallel degrees change neither.
    std::string key = fmt::format("{} {} {} {} {} {} {} {}:", par.tp, par.cp, par.ep, par.pp, par.vpp,
                                  int(par.pp_schedule), shape.training.micro_batch, shape.grad_accum());
    for (const PlanUnit& u : shape.units) key += fmt::format(" {}", u.stage);
    auto it = memo ? memo->find(key) : PipelinePathMemo::iterator{};
    if (memo && it != memo->end()) {
      path_s = it->second;
    } else {
      path_s = pipeline_path_s(shape, stage_passes(shape));
      if (memo) memo->emplace(std::move(key), path_s);
    }
  }
  return tps_of(shape, std::max({t.compute_s, path_s, t.comm_s}));
}

ShapeBound bound_shape(const PlanRequest& r, const Space& s, const Parallelism& par, std::int64_t micro_batch) {
  return bound_shape(r, s, shape_plan(r, par, micro_batch, RecomputeMode::none));
}

ShapeBound bound_shape(const PlanRequest& r, const Space& s, Plan shape, MemoryBoundMemo* memo) {
  ShapeBound b;
  b.plan = std::move(shape);
  const std::int64_t layers = r.model.layers;
  const DType reduce = least_reduce(s);
  b.choices = s.knobs.uniform_recompute.size() + partial_members(layers, s.partial).size();
  // The memory bound holds for every refinement: gradients in the least reduce dtype of the space.
  Plan least_reduce_plan = b.plan;
  least_reduce_plan.precision.reduce = reduce;
  const MemoryBoundModel memory(least_reduce_plan, true, memo);
  const MemoryBound none_bound = memory.bound(b.plan.recompute);
  const MemoryBound full_bound = memory.bound(std::vector<RecomputeMode>(std::size_t(layers), RecomputeMode::full));
  b.saved_per_full_block_bytes = std::max(0.0, (none_bound.total() - full_bound.total()) / double(layers));
  b.least_memory_bound_bytes = none_bound.total() + 1;
  std::vector<std::pair<RecomputeMode, double>> could_fit;  // uniform modes and their memory bounds
  for (RecomputeMode m : s.knobs.uniform_recompute) {
    const MemoryBound mb = memory.bound(std::vector<RecomputeMode>(std::size_t(layers), m));
    if (mb.total() < b.least_memory_bound_bytes)
      b.least_memory_bound_bytes = mb.total(), b.least_bound = mb, b.least_choice = RecomputeChoice{m, 0};
    if (mb.total() <= *r.memory_limit_bytes) could_fit.emplace_back(m, mb.total());
  }
  // Nothing could fit: no uniform mode, and no partial member (one saves at most what every block fully
  // recomputed saves, add_partial). The shape gets no options, and what follows only prices options
  // (regather_share, the throughput terms): returned without them, as the memory-pruned shape it is.
  if (could_fit.empty() && (s.partial == PartialRecompute::none || full_bound.total() > *r.memory_limit_bytes))
    return b;
  b.regather_share = regather_share(r, s, b);
  ModeTerms terms(b.plan, reduce, s.knobs.try_no_reshard, b.regather_share);
  for (const auto& [m, bytes] : could_fit)
    b.options.push_back({RecomputeChoice{m, 0}, -1, tps_of(b.plan, terms.uniform_step_s(m)), bytes});
  if (s.partial != PartialRecompute::none) add_partial(b, r, s, memory, full_bound.total(), terms);
  std::stable_sort(b.options.begin(), b.options.end(),
                   [](const RecomputeOption& x, const RecomputeOption& y) { return x.tps_bound > y.tps_bound; });
  if (!b.options.empty()) b.tps_bound = b.options.front().tps_bound;
  return b;
}

}  // namespace fsdpx
