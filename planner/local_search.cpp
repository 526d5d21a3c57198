// planner/local_search.cpp — the dimensions of stage 2 and the descent over them.
#include "planner/local_search.h"

#include <fmt/format.h>

#include "planner/memory_bound.h"
#include "planner/wrapping.h"

namespace fsdpx {

namespace {

struct Variant {
  Plan plan;
  WrapPolicy wrapping;
  std::string wrap_label;
};

// Re-applies the current reshard setting of `from` (first unit's value, last unit kept unsharded).
void set_units(Plan& p, std::vector<PlanUnit> units, int reshard) {
  for (auto& u : units) u.reshard_after_forward = reshard;
  if (reshard == 1) units.back().reshard_after_forward = 0;
  p.units = std::move(units);
}

std::vector<Variant> wrapping_variants(const Variant& cur, const PlanRequest& r) {
  std::vector<Variant> out;
  const int reshard = cur.plan.units.front().reshard_after_forward;
  const bool tied = r.model.tied_embeddings;
  for (int k : r.space.blocks_per_unit) {
    for (int merge = 0; merge < (tied ? 1 : 4); ++merge) {
      Variant v = cur;
      set_units(v.plan, wrap_per_block(r.model, PerBlockWrapping{k, (merge & 1) != 0, (merge & 2) != 0}), reshard);
      v.wrapping = WrapPolicy::per_block;
      v.wrap_label = fmt::format("per_block k{}{}{}", k, merge & 1 ? "+emb" : "", merge & 2 ? "+head" : "");
      out.push_back(std::move(v));
    }
  }
  for (double min_params : r.space.fsdp1_min_params) {
    Variant v = cur;
    set_units(v.plan, wrap_fsdp1_size_based(r.model, min_params), reshard);
    v.wrapping = WrapPolicy::fsdp1_size_based;
    v.wrap_label = fmt::format("fsdp1 min {:.0e}", min_params);
    out.push_back(std::move(v));
  }
  if (r.space.try_simplefsdp_auto) {
    Variant v = cur;
    const double room = std::max(0.0, *r.memory_limit_bytes - memory_lower_bound(cur.plan).total());
    set_units(v.plan, wrap_simplefsdp_auto(cur.plan, std::max(room, 1.0)), reshard);
    v.wrapping = WrapPolicy::simplefsdp_auto;
    v.wrap_label = "simplefsdp";
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<Variant> reshard_variants(const Variant& cur, const PlanRequest& r) {
  std::vector<Variant> out;
  const auto& par = cur.plan.parallelism;
  // ZeRO-3 (torchtitan default), ZeRO-2 (no reshard: SHARD_GRAD_OP), and FSDP2's int form resharding
  // to the ranks of one node (ZeRO++ hpZ) when dp_shard spans nodes.
  std::vector<int> modes{1, 0};
  const int per_node = r.cluster.gpus_per_node / (par.tp * par.cp);
  if (per_node > 1 && par.dp_shard > per_node && par.dp_shard % per_node == 0) modes.push_back(per_node);
  for (int g : modes) {
    Variant v = cur;
    set_units(v.plan, cur.plan.units, g);
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<Variant> scalar_variants(const Variant& cur, const PlanRequest& r, int dim) {
  std::vector<Variant> out;
  const std::vector<int> none;
  const std::vector<int>& values = dim == 0 ? r.space.prefetch_depths : dim == 1 ? r.space.all_gather_caps : none;
  for (int x : values) {
    Variant v = cur;
    if (dim == 0) v.plan.prefetch.forward = v.plan.prefetch.backward = x;
    else v.plan.prefetch.max_all_gathers_in_flight = x;
    out.push_back(std::move(v));
  }
  if (dim == 2) {
    // The CPU backend (ranks are threads) reduces in fp32 only, as it computes.
    const std::vector<DType> fp32_only{DType::fp32};
    for (DType d : r.cluster.host_threads ? fp32_only : r.space.reduce_dtypes) {
      Variant v = cur;
      v.plan.precision.reduce = d;
      out.push_back(std::move(v));
    }
  }
  return out;
}

Plan with_full_first(const Plan& p, std::int64_t k) {
  Plan q = p;
  for (std::size_t i = 0; i < q.recompute.size(); ++i)
    q.recompute[i] = std::int64_t(i) < k ? RecomputeMode::full : RecomputeMode::none;
  return q;
}

}  // namespace

namespace {

// Keeps the best of `variants` (and the current one) in `cur` / `best`.
void descend(std::vector<Variant> variants, Variant& cur, Candidate& best, const PlanRequest& r, Evaluator& ev) {
  for (auto& v : variants) {
    Candidate c = ev.run(v.plan, v.wrapping, v.wrap_label);
    if (better(c, best, r.objective)) {
      best = std::move(c);
      cur = std::move(v);
    }
  }
}

// Full recompute on the first k blocks only: the smallest k that fits, by bisection (memory falls
// as k grows), when no recompute does not fit and full recompute everywhere does.
void recompute_first_blocks(Variant& cur, Candidate& best, const PlanRequest& r, Evaluator& ev) {
  const std::int64_t layers = r.model.layers;
  Variant none = cur;
  none.plan = with_full_first(cur.plan, 0);
  Variant full = cur;
  full.plan = with_full_first(cur.plan, layers);
  descend({none, full}, cur, best, r, ev);
  if (ev.run(none.plan, none.wrapping, none.wrap_label).fits) return;
  if (!ev.run(full.plan, full.wrapping, full.wrap_label).fits) return;
  std::int64_t lo = 0, hi = layers;  // lo does not fit, hi fits
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    Variant v = cur;
    v.plan = with_full_first(cur.plan, mid);
    const Candidate c = ev.run(v.plan, v.wrapping, v.wrap_label);
    (c.fits ? hi : lo) = mid;
    descend({v}, cur, best, r, ev);
  }
}

}  // namespace

Candidate refine(const Candidate& start, const PlanRequest& r, Evaluator& ev) {
  Variant cur{start.plan, start.wrapping, "per_block k1"};
  Candidate best = start;
  descend(wrapping_variants(cur, r), cur, best, r, ev);
  descend(reshard_variants(cur, r), cur, best, r, ev);
  for (int dim = 0; dim < 3; ++dim) descend(scalar_variants(cur, r, dim), cur, best, r, ev);
  recompute_first_blocks(cur, best, r, ev);
  return best;
}

}  // namespace fsdpx
