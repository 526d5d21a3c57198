// planner/refine.cpp — refine_shape (refine.h).
#include "planner/refine.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "planner/backward_gather_bound.h"

namespace fsdpx {

namespace {

// A shape's plans within this fraction of the compute floor cannot gain from another configuration.
constexpr double kFloorSlack = 5e-4;

// The option with the least memory bound; on a tie (a bound held by what no recompute changes, such as
// ZB's weight-pass bytes), the one with the lowest throughput bound, that is the most recompute.
std::vector<RecomputeOption>::const_iterator least_memory(const std::vector<RecomputeOption>& options) {
  return std::min_element(options.begin(), options.end(), [](const RecomputeOption& x, const RecomputeOption& y) {
    if (x.memory_bound_bytes != y.memory_bound_bytes) return x.memory_bound_bytes < y.memory_bound_bytes;
    return x.tps_bound < y.tps_bound;
  });
}

class ShapeRefiner {
 public:
  ShapeRefiner(const ShapeBound& b, const PlanRequest& r, const Space& s, Evaluator& ev, double& best_tps)
      : b_(b), r_(r), s_(s), ev_(ev), best_tps_(best_tps), wraps_(wrap_choices(b.plan, r, s)),
        members_(partial_members(r.model.layers, s.partial)) {}

  Candidate run(bool descend, bool fitting_only);

 private:
  struct Fit {
    Candidate c;
    RecomputeOption option;
    int member_index = -1;  // partial: the member that was kept
  };

  Candidate eval(const Config& cfg, const RecomputeChoice& rc);
  Fit fit(const Config& cfg, int hint_index, bool least_first = false);
  bool fit_partial(const Config& cfg, const RecomputeOption& o, int hint_index, Fit& out);
  bool better_fit(const Fit& a, const Fit& b) const { return better(a.c, b.c, r_.objective); }
  bool cannot_fit(const Config& cfg) const;
  // The configurations tried when nothing fits in `cur`: fewer all-gathers in flight (not for a stage
  // that gathers once), a smaller reduce dtype.
  std::vector<Config> lower_configs(const Config& cur) const;
  // Some recompute pattern fit() could simulate fits by `bound_bytes`.
  bool any_fits(const std::function<double(const std::vector<RecomputeMode>&)>& bound_bytes) const;
  bool at_floor(const Fit& f) const;
  // Uniform full recompute once a member of the partial family fits (issue 36, C4b). Full recomputes
  // every block the member recomputes and the rest too, so on the premise that fit_partial's break and
  // shape_bound.cpp's add_partial already rest on, "more recomputed blocks never shorten a step", it
  // cannot be faster; its simulation (a whole step of the 405B pp 32 interleaved x2 shape's 1,024
  // micro-batches at 32 nodes) would only add a slower plan. Such a plan, slower but holding less, no
  // longer reaches the Pareto list (which lists simulated plans). Under the memory objective it is
  // kept: it holds less.
  bool full_after_fitting_member(const RecomputeOption& o, const Fit& best) const {
    return o.member_index < 0 && o.choice.uniform == RecomputeMode::full && best.c.fits && best.member_index >= 0;
  }
  // A pipelined stage that keeps its parameters gathers each unit once per step: prefetch depth and the
  // in-flight cap only move that one all-gather, so they are left at their defaults.
  bool gathers_once(const Config& cfg) const { return b_.plan.parallelism.pp > 1 && cfg.reshard == 0; }
  void note(const Candidate& c) {
    if (c.fits) best_tps_ = std::max(best_tps_, c.metrics.tokens_per_s_per_gpu);
  }

  const ShapeBound& b_;
  const PlanRequest& r_;
  const Space& s_;
  Evaluator& ev_;
  double& best_tps_;
  std::vector<WrapChoice> wraps_;
  std::vector<int> members_;
};

Candidate ShapeRefiner::eval(const Config& cfg, const RecomputeChoice& rc) {
  const Plan p = configured_plan(b_.plan, wraps_, cfg, recompute_pattern(rc, r_.model.layers, s_.partial));
  Candidate c = ev_.run(p, wraps_[cfg.wrap].policy, wraps_[cfg.wrap].label);
  note(c);
  return c;
}

// The partial family under `cfg`: the fewest fully recomputed blocks that fit. Memory falls by about
// saved_per_full_block_bytes per block, so the first step is predicted from the simulated excess; then
// bisection between a member that does not fit and one that does.
bool ShapeRefiner::fit_partial(const Config& cfg, const RecomputeOption& o, int hint_index, Fit& out) {
  const std::int64_t layers = r_.model.layers;
  int lo = o.member_index - 1, hi = int(members_.size());  // lo does not fit (or is below the bound), hi fits
  int i = std::max(o.member_index, hint_index);
  bool any = false;
  while (hi - lo > 1) {
    i = std::clamp(i, lo + 1, hi - 1);
    const Candidate c = eval(cfg, RecomputeChoice{RecomputeMode::none, members_[std::size_t(i)]});
    if (!any || better(c, out.c, r_.objective)) out = Fit{c, o, i}, any = true;
    if (c.fits) {
      hi = i;
    } else {
      lo = i;
      // More recompute only slows it: a plan that cannot win even now cannot win with more.
      if (r_.objective == Objective::throughput && c.metrics.tokens_per_s_per_gpu < best_tps_) break;
    }
    const double excess = c.metrics.peak_memory_bytes - ev_.limit_bytes();
    const double per_block = std::max(1.0, b_.saved_per_full_block_bytes);
    const int want = full_blocks(members_[std::size_t(i)], layers, s_.partial) + int(std::ceil(excess / per_block));
    int j = i;
    while (excess > 0 && j + 1 < hi && full_blocks(members_[std::size_t(j)], layers, s_.partial) < want) ++j;
    while (excess <= 0 && j - 1 > lo && full_blocks(members_[std::size_t(j - 1)], layers, s_.partial) >= want) --j;
    i = (j != i && j > lo && j < hi) ? j : lo + (hi - lo) / 2;
  }
  return any;
}

// Options in order of their bound; stops once the next bound cannot beat what fits already. Under the
// memory objective, only the option with the least memory bound.
ShapeRefiner::Fit ShapeRefiner::fit(const Config& cfg, int hint_index, bool least_first) {
  Fit best;
  bool any = false;
  std::vector<RecomputeOption> options = b_.options;
  if (r_.objective == Objective::memory) options = {*least_memory(options)};
  auto try_option = [&](const RecomputeOption& o) {
    Fit f;
    if (o.member_index >= 0) {
      if (!fit_partial(cfg, o, hint_index, f)) return;
    } else {
      f = Fit{eval(cfg, o.choice), o, -1};
    }
    if (!any || better_fit(f, best)) best = std::move(f), any = true;
  };
  // Once an option does not fit while none has, and by more than the bounds say the option that holds
  // least (the most recompute) saves, that option is tried next: if it does not fit either, no option
  // between them does (fit_partial's bisection rests on this premise too: more recompute never raises
  // the peak), and the shape's non-fitting representative has the least peak, as before. With
  // `least_first` (a configuration tried because nothing fits), that option goes first.
  const auto least = least_memory(options);
  bool least_tried = least_first;
  if (least_first) {
    try_option(*least);
    if (!best.c.fits) return best;
  }
  for (auto it = options.begin(); it != options.end(); ++it) {
    const double floor_tps = any && best.c.fits ? best.c.metrics.tokens_per_s_per_gpu : 0;
    if (r_.objective == Objective::throughput && (it->tps_bound <= floor_tps || (any && it->tps_bound < best_tps_))) break;
    if (it == least && least_tried) continue;
    if (r_.objective == Objective::throughput && full_after_fitting_member(*it, best)) continue;
    try_option(*it);
    least_tried |= it == least;
    if (any && !best.c.fits && least_tried) break;  // the option that holds least does not fit: none does
    if (!any || best.c.fits) continue;
    // Only when the simulated excess exceeds what the least option saves by the bounds: otherwise an
    // option in between likely fits and the least one would be one simulation more.
    const double saved_bytes = best.option.memory_bound_bytes - least->memory_bound_bytes;
    if (best.c.metrics.peak_memory_bytes - saved_bytes <= ev_.limit_bytes()) continue;
    try_option(*least);
    least_tried = true;
    if (!best.c.fits) break;
  }
  return best;
}

// No recompute pattern fit() could simulate under `cfg` (the shape's options, each partial one from its
// first member on) fits by the configured plan's memory bound (backward_gather_bound.h: the wrapping's
// gathered unit and its gradient at its first backward, the units a reshard keeps, and where that leaves
// a pattern fitting but the other units' gathers could rule it out, those certainly live then): every
// such simulation would exceed the limit, and in the descent, where the shape has a fitting plan, a plan
// that does not fit never replaces it. tests/planner/test_memory_bound.cpp checks the bound over every
// wrapping, prefetch depth and cap without pipelining, and with pipelining over every schedule, reshard
// choice and, for a stage keeping its units gathered, reduce dtype.
bool ShapeRefiner::cannot_fit(const Config& cfg) const {
  const Plan p = configured_plan(b_.plan, wraps_, cfg, b_.plan.recompute);
  ConfiguredMemoryBound bound(p);
  auto total = [&](const std::vector<RecomputeMode>& pattern) { return bound.total(pattern); };
  if (!any_fits(total)) return true;
  // The lowering the certain gathers need costs a third of a simulation: only where what they can add
  // at most would leave no pattern fitting.
  if (any_fits([&](const std::vector<RecomputeMode>& pattern) { return bound.guessed_total(pattern); })) return false;
  bound.count_certain_gathers();
  return !any_fits(total);
}

std::vector<Config> ShapeRefiner::lower_configs(const Config& cur) const {
  std::vector<Config> out;
  if (!gathers_once(cur))
    for (int k : s_.knobs.all_gather_caps)
      if (k < cur.cap) out.push_back(Config{cur.wrap, cur.reshard, cur.prefetch, k, cur.reduce});
  for (DType t : s_.knobs.reduce_dtypes)
    if (dtype_bytes(t) < dtype_bytes(cur.reduce)) out.push_back(Config{cur.wrap, cur.reshard, cur.prefetch, cur.cap, t});
  return out;
}

bool ShapeRefiner::any_fits(const std::function<double(const std::vector<RecomputeMode>&)>& bound_bytes) const {
  const std::int64_t layers = r_.model.layers;
  for (const RecomputeOption& o : b_.options) {
    if (o.member_index < 0) {
      if (bound_bytes(recompute_pattern(o.choice, layers, s_.partial)) <= ev_.limit_bytes()) return true;
      continue;
    }
    for (std::size_t i = std::size_t(o.member_index); i < members_.size(); ++i)
      if (bound_bytes(recompute_pattern(RecomputeChoice{RecomputeMode::none, members_[i]}, layers, s_.partial)) <=
          ev_.limit_bytes())
        return true;
  }
  return false;
}

// The plan runs at the compute floor and with the recompute the bound allows at best: no configuration
// can make it faster.
bool ShapeRefiner::at_floor(const Fit& f) const {
  if (!f.c.fits || f.c.metrics.compute_floor_s <= 0) return false;
  const bool least_recompute = f.option.member_index == b_.options.front().member_index &&
                               (f.member_index < 0 || f.member_index == f.option.member_index) &&
                               f.option.choice.uniform == b_.options.front().choice.uniform;
  return least_recompute && f.c.metrics.step_time_s <= f.c.metrics.compute_floor_s * (1 + kFloorSlack);
}

Candidate ShapeRefiner::run(bool descend, bool fitting_only) {
  // Every wrapping left the target's row (wrap_choices): the shape itself has a gap no wrapping mends,
  // such as fp8 with tp > 1 on the CPU backend.
  if (wraps_.empty()) return Candidate{};
  Config cur = default_config(b_.plan, r_, s_);
  // A pipelined shape where neither the default configuration nor any it would lower to when nothing
  // fits there can fit by the configured bound (a stage keeping its units gathered: every unit gathered
  // and every gradient unsharded at once) gives no fitting plan: where only fitting plans matter, none of
  // its plans is simulated.
  if (fitting_only && b_.plan.parallelism.pp > 1 && cannot_fit(cur)) {
    const std::vector<Config> lower = lower_configs(cur);
    if (std::all_of(lower.begin(), lower.end(), [&](const Config& c) { return cannot_fit(c); })) return Candidate{};
  }
  Fit best = fit(cur, -1);
  if (!descend || best.c.label.empty() || at_floor(best)) return best.c;
  if (!best.c.fits) {
    // Nothing fits in the default configuration, whose per-block wrapping holds the least: only fewer
    // all-gathers in flight or a smaller reduce dtype (the unsharded gradient buffers) can lower the peak.
    auto try_lower = [&](Config c) {
      Fit f = fit(c, best.member_index, true);
      if (!f.c.label.empty() && better_fit(f, best)) best = std::move(f);
    };
    // A pipelined stage that keeps its parameters gathers each unit once per step (see the descent
    // below): fewer all-gathers in flight do not lower what it holds, so only the reduce dtype is tried.
    for (const Config& c : lower_configs(cur)) try_lower(c);
    return best.c;
  }
  const std::vector<int> reshards = reshard_choices(b_.plan, r_, s_);
  // Steepest descent: every single-dimension change of the current configuration is tried, then the best
  // of them is taken, so that an early small gain in one dimension does not block a larger one in another.
  for (int pass = 0; pass < 2; ++pass) {
    bool improved = false;
    const Config from = cur;
    auto try_config = [&](const Config& cfg) {
      if (cannot_fit(cfg)) return;
      Fit f = fit(cfg, best.member_index);
      if (!f.c.label.empty() && better_fit(f, best)) best = std::move(f), cur = cfg, improved = true;
    };
    for (std::size_t w = 0; w < wraps_.size(); ++w) if (w != from.wrap) { Config c = from; c.wrap = w; try_config(c); }
    for (int g : reshards) if (g != from.reshard) { Config c = from; c.reshard = g; try_config(c); }
    if (!gathers_once(from)) {
      for (int d : s_.knobs.prefetch_depths) if (d != from.prefetch) { Config c = from; c.prefetch = d; try_config(c); }
      for (int k : s_.knobs.all_gather_caps) if (k != from.cap) { Config c = from; c.cap = k; try_config(c); }
    }
    for (DType t : s_.knobs.reduce_dtypes) if (t != from.reduce) { Config c = from; c.reduce = t; try_config(c); }
    if (!improved || at_floor(best)) break;
  }
  return best.c;
}

}  // namespace

Candidate refine_shape(const ShapeBound& b, const PlanRequest& r, const Space& s, Evaluator& ev, double& best_tps,
                       bool descend, bool fitting_only) {
  if (b.options.empty()) return Candidate{};
  return ShapeRefiner(b, r, s, ev, best_tps).run(descend, fitting_only);
}

}  // namespace fsdpx
