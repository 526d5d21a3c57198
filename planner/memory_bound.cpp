// planner/memory_bound.cpp — the pruning bound of memory_bound.h, built from the same cost-model
// calls the lowering uses (program/lower.cpp resident_memory, program/segment_work.cpp
// segment_memory, program/pipeline_schedule.cpp pass order) so that it stays below the simulated peak by
// construction.
#include "planner/memory_bound.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "core/data_placement.h"
#include "core/errors.h"
#include "cost_models/compute_fp8.h"
#include "cost_models/memory.h"
#include "cost_models/params.h"
#include "cost_models/stack_costs.h"
#include "planner/kept_gathered.h"
#include "planner/pass_states.h"
#include "planner/rank_state.h"
#include "program/group_members.h"
#include "program/lower.h"
#include "program/moe_block.h"
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

// The most bytes of `states` (held rows, pass_states.h) with each chunk's saved and weight-pass bytes.
double held_peak(const ChunkSums& sums, int rank, const HeldRows& states) {
  double peak = 0;
  for (const std::vector<int>& held : states) {
    double live = 0;
    for (std::size_t c = 0; c < sums.vpp; ++c)
      live += held[c] * sums.at(sums.saved, rank, c) + held[sums.vpp + c] * sums.at(sums.weight_pass, rank, c);
    peak = std::max(peak, live);
  }
  return peak;
}

// The least of a per-chunk figure over pipeline rank `rank`'s chunks (which chunk's pass a held row is,
// the walk does not keep).
double least_over_chunks(const ChunkSums& sums, int rank, const std::vector<double>& per_chunk) {
  double least = std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < sums.vpp; ++c) least = std::min(least, sums.at(per_chunk, rank, c));
  return least;
}

// The most activation bytes pipeline rank `rank` holds at once: the largest of its forward states
// (pass_states.h), each chunk's saved activations and weight-pass bytes times its counts; or at the start
// of a whole backward pass, whose first op (of the chunk's last module) adds at least `backward_extra`
// (the least over the rank's chunks). GPipe runs every forward before the first backward: all
// micro-batches at once. Without pipelining: one micro-batch of every module.
double activation_peak(const Plan& plan, const ChunkSums& sums, int rank, const HeldRows& forward,
                       const HeldRows& backward, const std::vector<double>& backward_extra) {
  const auto& par = plan.parallelism;
  if (par.pp == 1) return sums.at(sums.saved, rank, 0);
  if (par.pp_schedule == PipelineSchedule::gpipe) return double(plan.grad_accum()) * sums.at(sums.saved, rank, 0);
  const double at_backward =
      backward.empty() ? 0.0 : held_peak(sums, rank, backward) + least_over_chunks(sums, rank, backward_extra);
  return std::max(held_peak(sums, rank, forward), at_backward);
}

// Under pipeline parallelism with gradients reduced once per step (torch.distributed.pipelining), FSDP2
// accumulates every unit's unsharded gradient (autograd_grad_bytes) from the unit's first backward until
// its reduction after the last micro-batch: at the start of a chunk's last backward all of them are
// alive, with that micro-batch's saved activations; that backward's first op, of the chunk's last
// module, holds its working bytes (`working`, per chunk).
double accumulated_grads_bound(const Plan& plan, const ChunkSums& sums, int rank, const std::vector<double>& working) {
  const auto& par = plan.parallelism;
  // With one micro-batch a unit's gradient appears at its own backward: they are not all alive at once.
  if (par.pp == 1 || plan.grad_accum() < 2 || plan.reduce_grads != ReduceGrads::last_micro_batch ||
      !is_sharded(data_placement(par).params))
    return 0;
  const double grad_bytes = autograd_grad_bytes(plan);
  double most = 0;
  for (std::size_t c = 0; c < std::size_t(par.vpp); ++c)
    most = std::max(most, sums.at(sums.params, rank, c) * grad_bytes + sums.at(sums.saved, rank, c) +
                              sums.at(working, rank, c));
  return most;
}

// Per pipeline rank and chunk (flat, [rank * vpp + chunk]): the parameters (after TP) of the chunk's last
// module when it is a block and parameters are sharded under pipelining, else 0. The unit holding it
// gathers at least that block for its forward and backward (as the lowering sizes a gather,
// program/lower.cpp gather_bytes_: the param dtype, a block's linear weights in fp8 under fp8 all-gather),
// and from its first backward holds at least that block's unsharded gradient (autograd_grad_bytes).
std::vector<double> last_block_params(const Plan& plan, const std::vector<int>& last,
                                      const std::vector<double>& params_per_unit) {
  std::vector<double> out(last.size(), 0.0);
  const auto& par = plan.parallelism;
  if (par.pp == 1 || !is_sharded(data_placement(par).params) || plan.lora) return out;
  // A unit of that block alone (the shapes' per-block wrapping) already has the count.
  std::vector<bool> found(last.size(), false);
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    const auto& modules = plan.units[u].modules;
    if (modules.size() != 1 || modules.front().rfind("block.", 0) != 0) continue;
    const int i = module_index(modules.front(), plan.model.layers);
    for (std::size_t slot = 0; slot < last.size(); ++slot)
      if (last[slot] == i) out[slot] = params_per_unit[u], found[slot] = true;
  }
  bool missing = false;
  for (std::size_t slot = 0; slot < last.size(); ++slot)
    missing |= !found[slot] && last[slot] >= 1 && last[slot] <= plan.model.layers;
  if (!missing) return out;
  Plan alone = plan;  // one unit per chunk's last block, for unit_params' per-module counts
  alone.units.clear();
  std::vector<std::size_t> slot_of;
  for (std::size_t slot = 0; slot < last.size(); ++slot)
    if (last[slot] >= 1 && last[slot] <= plan.model.layers) {
      alone.units.push_back(PlanUnit{{fmt::format("block.{}", last[slot] - 1)}, 1, 0});
      slot_of.push_back(slot);
    }
  const std::vector<double> params = unit_params(alone);
  for (std::size_t i = 0; i < params.size(); ++i) out[slot_of[i]] = params[i];
  return out;
}

// Gather bytes of last_block_params' blocks.
std::vector<double> block_gather_bytes(const Plan& plan, const std::vector<double>& block_params) {
  const double pb = dtype_bytes(plan.precision.param);
  const double linear_bytes = fp8_linear_params_per_block(plan.model) / plan.parallelism.tp *
                              (pb - fp8_linear_gather_bytes(plan.fp8, pb));
  std::vector<double> out;
  for (double p : block_params) out.push_back(p > 0 ? std::max(0.0, p * pb - linear_bytes) : 0.0);
  return out;
}

// Per pipeline rank and chunk (flat): the module index of the chunk's last module, -1 for an empty chunk.
std::vector<int> last_modules(const Plan& plan, const std::vector<std::size_t>& unit_slot, std::size_t slots) {
  std::vector<int> last(slots, -1);
  for (std::size_t u = 0; u < plan.units.size(); ++u)
    for (const std::string& name : plan.units[u].modules)
      last[unit_slot[u]] = std::max(last[unit_slot[u]], module_index(name, plan.model.layers));
  return last;
}

// Per pipeline rank and chunk (flat): the working bytes of the backward op of the chunk's last module
// when it is a block (program/lower_units.cpp backward_segment allocates them at the op's start; a
// segment's are the most of its blocks', program/segment_work.cpp); 0 otherwise. Under pipelining only.
std::vector<double> last_block_working_bytes(const Plan& plan, const std::vector<int>& last) {
  std::vector<double> out(last.size(), 0.0);
  if (plan.parallelism.pp == 1) return out;
  for (std::size_t slot = 0; slot < last.size(); ++slot)
    if (last[slot] >= 1 && last[slot] <= plan.model.layers)
      out[slot] = segment_memory(plan, last[slot], 1).backward_working_bytes;
  return out;
}

// The head's parameters (the tied table when embeddings are tied). An MoE model is llama-arch with a
// vocab x hidden table and head (cost_models/moe_params.h); count_params counts dense models.
double head_table_params(const ModelSpec& m) {
  if (m.is_moe()) return double(m.vocab) * double(m.hidden);
  const ParamCounts pc = count_params(m);
  return double(m.tied_embeddings ? pc.embedding : pc.head);
}

// What a rank's bound holds whatever the recompute pattern: its model state, the fixed overheads and the
// head gathered on the last rank, or without pipelining every unit the plan keeps gathered after forward
// (kept_gathered_bytes; activations and headroom are added per pattern, MemoryBoundModel::bound).
MemoryBound rank_base(const Plan& plan, const ChunkSums& sums, const std::vector<double>& state_sum, int rank,
                      const std::vector<double>& last_gather, const std::vector<double>& gather_per_unit) {
  MemoryBound b;
  const auto& par = plan.parallelism;
  double local = 0, state = 0;
  for (std::size_t c = 0; c < sums.vpp; ++c) local += sums.at(sums.params, rank, c), state += sums.at(state_sum, rank, c);
  const DataPlacement placement = data_placement(par);
  b.state_bytes = rank_state_bytes(plan, local, state);
  // Communicators the lowering always creates (reshard groups would only add); pipelines add the
  // neighbour and first/last-stage groups, expert parallelism its ep group and the experts' FSDP group.
  const int communicators = (par.tp > 1) + (par.cp > 1) + (shard_group_ranks(par) > 1) + (par.dp_replicate > 1) +
                            (par.pp > 1 ? 2 : 0) + (par.ep > 1) + (par.ep > 1 && expert_fsdp_ranks(par) > 1);
  const OverheadBytes fixed = overhead_bytes(communicators, 0);
  b.fixed_bytes = fixed.cuda_context + fixed.nccl_buffers;
  if (is_sharded(placement.params) && placement.reshard_after_forward && rank == par.pp - 1) {
    // The head (the tied table when embeddings are tied) is gathered while the last forward op runs;
    // divided by tp at most (vocabulary-parallel head), so never more than the lowering allocates.
    const double head_params = head_table_params(plan.model) / par.tp;
    b.gathered_bytes = head_params * dtype_bytes(plan.precision.param);
  }
  const double kept = kept_gathered_bytes(plan, gather_per_unit);
  if (kept >= 0) b.gathered_bytes = std::max(b.gathered_bytes, kept);
  // The activation peak (or the accumulated gradients) falls at one of the rank's chunks' last modules,
  // which one the walk does not keep: the least of them.
  double least_gather = std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < sums.vpp; ++c) least_gather = std::min(least_gather, sums.at(last_gather, rank, c));
  b.gathered_bytes += least_gather;
  return b;
}

}  // namespace

double autograd_grad_bytes(const Plan& plan) {
  const bool flat = stack_costs(plan.framework, plan.compiled).fsdp == FsdpImpl::flat;
  return dtype_bytes(flat ? plan.precision.reduce : plan.precision.param);
}

// What does not depend on the recompute pattern: every unit's modules and parameters, the per-block
// memory of each recompute mode (identical blocks), the non-block modules' bytes per unit, and each
// pipeline rank's forward states.
MemoryBoundPart::MemoryBoundPart(const Plan& plan, bool every_mode) : params_(unit_params(plan)) {
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
  state_sum_.assign(params_sum_.size(), 0.0);
  const std::vector<double> state = unit_state_params(plan);
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    const int stage = plan.units[u].stage;
    unit_slot_.push_back(std::size_t(stage_rank(stage, par.pp)) * vpp_ + std::size_t(stage_chunk(stage, par.pp)));
    params_sum_[unit_slot_.back()] += params_[u];
    state_sum_[unit_slot_.back()] += state[u];
  }
  rank_terms(plan);
}

// What a backward pass's first op adds, the chunks' last gathers, and the schedule's states.
void MemoryBoundPart::rank_terms(const Plan& plan) {
  const auto& par = plan.parallelism;
  const std::vector<int> last = last_modules(plan, unit_slot_, params_sum_.size());
  const std::vector<double> block_params = last_block_params(plan, last, params_);
  last_gather_ = block_gather_bytes(plan, block_params);
  unit_gather_ = unit_gather_bytes(plan, params_);
  last_working_ = last_block_working_bytes(plan, last);
  // A whole backward pass's first op holds its working bytes and its unit's gradient (at least the block's).
  for (std::size_t slot = 0; slot < last.size(); ++slot)
    backward_extra_.push_back(last_working_[slot] + block_params[slot] * autograd_grad_bytes(plan));
  // A chunk's later backward passes, with gradients reduced once per step, find every unit's gradient
  // of the chunk alive since the first (accumulated_grads_bound's premise, at every later pass).
  const bool accumulates = par.pp > 1 && plan.reduce_grads == ReduceGrads::last_micro_batch && !plan.lora &&
                           is_sharded(data_placement(par).params);
  for (std::size_t slot = 0; slot < last.size(); ++slot)
    later_extra_.push_back(std::max(backward_extra_[slot], accumulates ? params_sum_[slot] * autograd_grad_bytes(plan) +
                                                                             last_working_[slot]
                                                                       : 0.0));
  if (par.pp == 1 || par.pp_schedule == PipelineSchedule::gpipe) return;
  const int walked = int(walked_micro_batches(par, plan.grad_accum()));
  pass_states_ = pipeline_pass_states(par.pp_schedule, par.pp, par.vpp, walked);
}

// Per unit in unit order, as the lowering sums them: its non-block modules, then its blocks' bytes for
// their modes; per rank the activation peak (or the accumulated gradients) of these sums.
const std::vector<double>& MemoryBoundPart::activations(const Plan& plan,
                                                        const std::vector<RecomputeMode>& recompute) const {
  const auto found = activations_.find(recompute);
  if (found != activations_.end()) return found->second;
  static const HeldRows kNone;
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
  // held_peak may keep only the maximal rows (pass_states.cpp) because these bytes are never negative.
  FSDP_CHECK(std::ranges::all_of(sums.saved, [](double x) { return x >= 0; }) &&
                 std::ranges::all_of(sums.weight_pass, [](double x) { return x >= 0; }),
             "MemoryBoundModel: negative activation bytes");
  std::vector<double> out;
  for (int rank = 0; rank < plan.parallelism.pp; ++rank) {
    const std::array<HeldRows, 3>* rows = pass_states_ ? &(*pass_states_)[std::size_t(rank)] : nullptr;
    double bytes = std::max(activation_peak(plan, sums, rank, rows ? (*rows)[0] : kNone, rows ? (*rows)[1] : kNone,
                                            backward_extra_),
                            accumulated_grads_bound(plan, sums, rank, last_working_));
    if (rows && !(*rows)[2].empty())
      bytes = std::max(bytes, held_peak(sums, rank, (*rows)[2]) + least_over_chunks(sums, rank, later_extra_));
    out.push_back(bytes);
  }
  return activations_.emplace(recompute, std::move(out)).first->second;
}

std::string memory_bound_key(const Plan& plan, bool every_mode) {
  const Parallelism& par = plan.parallelism;
  // Of data_parallel, the part reads only whether parameters are sharded (hsdp and fsdp share a part).
  std::string key = fmt::format(
      "{} {} {} {} {} {} {} {} {} | {} {} {} {} {} | {} {} {} {} {} {} {} {} |", every_mode, par.tp, par.cp,
      par.sequence_parallel, par.pp, par.vpp, par.ep, int(par.pp_schedule), is_sharded(data_placement(par).params),
      plan.training.micro_batch, plan.training.seq, plan.grad_accum(), plan.model.name, plan.model.layers,
      int(plan.precision.param), int(plan.precision.reduce), int(plan.framework), plan.compiled,
      int(plan.reduce_grads), int(plan.attention_kernel), plan.training.dropout, plan.framework_version);
  if (plan.fp8) key += fmt::format("fp8 {} {} |", int(plan.fp8->scaling), plan.fp8->all_gather);
  if (plan.lora) key += fmt::format("lora {} {} |", plan.lora->rank, plan.lora->targets.size());
  if (plan.model.is_moe()) key += fmt::format("moe {} |", plan.moe_routing.token_imbalance);
  for (RecomputeMode m : plan.recompute) key += char('0' + int(m));
  // Units cover the modules once and in order (core/plan.h parse_plan, shapes.h shape_plan): their sizes and
  // stages name their modules.
  for (const PlanUnit& u : plan.units) {
    key += ' ', key += std::to_string(u.stage), key += ':', key += std::to_string(u.modules.size());
    if (u.modules.size() == 1 && u.modules.front().rfind("block.", 0) != 0) key += u.modules.front();
  }
  return key;
}

// The data-parallel part per rank (rank_base) over the shared part.
MemoryBoundModel::MemoryBoundModel(const Plan& plan, bool every_mode, MemoryBoundMemo* memo) : plan_(&plan) {
  if (memo) {
    std::shared_ptr<const MemoryBoundPart>& part = (*memo)[memory_bound_key(plan, every_mode)];
    if (!part) part = std::make_shared<const MemoryBoundPart>(plan, every_mode);
    part_ = part;
  } else {
    part_ = std::make_shared<const MemoryBoundPart>(plan, every_mode);
  }
  const MemoryBoundPart& p = *part_;
  const ChunkSums sums{p.vpp_, {}, {}, p.params_sum_};
  for (int rank = 0; rank < plan.parallelism.pp; ++rank)
    base_.push_back(rank_base(plan, sums, p.state_sum_, rank, p.last_gather_, p.unit_gather_));
}

// Per rank the pattern-independent part (rank_base) with the pattern's activations and their headroom.
MemoryBound MemoryBoundModel::bound(const std::vector<RecomputeMode>& recompute) const {
  const std::vector<double>& activations = part_->activations(*plan_, recompute);
  MemoryBound worst;
  for (int rank = 0; rank < plan_->parallelism.pp; ++rank) {
    MemoryBound b = base_[std::size_t(rank)];
    b.activation_bytes = activations[std::size_t(rank)];
    b.headroom_bytes = allocator_headroom_bytes(b.activation_bytes + b.gathered_bytes);
    if (rank == 0 || b.total() > worst.total()) worst = b;
  }
  return worst;
}

MemoryBound memory_lower_bound(const Plan& plan) { return MemoryBoundModel(plan, false).bound(plan.recompute); }

}  // namespace fsdpx
