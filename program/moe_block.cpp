// program/moe_block.cpp — MoE block kernels and their all-to-alls in the step program (see
// moe_block.h). Leaves out DeepEP overlap and fp8 experts.
#include "program/moe_block.h"

#include <algorithm>
#include <string_view>

#include "core/errors.h"
#include "cost_models/expert_compute.h"
#include "cost_models/expert_dispatch.h"
#include "cost_models/expert_memory.h"
#include "cost_models/moe_params.h"
#include "program/segment_work.h"

namespace fsdpx {
namespace {

// The dense MLP's kernels in cost_models/compute_block.cpp and compute_elementwise.cpp (by name: the
// MLP norm and residual stay, the MoE block has them too).
bool is_dense_mlp_kernel(const KernelWork& k) {
  const std::string_view n = k.name;
  for (std::string_view prefix : {"mlp_up", "mlp_down", "mlp_act", "mlp_mul", "mlp_silu", "w1", "w3"})
    if (n.substr(0, prefix.size()) == prefix) return true;
  return false;
}

RoutedLoad load_of(const Plan& plan) {
  return routed_load(plan.model, plan.training.micro_batch, plan.training.seq, plan.parallelism, plan.moe_routing);
}

}  // namespace

bool is_moe_block(const Plan& plan, int module) {
  const std::int64_t block = module - 1;  // module 0 is the embedding
  return plan.model.is_moe() && block >= plan.model.moe.dense_layers && block < plan.model.layers;
}

std::vector<KernelWork> block_kernels_of(const Plan& plan, int module, const LayerShape& s, Pass p) {
  std::vector<KernelWork> ks = block_kernels(plan.model, s, p);
  if (!is_moe_block(plan, module)) return ks;
  FSDP_CHECK(!plan.fp8, "block_kernels_of: fp8 MoE experts are not modelled");
  std::erase_if(ks, is_dense_mlp_kernel);
  const auto moe = moe_mlp_kernels(plan.model, load_of(plan), plan.parallelism.tp, s.act_dtype, p);
  ks.insert(ks.end(), moe.begin(), moe.end());
  return ks;
}

void add_moe_all_to_alls(std::vector<SerialCollective>& out, const Plan& plan, int ep_group, int module) {
  if (ep_group < 0 || !is_moe_block(plan, module)) return;
  const RoutedLoad l = load_of(plan);
  const double slowest_over_mean = l.slowest_rows / l.mean_rows;
  const double s = dispatch_all_to_all_bytes(plan.model, l, plan.precision.param) * slowest_over_mean;
  out.push_back({Collective::all_to_all, s, ep_group, 2});
}

std::vector<double> moe_module_params(const Plan& plan) {
  const ModelSpec& m = plan.model;
  FSDP_CHECK(m.is_moe(), "moe_module_params: an MoE model");
  const MoeParamCounts c = count_moe_params(m);
  const double expert = 3.0 * double(m.hidden) * double(m.moe.expert_ffn_hidden);
  const double remote = double(m.moe.experts - local_experts(m, plan.parallelism)) * expert;
  std::vector<double> out{double(c.embedding)};
  for (std::int64_t b = 0; b < m.layers; ++b)
    out.push_back(b < m.moe.dense_layers ? double(c.dense_block) : double(c.moe_block) - remote);
  out.push_back(double(c.final_norm));
  out.push_back(double(c.head));
  return out;
}

double moe_block_activation_bytes(const Plan& plan, const ActivationShape& a, Recompute r) {
  ModelSpec attention_only = plan.model;
  attention_only.ffn_hidden = 0;  // the dense MLP's tensors out; the norms, attention and residuals stay
  const double base = block_activation_bytes(attention_only, a, r);
  if (r == Recompute::full) return base;
  return base + routed_activation_bytes(plan.model, load_of(plan), plan.parallelism.tp, plan.precision.param).saved;
}

double moe_dispatch_buffer_bytes(const Plan& plan) {
  if (plan.parallelism.ep == 1) return 0;
  return routed_activation_bytes(plan.model, load_of(plan), plan.parallelism.tp, plan.precision.param).dispatch_buffers;
}

std::vector<double> unit_expert_params(const Plan& plan) {
  std::vector<double> out(plan.units.size(), 0.0);
  if (!plan.model.is_moe() || plan.parallelism.ep == 1) return out;
  const ModelSpec& m = plan.model;
  const double local = double(local_experts(m, plan.parallelism)) * 3.0 * double(m.hidden) *
                       double(m.moe.expert_ffn_hidden) / plan.parallelism.tp;
  const auto names = module_names(m);
  for (std::size_t u = 0; u < plan.units.size(); ++u)
    for (const std::string& mod : plan.units[u].modules)
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == mod && is_moe_block(plan, int(i))) out[u] += local;
  return out;
}

std::vector<double> unit_state_params(const Plan& plan) {
  std::vector<double> out = unit_params(plan);
  const std::vector<double> experts = unit_expert_params(plan);
  const double extra = double(plan.parallelism.ep) - 1.0;
  for (std::size_t u = 0; u < out.size(); ++u) out[u] += experts[u] * extra;
  return out;
}

}  // namespace fsdpx
