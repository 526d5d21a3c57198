// planner/memory_bound.cpp — the pruning bound of memory_bound.h, built from the same cost-model
// calls the lowering uses (program/lower.cpp resident_memory, program/segment_work.cpp
// segment_memory, program/pipeline_schedule.cpp pass order) so that it stays below the simulated peak by
// construction.
#include "planner/memory_bound.h"

#include <algorithm>
#include <array>

#include "cost_models/memory.h"
#include "cost_models/params.h"
#include "program/lower.h"
#include "program/pipeline_schedule.h"
#include "program/segment_work.h"

namespace fsdpx {

namespace {

// Saved activations of one micro-batch per unit (identical blocks computed once per recompute mode), and
// what ZB's B keeps for W.
struct UnitBytes {
  std::vector<double> saved, weight_pass;
};

// Index of a module in module_names(): embedding 0, block.i 1 + i, final_norm L + 1, head L + 2.
int module_index(const std::string& name, std::int64_t layers) {
  if (name == "embedding") return 0;
  if (name == "final_norm") return int(layers) + 1;
  if (name == "head") return int(layers) + 2;
  return 1 + std::stoi(name.substr(6));  // "block.<i>"
}

UnitBytes unit_bytes(const Plan& plan) {
  UnitBytes out;
  const std::int64_t layers = plan.model.layers;
  std::array<SegmentMemory, 4> block{};  // by recompute mode
  std::array<bool, 4> known{};
  for (const PlanUnit& u : plan.units) {
    double saved = 0, weight = 0;
    for (const std::string& name : u.modules) {
      const int i = module_index(name, layers);
      SegmentMemory m;
      if (i >= 1 && i <= layers) {
        const auto r = std::size_t(plan.recompute[std::size_t(i - 1)]);
        if (!known[r]) block[r] = segment_memory(plan, i, 1), known[r] = true;
        m = block[r];
      } else {
        m = segment_memory(plan, i, 1);
      }
      saved += m.saved_activation_bytes;
      weight += m.weight_pass_bytes;
    }
    out.saved.push_back(saved);
    out.weight_pass.push_back(weight);
  }
  return out;
}

// Per pipeline rank and model chunk: the units' saved activations, weight-pass bytes, and parameters.
struct ChunkSums {
  std::vector<std::vector<double>> saved, weight_pass, params;  // [rank][chunk]
};

ChunkSums chunk_sums(const Plan& plan, const UnitBytes& bytes, const std::vector<double>& params) {
  const auto& par = plan.parallelism;
  const std::vector<std::vector<double>> zero(std::size_t(par.pp), std::vector<double>(std::size_t(par.vpp), 0));
  ChunkSums out{zero, zero, zero};
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    const auto r = std::size_t(stage_rank(plan.units[u].stage, par.pp));
    const auto c = std::size_t(stage_chunk(plan.units[u].stage, par.pp));
    out.saved[r][c] += bytes.saved[u];
    out.weight_pass[r][c] += bytes.weight_pass[u];
    out.params[r][c] += params[u];
  }
  return out;
}

// Micro-batches whose pass order has the same activation peak as the step's, at a cost independent of
// its count. 1F1B, interleaved 1F1B and ZB-H1 run warm-up, a steady phase and cool-down; a longer step
// only repeats steady periods (d micro-batches: pp for interleaved, whose table takes groups of pp, else
// 1) that start and end at the same live bytes and so reach the same highs: a count at least 4 x pp x vpp
// in the same class mod d holds a whole period past every warm-up.
std::int64_t walked_micro_batches(const Parallelism& par, std::int64_t micro_batches) {
  const std::int64_t d = par.pp_schedule == PipelineSchedule::interleaved_1f1b ? par.pp : 1;
  const std::int64_t enough = std::int64_t(4) * par.pp * par.vpp;
  if (micro_batches <= enough + d) return micro_batches;
  return enough + (micro_batches - enough) % d;
}

// The most activation bytes pipeline rank `rank` holds at once: its passes in schedule order, each
// chunk's forward adding its saved activations, its backward removing them (ZB: B swaps them for what W
// needs, W removes that); the walk is the lowering's activation category exactly (only compute ops touch
// it). GPipe runs every forward before the first backward: all micro-batches at once. Without
// pipelining: one micro-batch of every module.
double activation_peak(const Plan& plan, const ChunkSums& sums, int rank) {
  const auto& par = plan.parallelism;
  const std::vector<double>& saved = sums.saved[std::size_t(rank)];
  if (par.pp == 1) return saved[0];
  if (par.pp_schedule == PipelineSchedule::gpipe) return double(plan.grad_accum()) * saved[0];
  const std::vector<double>& weight = sums.weight_pass[std::size_t(rank)];
  double live = 0, peak = 0;
  const int walked = int(walked_micro_batches(par, plan.grad_accum()));
  for (const PipeAction& a : pipeline_actions(par.pp_schedule, par.pp, par.vpp, rank, walked)) {
    const auto c = std::size_t(a.chunk);
    switch (a.pass) {
      case PipePass::forward: live += saved[c], peak = std::max(peak, live); break;
      case PipePass::backward: live -= saved[c]; break;
      case PipePass::backward_input: live += weight[c] - saved[c]; break;
      case PipePass::backward_weight: live -= weight[c]; break;
    }
  }
  return peak;
}

// Under pipeline parallelism with gradients reduced once per step (torch.distributed.pipelining), FSDP2
// accumulates every unit's unsharded gradient in the reduce dtype (at least 2 bytes in the planner's
// space) from the unit's first backward until its reduction after the last micro-batch: at the start of
// a chunk's last backward all of them are alive, with that micro-batch's saved activations.
double accumulated_grads_bound(const Plan& plan, const ChunkSums& sums, int rank) {
  const auto& par = plan.parallelism;
  if (par.pp == 1 || plan.reduce_grads != ReduceGrads::last_micro_batch || !is_sharded(data_placement(par).params))
    return 0;
  const double grad_bytes = std::min(2.0, dtype_bytes(plan.precision.reduce));
  double most = 0;
  for (std::size_t c = 0; c < std::size_t(par.vpp); ++c)
    most = std::max(most, sums.params[std::size_t(rank)][c] * grad_bytes + sums.saved[std::size_t(rank)][c]);
  return most;
}

MemoryBound rank_bound(const Plan& plan, const ChunkSums& sums, int rank) {
  MemoryBound b;
  const auto& par = plan.parallelism;
  double total = 0;
  for (double p : sums.params[std::size_t(rank)]) total += p;
  const PrecisionPolicy policy{plan.precision.param, plan.precision.reduce, plan.precision.fp32_master_weights};
  const DataPlacement placement = data_placement(par);
  b.state_bytes = is_sharded(placement.params)
                      ? fsdp2_state_bytes(total, par.dp_shard, policy).total()
                      : model_state_bytes(total, sharding_mode(placement), par.dp_shard, policy).total();
  // Communicators the lowering always creates (reshard groups would only add); pipelines add the
  // neighbour and first/last-stage groups.
  const int communicators =
      (par.tp > 1) + (par.cp > 1) + (par.dp_shard > 1) + (par.dp_replicate > 1) + (par.pp > 1 ? 2 : 0);
  const OverheadBytes fixed = overhead_bytes(communicators, 0);
  b.fixed_bytes = fixed.cuda_context + fixed.nccl_buffers;
  b.activation_bytes = std::max(activation_peak(plan, sums, rank), accumulated_grads_bound(plan, sums, rank));
  if (is_sharded(placement.params) && placement.reshard_after_forward && rank == par.pp - 1) {
    // The head (the tied table when embeddings are tied) is gathered while the last forward op runs;
    // divided by tp at most (vocabulary-parallel head), so never more than the lowering allocates.
    const ParamCounts pc = count_params(plan.model);
    const double head_params = double(plan.model.tied_embeddings ? pc.embedding : pc.head) / par.tp;
    b.gathered_bytes = head_params * dtype_bytes(plan.precision.param);
  }
  b.headroom_bytes = allocator_headroom_bytes(b.activation_bytes + b.gathered_bytes);
  return b;
}

}  // namespace

MemoryBound memory_lower_bound(const Plan& plan) {
  const ChunkSums sums = chunk_sums(plan, unit_bytes(plan), unit_params(plan));
  MemoryBound worst;
  for (int rank = 0; rank < plan.parallelism.pp; ++rank) {
    const MemoryBound b = rank_bound(plan, sums, rank);
    if (rank == 0 || b.total() > worst.total()) worst = b;
  }
  return worst;
}

}  // namespace fsdpx
