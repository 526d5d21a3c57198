// planner/shapes.cpp — enumeration of parallel shapes and micro-batch sizes (torchtitan ParallelDims:
// the degrees multiply to the world size; the mesh is (dp_replicate, dp_shard, cp, tp), tp innermost).
#include "planner/shapes.h"

#include "planner/wrapping.h"

namespace fsdpx {

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

}  // namespace

std::vector<Parallelism> parallel_shapes(const PlanRequest& r) {
  const int world = r.cluster.world_size();
  std::vector<Parallelism> out;
  for (int tp : divisors(r.cluster.gpus_per_node)) {
    // Megatron TP splits query and key/value heads across ranks (plan-format.md: tp divides heads).
    if (world % tp != 0 || r.model.heads % tp != 0 || r.model.kv_heads % tp != 0) continue;
    if (tp > 1 && !r.space.allow_tp) continue;
    for (int cp : divisors(world / tp)) {
      // Load-balanced causal CP cuts the sequence into 2·cp chunks (plan-format.md).
      if (cp > 1 && (!r.space.allow_cp || r.seq % (2 * cp) != 0)) continue;
      const int dp = world / (tp * cp);
      for (int rep : divisors(dp)) {
        if (rep > 1 && !r.space.allow_hsdp) continue;
        Parallelism par;
        par.tp = tp;
        par.cp = cp;
        par.dp_replicate = rep;
        par.dp_shard = dp / rep;
        par.sequence_parallel = tp > 1;
        par.data_parallel = rep > 1 ? DataParallel::hsdp : DataParallel::fsdp_full_shard;
        out.push_back(par);
      }
    }
  }
  return out;
}

std::vector<std::int64_t> micro_batch_choices(const PlanRequest& r, int dp_ranks) {
  std::vector<std::int64_t> out;
  if (r.global_batch % dp_ranks != 0) return out;
  const std::int64_t per_rank = r.global_batch / dp_ranks;
  if (!r.space.micro_batches.empty()) {
    for (std::int64_t mb : r.space.micro_batches)
      if (mb >= 1 && per_rank % mb == 0) out.push_back(mb);
    return out;
  }
  // Divisors up to 16: larger micro-batches rarely pay and multiply the space.
  for (std::int64_t mb = 1; mb <= std::min<std::int64_t>(per_rank, 16); ++mb)
    if (per_rank % mb == 0) out.push_back(mb);
  return out;
}

Plan shape_plan(const PlanRequest& r, const Parallelism& par, std::int64_t micro_batch, RecomputeMode recompute) {
  TrainingSettings t;
  t.seq = r.seq;
  t.micro_batch = micro_batch;
  t.global_batch = r.global_batch;
  Plan p = default_plan(r.model, r.cluster, t, par, 1, recompute);
  p.units = wrap_per_block(r.model, PerBlockWrapping{});
  p.framework = request_framework(r);
  p.compiled = r.compiled;
  return p;
}

}  // namespace fsdpx
