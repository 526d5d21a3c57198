// simulator/memory_explain.cpp — the simulated peak of a plan and the single changes that lower it,
// each simulated; see memory_explain.h.
#include "simulator/memory_explain.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/errors.h"
#include "program/group_members.h"
#include "simulator/reserved_memory.h"
#include "simulator/simulate.h"

namespace fsdpx {
namespace {

using Candidate = std::pair<std::string, Plan>;

bool every_block(const Plan& p, RecomputeMode m) {
  return std::all_of(p.recompute.begin(), p.recompute.end(), [m](RecomputeMode r) { return r == m; });
}

// Recompute: torchtitan's op-level SAC where no block recomputes, then full recompute everywhere.
void recompute_changes(const Plan& p, std::vector<Candidate>& out) {
  const bool none = every_block(p, RecomputeMode::none);
  if (none && !p.lora) {
    Plan q = p;
    q.recompute.assign(q.recompute.size(), RecomputeMode::selective_op);
    out.emplace_back("recompute selective_op (torchtitan's op-level SAC) on every block", std::move(q));
  }
  if (!every_block(p, RecomputeMode::full)) {
    Plan q = p;
    q.recompute.assign(q.recompute.size(), RecomputeMode::full);
    out.emplace_back("recompute full on every block", std::move(q));
  }
}

// Smaller micro-batches at the same global batch: half, and 1.
void micro_batch_changes(const Plan& p, std::vector<Candidate>& out) {
  const std::int64_t mb = p.training.micro_batch;
  for (std::int64_t to : {mb / 2, std::int64_t{1}}) {
    if (to < 1 || to >= mb || (to == 1 && mb / 2 == 1)) continue;
    if (p.training.global_batch % (to * p.parallelism.data_parallel_ranks()) != 0) continue;
    Plan q = p;
    q.training.micro_batch = to;
    out.emplace_back(fmt::format("micro-batch {} -> {} (gradient accumulation {} -> {})", mb, to, p.grad_accum(),
                                 q.grad_accum()),
                     std::move(q));
  }
}

// Parameters: reshard after forward where a unit keeps them (all but the last unit, which backward
// uses first), no all-gather ahead of use, and more shards where replicas or replicated state allow.
void parameter_changes(const Plan& p, std::vector<Candidate>& out) {
  const bool sharded = is_sharded(data_placement(p.parallelism).params);
  const bool kept = std::any_of(p.units.begin(), p.units.end() - 1,
                                [](const PlanUnit& u) { return u.reshard_after_forward == 0; });
  if (sharded && kept && p.parallelism.pp == 1) {
    Plan q = p;
    for (std::size_t u = 0; u + 1 < q.units.size(); ++u) q.units[u].reshard_after_forward = 1;
    out.emplace_back("reshard after forward on every unit but the last", std::move(q));
  }
  if (p.prefetch.forward > 0 || p.prefetch.backward > 0) {
    Plan q = p;
    q.prefetch.forward = q.prefetch.backward = 0;
    q.prefetch.max_all_gathers_in_flight = 1;
    out.emplace_back("prefetch depth 0 (each all-gather waits for its use)", std::move(q));
  }
  if (p.parallelism.dp_replicate % 2 == 0 && sharded) {
    Plan q = p;
    q.parallelism.dp_replicate /= 2;
    q.parallelism.dp_shard *= 2;
    if (q.parallelism.dp_replicate == 1) q.parallelism.data_parallel = DataParallel::fsdp_full_shard;
    out.emplace_back(fmt::format("shard over {} ranks (dp_replicate {} -> {})", shard_group_ranks(q.parallelism),
                                 p.parallelism.dp_replicate, q.parallelism.dp_replicate),
                     std::move(q));
  }
  if (!sharded && p.parallelism.pp == 1 && p.parallelism.dp_shard > 1) {
    Plan q = p;
    q.parallelism.data_parallel = DataParallel::fsdp_full_shard;
    for (std::size_t u = 0; u < q.units.size(); ++u) q.units[u].reshard_after_forward = u + 1 < q.units.size();
    out.emplace_back("shard parameters, gradients and optimizer state (FSDP full shard)", std::move(q));
  }
}

// Simulates a candidate and records it; false when it does not fit or makes an invalid plan.
bool try_change(const Candidate& c, double capacity, std::vector<MemoryChange>& out) {
  try {
    validate_plan(c.second, "explain-memory");
    const Simulation sim = simulate(c.second);
    out.push_back({c.first, c.second, sim.peak_memory_total_bytes, sim.step_time_s,
                   sim.peak_memory_total_bytes <= capacity});
    return out.back().fits;
  } catch (const ConfigError&) {
    return false;  // e.g. more micro-batches than the simulator lowers op by op
  }
}

}  // namespace

MemoryExplanation explain_memory(const Plan& plan) {
  MemoryExplanation e;
  e.capacity_bytes = plan.cluster.gpu.hbm_bytes;
  const Simulation sim = simulate(plan);
  e.peak_bytes = sim.peak_memory_total_bytes;
  e.peak_by_category = sim.peak_memory_bytes;
  e.peak_allocated_bytes = sim.peak_memory_total_bytes - sim.peak_memory_bytes[std::size_t(MemCategory::other)];
  e.peak_reserved_bytes = reserved_memory(plan, sim).bytes;
  e.peak_op = sim.peak_memory_op;
  e.peak_stage = sim.peak_memory_stage;
  e.step_time_s = sim.step_time_s;
  const int op = sim.engine.peak_by_role[std::size_t(sim.peak_memory_stage)].op;
  if (op >= 0) e.peak_micro_batch = sim.program.roles[std::size_t(sim.peak_memory_stage)].ops[std::size_t(op)].micro_batch;
  std::vector<Candidate> candidates;
  recompute_changes(plan, candidates);
  micro_batch_changes(plan, candidates);
  parameter_changes(plan, candidates);
  bool any_fits = false;
  for (const Candidate& c : candidates) any_fits = try_change(c, e.capacity_bytes, e.changes) || any_fits;
  if (!any_fits && plan.training.micro_batch > 1 && !every_block(plan, RecomputeMode::full)) {
    Plan q = plan;
    q.recompute.assign(q.recompute.size(), RecomputeMode::full);
    q.training.micro_batch = 1;
    if (q.training.global_batch % q.parallelism.data_parallel_ranks() == 0)
      try_change({"recompute full on every block and micro-batch 1", std::move(q)}, e.capacity_bytes, e.changes);
  }
  std::stable_sort(e.changes.begin(), e.changes.end(), [](const MemoryChange& a, const MemoryChange& b) {
    return a.fits != b.fits ? a.fits : a.step_time_s < b.step_time_s;
  });
  return e;
}

}  // namespace fsdpx
