// planner/backward_gather_bound.cpp — ConfiguredMemoryBound (backward_gather_bound.h), from the same
// cost-model calls the lowering uses (program/segment_work.cpp segment_memory, unit_params,
// kept_gathered.h unit_gather_bytes) so that it stays below the simulated peak by construction
// (tests/planner/test_memory_bound.cpp checks it over wrappings, reshards and recompute modes).
#include "planner/backward_gather_bound.h"

#include <algorithm>

#include "core/data_placement.h"
#include "cost_models/memory.h"
#include "planner/kept_gathered.h"
#include "program/lower.h"
#include "program/segment_work.h"
#include "simulator/certain_order.h"
#include "simulator/steady_state_pipeline.h"

namespace fsdpx {

namespace {

// The block index of a module name "block.<i>", or -1 for any other module.
int block_of(const std::string& name) { return name.rfind("block.", 0) == 0 ? std::stoi(name.substr(6)) : -1; }

}  // namespace

ConfiguredMemoryBound::ConfiguredMemoryBound(const Plan& plan) : plan_(&plan), shape_(plan, true), kept_(pipelined_kept_bound(plan)) {
  const auto& par = plan.parallelism;
  applies_ = par.pp == 1 && !plan.model.is_moe() && !plan.lora && is_sharded(data_placement(par).params);
  if (!applies_) return;
  const MemoryBound b = shape_.bound(plan.recompute);  // its state and fixed parts hold for every pattern
  resident_bytes_ = b.state_bytes + b.fixed_bytes;
  embedding_saved_bytes_ = segment_memory(plan, 0, 1).saved_activation_bytes;
  Plan uniform = plan;
  for (std::size_t m = 0; m < block_.size(); ++m) {
    uniform.recompute.assign(plan.recompute.size(), RecomputeMode(m));
    block_[m] = segment_memory(uniform, 1, 1);
  }
  const std::vector<double> params = unit_params(plan);
  const std::vector<double> gather = unit_gather_bytes(plan, params);
  const double grad_bytes = autograd_grad_bytes(plan);
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    int last = -1;
    bool blocks_only = !plan.units[u].modules.empty();
    for (const std::string& name : plan.units[u].modules) {
      const int i = block_of(name);
      blocks_only &= i >= 0;
      last = std::max(last, i);
    }
    if (!blocks_only) continue;
    last_block_.push_back(last);
    held_bytes_.push_back(gather[u] + params[u] * grad_bytes);
    unit_.push_back(int(u));
    double kept = u > 0 ? gather[u - 1] : 0.0;  // the unit backwarded next, prefetched
    for (std::size_t j = 0; j + 1 < u; ++j)
      if (plan.units[j].reshard_after_forward == 0) kept += gather[j];
    guessed_other_bytes_.push_back(kept);
  }
  other_gathered_bytes_.assign(unit_.size(), 0.0);
}

void ConfiguredMemoryBound::count_certain_gathers() {
  if (!applies_ || unit_.empty()) return;
  const StepProgram program =
      lower(with_micro_batches(*plan_, std::min<std::int64_t>(plan_->grad_accum(), 2)), LowerOptions{.op_names = false});
  const std::vector<Op>& ops = program.roles.front().ops;
  std::vector<int> first_backward(plan_->units.size(), -1);
  for (int id = 0; id < int(ops.size()); ++id) {
    const Op& op = ops[std::size_t(id)];
    if (op.kind == OpKind::backward && op.micro_batch == 0 && op.unit >= 0 && first_backward[std::size_t(op.unit)] < 0)
      first_backward[std::size_t(op.unit)] = id;
  }
  std::vector<int> at;
  for (int u : unit_) {
    if (first_backward[std::size_t(u)] < 0) return;  // not the op graph this bound reads: no facts
    at.push_back(first_backward[std::size_t(u)]);
  }
  other_gathered_bytes_ = certain_other_gathers_bytes(program, 0, at, CertainOrder(program.roles.front()));
}

double ConfiguredMemoryBound::backward_gather_bytes(const std::vector<RecomputeMode>& recompute,
                                                    const std::vector<double>& other) const {
  std::vector<double> saved_through(recompute.size() + 1, embedding_saved_bytes_);  // [i]: modules before block i
  for (std::size_t i = 0; i < recompute.size(); ++i)
    saved_through[i + 1] = saved_through[i] + block_[std::size_t(recompute[i])].saved_activation_bytes;
  double most = 0;
  for (std::size_t k = 0; k < last_block_.size(); ++k) {
    const auto last = std::size_t(last_block_[k]);
    const double step_bytes = saved_through[last + 1] + held_bytes_[k] + other[k] +
                              block_[std::size_t(recompute[last])].backward_working_bytes;
    most = std::max(most, resident_bytes_ + step_bytes + allocator_headroom_bytes(step_bytes));
  }
  return most;
}

double ConfiguredMemoryBound::total(const std::vector<RecomputeMode>& recompute) const {
  const double shape = std::max(shape_.bound(recompute).total(), pipelined_kept_bytes(kept_, recompute));
  return applies_ ? std::max(shape, backward_gather_bytes(recompute, other_gathered_bytes_)) : shape;
}

double ConfiguredMemoryBound::guessed_total(const std::vector<RecomputeMode>& recompute) const {
  const double shape = std::max(shape_.bound(recompute).total(), pipelined_kept_bytes(kept_, recompute));
  return applies_ ? std::max(shape, backward_gather_bytes(recompute, guessed_other_bytes_)) : shape;
}

}  // namespace fsdpx
