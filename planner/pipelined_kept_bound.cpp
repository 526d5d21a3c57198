// planner/pipelined_kept_bound.cpp — pipelined_kept_bound (pipelined_kept_bound.h), from the lowering's own
// cost-model calls (segment_work.h unit_params and segment_memory, kept_gathered.h unit_gather_bytes,
// rank_state.h) and its schedule (pipeline_schedule.h); tests/planner/test_memory_bound.cpp checks it
// below the simulated peak.
#include "planner/pipelined_kept_bound.h"

#include <algorithm>
#include <string>

#include "core/data_placement.h"
#include "core/pipeline.h"
#include "cost_models/memory.h"
#include "planner/kept_gathered.h"
#include "planner/memory_bound.h"
#include "planner/rank_state.h"
#include "program/pipeline_schedule.h"
#include "program/segment_work.h"

namespace fsdpx {

namespace {

int block_index(const std::string& name) { return name.rfind("block.", 0) == 0 ? std::stoi(name.substr(6)) : -1; }

bool applies(const Plan& plan) {
  const auto& par = plan.parallelism;
  const bool kept = std::all_of(plan.units.begin(), plan.units.end(),
                                [](const PlanUnit& u) { return u.reshard_after_forward == 0; });
  const std::int64_t least = par.pp_schedule == PipelineSchedule::interleaved_1f1b ? par.pp + 1 : 2;
  return par.pp > 1 && par.pp_schedule != PipelineSchedule::zero_bubble && plan.grad_accum() >= least &&
         plan.reduce_grads == ReduceGrads::last_micro_batch && !plan.model.is_moe() && !plan.lora &&
         is_sharded(data_placement(par).params) && kept;
}

// Per chunk of `rank`, its micro-batches forwarded and not yet backwarded when chunk 0's backward of
// micro-batch 0 starts, that micro-batch itself left out.
std::vector<int> in_flight_at_last_first_backward(const Plan& plan, int rank) {
  const auto& par = plan.parallelism;
  std::vector<int> held(std::size_t(par.vpp), 0);
  for (const PipeAction& a : pipeline_actions(par.pp_schedule, par.pp, par.vpp, rank, int(plan.grad_accum()))) {
    if (a.pass != PipePass::forward && a.chunk == 0 && a.micro_batch == 0) break;
    held[std::size_t(a.chunk)] += a.pass == PipePass::forward ? 1 : -1;
  }
  held[0] -= 1;  // chunk 0's micro-batch 0, whose backward is under way
  return held;
}

}  // namespace

PipelinedKeptBound pipelined_kept_bound(const Plan& plan) {
  PipelinedKeptBound b;
  if (!applies(plan)) return b;
  const auto& par = plan.parallelism;
  const std::vector<double> params = unit_params(plan);
  const std::vector<double> gather = unit_gather_bytes(plan, params);
  const double grad_bytes = autograd_grad_bytes(plan);
  const OverheadBytes fixed = overhead_bytes(2, 0);
  const auto ranks = std::size_t(par.pp);
  std::vector<double> local(ranks, 0.0);
  b.held_bytes.assign(ranks, fixed.cuda_context + fixed.nccl_buffers);
  b.in_flight.assign(ranks, std::vector<int>(std::size_t(plan.model.layers), 0));
  std::vector<std::vector<int>> chunk_held;
  for (int r = 0; r < par.pp; ++r) chunk_held.push_back(in_flight_at_last_first_backward(plan, r));
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    const int stage = plan.units[u].stage;
    const auto rank = std::size_t(stage_rank(stage, par.pp));
    local[rank] += params[u];
    b.held_bytes[rank] += gather[u];
    bool blocks_only = !plan.units[u].modules.empty();
    for (const std::string& name : plan.units[u].modules) {
      const int i = block_index(name);
      blocks_only &= i >= 0;
      if (i >= 0) b.in_flight[rank][std::size_t(i)] = chunk_held[rank][std::size_t(stage_chunk(stage, par.pp))];
    }
    if (blocks_only) b.held_bytes[rank] += params[u] * grad_bytes;
  }
  for (std::size_t r = 0; r < ranks; ++r) b.held_bytes[r] += rank_state_bytes(plan, local[r], local[r]);
  Plan uniform = plan;
  for (int m = 0; m < 4; ++m) {
    uniform.recompute.assign(plan.recompute.size(), RecomputeMode(m));
    b.saved_bytes.push_back(segment_memory(uniform, 1, 1).saved_activation_bytes);
  }
  return b;
}

double pipelined_kept_bytes(const PipelinedKeptBound& b, const std::vector<RecomputeMode>& recompute) {
  double most = 0;
  for (std::size_t r = 0; r < b.held_bytes.size(); ++r) {
    double bytes = b.held_bytes[r];
    for (std::size_t i = 0; i < recompute.size(); ++i)
      bytes += double(b.in_flight[r][i]) * b.saved_bytes[std::size_t(recompute[i])];
    most = std::max(most, bytes);
  }
  return most;
}

}  // namespace fsdpx
