// cost_models/expert_memory.cpp — expert state under ep x FSDP and routed activations of one MoE block
// (what each counts in cost_models/expert_memory.h). Leaves out NCCL buffers and expert recompute.
#include "cost_models/expert_memory.h"

#include "core/errors.h"
#include "core/expert_parallel.h"

namespace fsdpx {

double local_expert_params(const ModelSpec& m, const Parallelism& p) {
  FSDP_CHECK(m.is_moe() && p.tp >= 1, "local_expert_params: an MoE model");
  const double moe_layers = double(m.layers - m.moe.dense_layers);
  const double per_expert = 3.0 * double(m.hidden) * double(m.moe.expert_ffn_hidden) / p.tp;
  return moe_layers * double(local_experts(m, p)) * per_expert;
}

StateBytes expert_state_bytes(const ModelSpec& m, const Parallelism& p, const PrecisionPolicy& policy) {
  return fsdp2_state_bytes(local_expert_params(m, p), expert_fsdp_ranks(p), policy);
}

RoutedActivationBytes routed_activation_bytes(const ModelSpec& m, const RoutedLoad& l, int tp, DType act) {
  FSDP_CHECK(m.is_moe() && tp >= 1, "routed_activation_bytes: an MoE model");
  const double b = dtype_bytes(act), h = double(m.hidden), f = double(m.moe.expert_ffn_hidden) / tp;
  RoutedActivationBytes r;
  r.dispatch_buffers = (l.mean_rows + l.slowest_rows) * h * b;
  r.saved = l.slowest_rows * (h + 3 * f + h) * b + l.tokens * double(m.moe.experts) * 4;
  return r;
}

}  // namespace fsdpx
