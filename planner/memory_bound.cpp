// planner/memory_bound.cpp — the pruning bound of memory_bound.h, built from the same cost-model
// calls the lowering uses (program/lower.cpp resident_memory, program/segment_work.cpp
// segment_memory, program/pipeline_schedule.cpp pass order) so that it stays below the simulated peak by
// construction.
#include "planner/memory_bound.h"

#include <algorithm>
#include <array>
#include <optional>
#include <span>

#include "core/errors.h"
#include "cost_models/lora_memory.h"
#include "cost_models/memory.h"
#include "cost_models/params.h"
#include "cost_models/stack_costs.h"
#include "program/lower.h"
#include "program/pipeline_schedule.h"
#include "program/segment_work.h"

namespace fsdpx {

namespace {

// Index of a module in module_names(): embedding 0, block.i 1 + i, final_norm L + 1, head L + 2.
int module_index(const std::string& name, std::int64_t layers) {
  if (name == "embedding") return 0;
  if (name == "final_norm") return int(layers) + 1;
  if (name == "head") return int(layers) + 2;
  return 1 + std::stoi(name.substr(6));  // "block.<i>"
}

// Per pipeline rank and model chunk (flat, [rank * vpp + chunk]): the units' saved activations,
// weight-pass bytes, and parameters.
struct ChunkSums {
  std::size_t vpp = 1;
  std::vector<double> saved, weight_pass, params;
  double at(const std::vector<double>& v, int rank, std::size_t chunk) const {
    return v[std::size_t(rank) * vpp + chunk];
  }
};

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

// What pipeline rank `rank` holds at each of its forwards, walking its passes in schedule order
// (walked_micro_batches of them): per chunk the micro-batches whose activations are saved (a forward adds
// one, a backward or ZB's B removes it) and, under ZB, those whose B kept what W needs (W removes it). The
// walk is the lowering's activation category exactly (only compute ops touch it); distinct states once.
std::vector<std::vector<int>> forward_states(const std::vector<PipeAction>& actions, int vpp) {
  const std::size_t width = std::size_t(2 * vpp);
  std::vector<int> held(width, 0);  // [saved per chunk..., weight-pass per chunk...]
  std::vector<int> rows;            // one state per forward, `width` counts each
  for (const PipeAction& a : actions) {
    const auto c = std::size_t(a.chunk), w = std::size_t(vpp) + c;
    switch (a.pass) {
      case PipePass::forward:
        ++held[c];
        // The steady phase repeats one state: keep a row only when it differs from the last one kept.
        if (rows.empty() || !std::equal(held.begin(), held.end(), rows.end() - long(width)))
          rows.insert(rows.end(), held.begin(), held.end());
        break;
      case PipePass::backward: --held[c]; break;
      case PipePass::backward_input: --held[c], ++held[w]; break;
      case PipePass::backward_weight: --held[w]; break;
    }
  }
  std::vector<std::size_t> order(rows.size() / width);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i * width;
  auto row = [&](std::size_t at) { return std::span<const int>(rows.data() + at, width); };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::ranges::lexicographical_compare(row(a), row(b));
  });
  std::vector<std::vector<int>> states;
  for (std::size_t at : order)
    if (states.empty() || !std::ranges::equal(states.back(), row(at)))
      states.emplace_back(row(at).begin(), row(at).end());
  return states;
}

// The most activation bytes pipeline rank `rank` holds at once: the largest of its forward states
// (forward_states), each chunk's saved activations and weight-pass bytes times its counts. GPipe runs
// every forward before the first backward: all micro-batches at once. Without pipelining: one
// micro-batch of every module.
double activation_peak(const Plan& plan, const ChunkSums& sums, int rank,
                       const std::vector<std::vector<std::vector<int>>>& states) {
  const auto& par = plan.parallelism;
  if (par.pp == 1) return sums.at(sums.saved, rank, 0);
  if (par.pp_schedule == PipelineSchedule::gpipe) return double(plan.grad_accum()) * sums.at(sums.saved, rank, 0);
  double peak = 0;
  for (const std::vector<int>& held : states[std::size_t(rank)]) {
    double live = 0;
    for (std::size_t c = 0; c < sums.vpp; ++c)
      live += held[c] * sums.at(sums.saved, rank, c) + held[sums.vpp + c] * sums.at(sums.weight_pass, rank, c);
    peak = std::max(peak, live);
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
    most = std::max(most, sums.at(sums.params, rank, c) * grad_bytes + sums.at(sums.saved, rank, c));
  return most;
}

// The head's parameters (the tied table when embeddings are tied). An MoE model is llama-arch with a
// vocab x hidden table and head (cost_models/moe_params.h); count_params counts dense models.
double head_table_params(const ModelSpec& m) {
  if (m.is_moe()) return double(m.vocab) * double(m.hidden);
  const ParamCounts pc = count_params(m);
  return double(m.tied_embeddings ? pc.embedding : pc.head);
}

// What a rank's bound holds whatever the recompute pattern: its model state, the fixed overheads and the
// head gathered on the last rank (activations and headroom are added per pattern, MemoryBoundModel::bound).
MemoryBound rank_base(const Plan& plan, const ChunkSums& sums, int rank) {
  MemoryBound b;
  const auto& par = plan.parallelism;
  double total = 0;
  for (std::size_t c = 0; c < sums.vpp; ++c) total += sums.at(sums.params, rank, c);
  const PrecisionPolicy policy{plan.precision.param, plan.precision.reduce, plan.precision.fp32_master_weights};
  const DataPlacement placement = data_placement(par);
  b.state_bytes = plan.lora ? lora_state_bytes(total, lora_params(plan.model, *plan.lora),
                                                is_sharded(placement.params) ? par.dp_shard : 1, plan.precision.param)
                                   .total()
                  : is_sharded(placement.params)
                      ? fsdp2_state_bytes(total, par.dp_shard, policy).total()
                      : model_state_bytes(total, sharding_mode(placement), par.dp_shard, policy).total();
  // FSDP2's sharded gradients appear with the first reduce-scatter (program/lower_units.cpp reduce),
  // after the last forward op of a one-micro-batch step: left out.
  if (!plan.lora && is_sharded(placement.params) &&
      sharded_grads_from_reduction(stack_costs(plan.framework, plan.compiled).fsdp))
    b.state_bytes -= fsdp2_state_bytes(total, par.dp_shard, policy).grads;
  // Communicators the lowering always creates (reshard groups would only add); pipelines add the
  // neighbour and first/last-stage groups.
  const int communicators =
      (par.tp > 1) + (par.cp > 1) + (par.dp_shard > 1) + (par.dp_replicate > 1) + (par.pp > 1 ? 2 : 0);
  const OverheadBytes fixed = overhead_bytes(communicators, 0);
  b.fixed_bytes = fixed.cuda_context + fixed.nccl_buffers;
  if (is_sharded(placement.params) && placement.reshard_after_forward && rank == par.pp - 1) {
    // The head (the tied table when embeddings are tied) is gathered while the last forward op runs;
    // divided by tp at most (vocabulary-parallel head), so never more than the lowering allocates.
    const double head_params = head_table_params(plan.model) / par.tp;
    b.gathered_bytes = head_params * dtype_bytes(plan.precision.param);
  }
  return b;
}

}  // namespace

// What does not depend on the recompute pattern: every unit's modules and parameters, the per-block
// memory of each recompute mode (identical blocks), the non-block modules' bytes per unit, and each
// pipeline rank's forward states.
MemoryBoundModel::MemoryBoundModel(const Plan& plan, bool every_mode) : plan_(&plan), params_(unit_params(plan)) {
  const std::int64_t layers = plan.model.layers;
  // A block's bytes depend on its own mode only: those of the plan's modes from the plan itself, the
  // others from one copy of it (only when asked for every mode).
  std::optional<Plan> uniform;
  for (std::size_t m = 0; m < block_.size(); ++m) {
    const auto it = std::find(plan.recompute.begin(), plan.recompute.end(), RecomputeMode(m));
    known_[m] = it != plan.recompute.end() || every_mode;
    if (it != plan.recompute.end()) {
      block_[m] = segment_memory(plan, 1 + int(it - plan.recompute.begin()), 1);
    } else if (every_mode) {
      if (!uniform) uniform = plan;
      uniform->recompute.assign(std::size_t(layers), RecomputeMode(m));
      block_[m] = segment_memory(*uniform, 1, 1);
    }
  }
  for (const PlanUnit& u : plan.units) {
    std::vector<int> blocks;
    SegmentMemory rest;
    for (const std::string& name : u.modules) {
      const int i = module_index(name, layers);
      if (i >= 1 && i <= layers) { blocks.push_back(i - 1); continue; }
      const SegmentMemory m = segment_memory(plan, i, 1);
      rest.saved_activation_bytes += m.saved_activation_bytes;
      rest.weight_pass_bytes += m.weight_pass_bytes;
    }
    unit_blocks_.push_back(std::move(blocks));
    unit_rest_.push_back(rest);
  }
  const auto& par = plan.parallelism;
  vpp_ = std::size_t(par.vpp);
  params_sum_.assign(std::size_t(par.pp) * vpp_, 0.0);
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    const int stage = plan.units[u].stage;
    unit_slot_.push_back(std::size_t(stage_rank(stage, par.pp)) * vpp_ + std::size_t(stage_chunk(stage, par.pp)));
    params_sum_[unit_slot_.back()] += params_[u];
  }
  const ChunkSums sums{vpp_, {}, {}, params_sum_};
  for (int rank = 0; rank < par.pp; ++rank) base_.push_back(rank_base(plan, sums, rank));
  if (par.pp == 1 || par.pp_schedule == PipelineSchedule::gpipe) return;
  const int walked = int(walked_micro_batches(par, plan.grad_accum()));
  for (int rank = 0; rank < par.pp; ++rank)
    states_.push_back(forward_states(pipeline_actions(par.pp_schedule, par.pp, par.vpp, rank, walked), par.vpp));
}

// Per unit in unit order, as the lowering sums them: its non-block modules, then its blocks' bytes for
// their modes; per rank the pattern-independent part (rank_base) with these activations and their headroom.
MemoryBound MemoryBoundModel::bound(const std::vector<RecomputeMode>& recompute) const {
  ChunkSums sums{vpp_, std::vector<double>(params_sum_.size(), 0.0), std::vector<double>(params_sum_.size(), 0.0),
                 params_sum_};
  for (std::size_t u = 0; u < unit_blocks_.size(); ++u) {
    double saved = unit_rest_[u].saved_activation_bytes, weight = unit_rest_[u].weight_pass_bytes;
    for (int i : unit_blocks_[u]) {
      const auto mode = std::size_t(recompute[std::size_t(i)]);
      FSDP_CHECK(known_[mode], "MemoryBoundModel: a recompute mode the model was not built for");
      const SegmentMemory& m = block_[mode];
      saved += m.saved_activation_bytes;
      weight += m.weight_pass_bytes;
    }
    sums.saved[unit_slot_[u]] += saved;
    sums.weight_pass[unit_slot_[u]] += weight;
  }
  MemoryBound worst;
  for (int rank = 0; rank < plan_->parallelism.pp; ++rank) {
    MemoryBound b = base_[std::size_t(rank)];
    b.activation_bytes =
        std::max(activation_peak(*plan_, sums, rank, states_), accumulated_grads_bound(*plan_, sums, rank));
    b.headroom_bytes = allocator_headroom_bytes(b.activation_bytes + b.gathered_bytes);
    if (rank == 0 || b.total() > worst.total()) worst = b;
  }
  return worst;
}

MemoryBound memory_lower_bound(const Plan& plan) { return MemoryBoundModel(plan, false).bound(plan.recompute); }

}  // namespace fsdpx
