// program/lower_lora.cpp — LoRA in the step program (Hu et al. 2021, §4.1): the frozen base units are
// all-gathered as in full training but never reduced (lower_units.cpp skips their reductions and their
// gradient buffers); the adapters, which every data-parallel rank holds whole, are all-reduced once after
// the last backward (as DDP would), and the optimizer steps only them. Leaves out tensor and pipeline
// parallelism with LoRA (the plan refuses them).
#include <fmt/format.h>

#include "cost_models/lora_memory.h"
#include "program/group_members.h"
#include "program/lowering.h"

namespace fsdpx::lowering {

void Lowerer::adapter_all_reduce() {
  if (!plan_.lora) return;
  Op op;
  op.name = op_name("ar.lora");
  op.kind = OpKind::all_reduce;
  op.stream = StreamKind::all_reduce;
  op.collective = Collective::all_reduce;
  op.payload = Payload::adapter_grads;
  op.comm_bytes = lora_params(plan_.model, *plan_.lora) * rb_;
  op.group = plan_.parallelism.cp > 1 ? dp_cp_group_ : all_group_;
  if (!compute_ops_.empty()) op.deps.push_back(compute_ops_.back());
  reduce_ops_.push_back(add_op(std::move(op)));
}

StateBytes Lowerer::lora_resident_state() const {
  double base = 0;
  for (double p : params_) base += p;
  const int shards = is_sharded(placement_.params) ? shard_group_ranks(plan_.parallelism) : 1;
  return lora_state_bytes(base, lora_params(plan_.model, *plan_.lora), shards, plan_.precision.param);
}

}  // namespace fsdpx::lowering
