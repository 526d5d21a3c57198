// planner/batch_split.cpp — the message of batch_split.h. The target's shapes are the search's own
// (shapes.h parallel_shapes on the target-narrowed space); a batch splits over a shape when the shape has
// a micro-batch choice (shapes.h micro_batch_choices: dp divides the batch, interleaving's group of pp).
#include "planner/batch_split.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "planner/shapes.h"
#include "planner/space.h"
#include "planner/target.h"

namespace fsdpx {

namespace {

std::vector<Parallelism> target_shapes(const PlanRequest& r) {
  PlanRequest narrowed = r;
  narrowed.space = effective_space(r).knobs;
  return parallel_shapes(narrowed);
}

// The first shape of `r`'s target that splits its batch, if any.
std::optional<Parallelism> splitting_shape(const PlanRequest& r) {
  for (const Parallelism& par : target_shapes(r))
    if (!micro_batch_choices(r, par).empty()) return par;
  return std::nullopt;
}

std::string shape_text(const Parallelism& p) {
  return fmt::format("dp {} x tp {} x cp {} x pp {}", p.data_parallel_ranks(), p.tp, p.cp, p.pp);
}

// "at most tp 1, cp 1, pp 1 here (target fsdpx runs no tp, cp, pp > 1 on this cluster)", from the space.
std::string limits_text(const PlanRequest& r, const std::vector<Parallelism>& shapes) {
  int tp = 1, cp = 1, pp = 1;
  for (const Parallelism& p : shapes) tp = std::max(tp, p.tp), cp = std::max(cp, p.cp), pp = std::max(pp, p.pp);
  std::string text = fmt::format("at most tp {}, cp {}, pp {} here", tp, cp, pp);
  const SearchSpace& k = effective_space(r).knobs;
  std::vector<std::string> barred;
  if (r.space.allow_tp && !k.allow_tp) barred.emplace_back("tp");
  if (r.space.allow_cp && !k.allow_cp) barred.emplace_back("cp");
  if (r.space.allow_pp && !k.allow_pp) barred.emplace_back("pp");
  if (!barred.empty())
    text += fmt::format(" (target {} runs no {} > 1 on this cluster)", target_name(r.target), fmt::join(barred, ", "));
  const FixedDegrees& f = r.space.fixed;
  std::vector<std::string> fixed;
  for (auto [name, degree] : {std::pair{"--tp", f.tp}, {"--cp", f.cp}, {"--pp", f.pp}, {"--dp-shard", f.dp_shard},
                              {"--dp-replicate", f.dp_replicate}})
    if (degree > 0) fixed.push_back(fmt::format("{} {}", name, degree));
  if (!fixed.empty()) text += fmt::format(" (fixed: {})", fmt::join(fixed, ", "));
  return text;
}

std::string degrees_text(const std::vector<Parallelism>& shapes) {
  std::set<std::int64_t> dps;
  for (const Parallelism& p : shapes) dps.insert(p.data_parallel_ranks());
  std::vector<std::string> shown;
  for (std::int64_t dp : dps)
    if (shown.size() < 8) shown.push_back(std::to_string(dp));
  if (dps.size() > shown.size()) shown.emplace_back("...");
  return fmt::format("data-parallel degree{} {}", dps.size() == 1 ? "" : "s", fmt::join(shown, ", "));
}

// Other targets whose shapes split the batch on this cluster, with one such shape.
std::vector<std::string> other_targets(const PlanRequest& r) {
  std::vector<std::string> out;
  for (const Target& t : {Target{TargetKind::fsdpx, ""}, default_torchtitan_target()}) {
    if (target_name(t) == target_name(r.target)) continue;
    PlanRequest q = r;
    q.target = t;
    if (const auto par = splitting_shape(q)) out.push_back(fmt::format("--target {} ({})", target_name(t), shape_text(*par)));
  }
  return out;
}

// The largest global batch below and the smallest above the request that a shape of the target splits.
std::vector<std::string> nearest_batches(const PlanRequest& r, const std::vector<Parallelism>& shapes) {
  std::set<std::int64_t> candidates;
  for (const Parallelism& p : shapes) {
    const std::int64_t group = p.data_parallel_ranks() * (p.pp_schedule == PipelineSchedule::interleaved_1f1b ? p.pp : 1);
    if (r.global_batch >= group) candidates.insert(r.global_batch / group * group);
    candidates.insert((r.global_batch / group + 1) * group);
  }
  const auto above = candidates.upper_bound(r.global_batch);
  std::vector<std::string> out;
  if (above != candidates.begin()) out.push_back(fmt::format("--global-batch {}", *std::prev(above)));
  if (above != candidates.end()) out.push_back(fmt::format("--global-batch {}", *above));
  return out;
}

// The largest smaller whole-node count whose shapes split the batch.
std::string fewer_nodes(const PlanRequest& r) {
  for (int nodes = r.cluster.nodes - 1; nodes >= 1; --nodes) {
    PlanRequest q = r;
    q.cluster.nodes = nodes;
    if (splitting_shape(q))
      return fmt::format("--nodes {} ({} ranks)", nodes, std::int64_t(nodes) * r.cluster.gpus_per_node);
  }
  return {};
}

}  // namespace

std::string batch_split_message(const PlanRequest& r) {
  const std::vector<Parallelism> shapes = target_shapes(r);
  const int world = r.cluster.world_size();
  if (shapes.empty())
    return fmt::format("target {} has no parallel shape on {} ranks of this cluster for this model", target_name(r.target),
                       world);
  std::string msg = fmt::format("{} sequences cannot be split evenly over the data-parallel ranks of any shape target {} "
                                "runs on {} ranks: it runs {}, which leaves {}",
                                r.global_batch, target_name(r.target), world, limits_text(r, shapes), degrees_text(shapes));
  std::vector<std::string> would = other_targets(r);
  for (std::string& b : nearest_batches(r, shapes)) would.push_back(std::move(b));
  if (std::string n = fewer_nodes(r); !n.empty()) would.push_back(std::move(n));
  if (!would.empty()) msg += fmt::format("; these would split it: {}", fmt::join(would, ", "));
  return msg;
}

}  // namespace fsdpx
