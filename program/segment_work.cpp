// program/segment_work.cpp — kernels, serial collectives and activation bytes of a segment.
#include "program/segment_work.h"

#include "core/errors.h"

#include <algorithm>
#include <map>

#include "cost_models/compute.h"
#include "cost_models/compute_lora.h"
#include "cost_models/estimate.h"
#include "cost_models/memory.h"
#include "cost_models/op_sac.h"
#include "cost_models/params.h"
#include "program/moe_block.h"

namespace fsdpx {

namespace {

RecomputeMode block_recompute(const Plan& plan, int i) { return plan.recompute[std::size_t(i - 1)]; }

LayerShape layer_shape(const Plan& plan) {
  LayerShape s;
  s.micro_batch = plan.training.micro_batch;
  s.seq = plan.training.seq;
  s.tp = plan.parallelism.tp;
  s.cp = plan.parallelism.cp;
  s.sequence_parallel = plan.parallelism.sequence_parallel && plan.parallelism.tp > 1;
  s.act_dtype = plan.precision.param;
  s.attention_kernel = plan.attention_kernel;
  s.dropout = plan.training.dropout > 0;
  s.stack = stack_costs(plan.framework, plan.compiled, plan.framework_version);
  s.fp8 = plan.fp8;
  // torchao's casts are fused only under torch.compile; Transformer Engine's are always its own kernels.
  s.fp8_fused_casts = !plan.fp8 || !fp8_is_torchao(plan.fp8->scaling) || plan.compiled;
  s.fp8_weight_casts_per_micro_batch = 1.0 / double(plan.grad_accum());
  return s;
}

ActivationShape activation_shape(const Plan& plan) {
  const LayerShape l = layer_shape(plan);
  ActivationShape a;
  a.micro_batch = l.micro_batch;
  a.seq = l.seq;
  a.tp = l.tp;
  a.cp = l.cp;
  a.sequence_parallel = l.sequence_parallel;
  a.act_bytes = dtype_bytes(l.act_dtype);
  // The unfused path keeps the s×s probabilities; dropout (the plan's setting, independent of the
  // kernel) adds Korthikanti's masks and dropped copies.
  a.flash_attention = attention_kernel_is_fused(l.attention_kernel);
  a.dropout = l.dropout;
  a.fused_loss = l.stack.loss == LossImpl::fused;
  a.eager_norm_fp32 = l.stack.norm == NormImpl::eager_fp32 && plan.model.arch == Arch::llama;
  a.attention_copies = l.stack.attention_copies;
  a.repeat_kv = l.stack.repeat_kv;
  a.eager_swiglu = l.stack.unfused_swiglu;
  a.compiled = plan.compiled;
  return a;
}

void append(std::vector<KernelWork>& to, const std::vector<KernelWork>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// TP collectives re-run by torchtitan's op-level SAC before a block's backward (op_sac.h): without SP
// the all-reduce after wo (its output feeds the MLP norm, whose backward needs it); with SP the two
// all-gathers before the column-parallel matmuls (their inputs are needed by the recomputed wk, w3 and
// by every matmul's weight gradient); the reduce-scatter outputs are saved and the collective after
// w2 comes after the last needed tensor (early stop). (The CPU runtime rejects it with tp > 1.)
void add_op_sac_recompute_tp(std::vector<SerialCollective>& out, const Plan& plan, const StepGroups& g) {
  if (g.tp < 0) return;
  const double bytes = double(plan.training.micro_batch) * double(plan.training.seq) / plan.parallelism.cp *
                       double(plan.model.hidden) * dtype_bytes(plan.precision.param);
  if (plan.parallelism.sequence_parallel) {
    out.push_back({Collective::all_gather, bytes, g.tp, 2});
  } else {
    out.push_back({Collective::all_reduce, bytes, g.tp, 1});
  }
}

// Dense models: count_params per module, in module_names() order; a tied table is counted once, as the
// embedding.
std::vector<double> dense_module_params(const Plan& plan) {
  const ParamCounts pc = count_params(plan.model);
  const auto layers = std::size_t(plan.model.layers);
  std::vector<double> per_module(layers + 3, double(pc.per_block));
  per_module[0] = double(pc.embedding);
  per_module[layers + 1] = double(pc.final_norm);
  per_module[layers + 2] = double(pc.head);
  // A tied table is counted once, as the embedding; the last pipeline stage keeps a copy for the head.
  if (plan.model.tied_embeddings && plan.parallelism.pp > 1) per_module[layers + 2] += double(plan.model.vocab * plan.model.hidden);
  return per_module;
}

// Position of a module name in module_names(): embedding 0, block.i 1 + i, final_norm L + 1, head L + 2;
// past the end for any other name (so that at() refuses it).
std::size_t module_position(const std::string& name, std::size_t layers) {
  if (name == "embedding") return 0;
  if (name == "final_norm") return layers + 1;
  if (name == "head") return layers + 2;
  if (name.rfind("block.", 0) != 0) return layers + 3;
  std::size_t i = 0;
  for (std::size_t k = 6; k < name.size(); ++k) {
    if (name[k] < '0' || name[k] > '9') return layers + 3;
    i = i * 10 + std::size_t(name[k] - '0');
  }
  return name.size() > 6 && i < layers ? 1 + i : layers + 3;
}

}  // namespace

std::vector<Segment> plan_segments(const Plan& plan) {
  const auto layers = std::size_t(plan.model.layers);
  std::vector<int> unit_of(layers + 3, -1);  // per module, in module_names() order
  for (std::size_t u = 0; u < plan.units.size(); ++u)
    for (const auto& m : plan.units[u].modules) unit_of.at(module_position(m, layers)) = int(u);
  std::vector<Segment> segs;
  for (int i = 0; i < int(unit_of.size()); ++i) {
    const int u = unit_of[std::size_t(i)];
    FSDP_CHECK(u >= 0, "plan_segments: a module in no unit");
    if (!segs.empty() && segs.back().unit == u) {
      ++segs.back().module_count;
    } else {
      segs.push_back({u, i, 1, i == 0, false});
    }
  }
  if (!segs.empty()) segs.back().computes_loss = true;  // the head is the last module
  return segs;
}

std::vector<double> unit_params(const Plan& plan) {
  // Routed experts cut to experts / ep (program/moe_block.h); both in module_names() order.
  const std::vector<double> per_module = plan.model.is_moe() ? moe_module_params(plan) : dense_module_params(plan);
  const auto layers = std::size_t(plan.model.layers);
  std::vector<double> out;
  out.reserve(plan.units.size());
  // TP splits every weight matrix and the vocabulary; norms are replicated (< 0.1% of a block).
  for (const auto& unit : plan.units) {
    double p = 0;
    for (const auto& m : unit.modules) p += per_module.at(module_position(m, layers));
    out.push_back(p / plan.parallelism.tp);
  }
  return out;
}

double WorkSet::flops() const { return kernels_flops(kernels); }

WorkSet segment_forward_work(const Plan& plan, int first_module, int module_count, const StepGroups& g) {
  WorkSet w;
  const LayerShape s = layer_shape(plan);
  for (int i = first_module; i < first_module + module_count; ++i) {
    switch (module_kind(plan, i)) {
      case ModuleKind::embedding: append(w.kernels, embedding_kernels(plan.model, s, Pass::forward)); break;
      case ModuleKind::block:
        append(w.kernels, block_kernels_of(plan, i, s, Pass::forward));
        if (plan.lora) append(w.kernels, lora_block_kernels(plan.model, *plan.lora, s, Pass::forward));
        break;
      case ModuleKind::final_norm: break;  // its kernels are part of head_kernels
      case ModuleKind::head: append(w.kernels, head_kernels(plan.model, s, Pass::forward)); break;
    }
    add_forward_comms(w.serial_comms, plan, g, i);
  }
  return w;
}

namespace {

// ZB's B of a block: recompute first (all forward kernels under full, the attention core under
// selective, the unsaved matmuls and elementwise kernels under selective_op), then the input
// gradients. A full recompute re-runs the forward's collectives too (the attention core's recompute
// reuses the backward's gathered K and V); the backward's own collectives come with B (the weight
// gradients need none).
void add_block_recompute(WorkSet& w, const Plan& plan, int i, const StepGroups& g) {
  const LayerShape s = layer_shape(plan);
  const RecomputeMode r = block_recompute(plan, i);
  auto fwd = block_kernels_of(plan, i, s, Pass::forward);
  if (plan.lora) append(fwd, lora_block_kernels(plan.model, *plan.lora, s, Pass::forward));
  if (r == RecomputeMode::selective)
    std::erase_if(fwd, [](const KernelWork& k) { return !is_attention_core(k); });
  if (r == RecomputeMode::selective_op) fwd = op_sac_recompute_kernels(plan.model, s);
  if (r != RecomputeMode::none) {
    append(w.kernels, fwd);
    w.recompute_flops += kernels_flops(fwd);
  }
  if (r == RecomputeMode::full) add_forward_comms(w.serial_comms, plan, g, i);
  if (r == RecomputeMode::selective_op) add_op_sac_recompute_tp(w.serial_comms, plan, g);
}

std::vector<KernelWork> module_kernels(const Plan& plan, int module, ModuleKind kind, Pass p) {
  const LayerShape s = layer_shape(plan);
  switch (kind) {
    case ModuleKind::block: return block_kernels_of(plan, module, s, p);
    case ModuleKind::embedding: return embedding_kernels(plan.model, s, p);
    case ModuleKind::head: return head_kernels(plan.model, s, p);
    case ModuleKind::final_norm: break;  // its kernels are part of head_kernels
  }
  return {};
}

}  // namespace

WorkSet segment_backward_work(const Plan& plan, int first_module, int module_count, const StepGroups& g,
                              BackwardPart part) {
  WorkSet w;
  // LoRA: the frozen base has no weight gradients; the adapters' backward runs with the input pass.
  const bool input = part != BackwardPart::weight, weight = part != BackwardPart::input && !plan.lora;
  for (int i = first_module; i < first_module + module_count; ++i) {
    const ModuleKind kind = module_kind(plan, i);
    if (input && kind == ModuleKind::block) add_block_recompute(w, plan, i, g);
    if (input) add_backward_comms(w.serial_comms, plan, g, i);
    if (kind == ModuleKind::final_norm) continue;
    if (input) append(w.kernels, module_kernels(plan, i, kind, Pass::input_grad));
    if (input && plan.lora && kind == ModuleKind::block)
      append(w.kernels, lora_block_kernels(plan.model, *plan.lora, layer_shape(plan), Pass::input_grad));
    if (weight) append(w.kernels, module_kernels(plan, i, kind, Pass::weight_grad));
  }
  return w;
}

SegmentMemory segment_memory(const Plan& plan, int first_module, int module_count) {
  SegmentMemory mem;
  const ActivationShape a = activation_shape(plan);
  double exchange = 0;
  for (int i = first_module; i < first_module + module_count; ++i) {
    switch (module_kind(plan, i)) {
      case ModuleKind::embedding:
        mem.saved_activation_bytes += embedding_activation_bytes(plan.model, a);
        mem.weight_pass_bytes += embedding_weight_grad_bytes(plan.model, a);
        break;
      case ModuleKind::block:
        mem.saved_activation_bytes += is_moe_block(plan, i)
                                          ? moe_block_activation_bytes(plan, a, recompute_of(block_recompute(plan, i)))
                                          : block_activation_bytes(plan.model, a, recompute_of(block_recompute(plan, i)));
        // LoRA: each adapter keeps u = x Aᵀ [tokens, r] for its backward (x is the base GEMM's saved input).
        if (plan.lora && block_recompute(plan, i) != RecomputeMode::full)
          mem.saved_activation_bytes += double(a.micro_batch) * double(a.seq) / a.cp * double(plan.lora->rank) *
                                        double(plan.lora->targets.size()) * a.act_bytes;
        // An MoE block's token exchange adds its send and receive buffers while it runs, in forward and
        // again (the gradients) in backward; blocks run one at a time, so the segment's largest counts.
        exchange = is_moe_block(plan, i) ? moe_dispatch_buffer_bytes(plan) : 0.0;
        mem.forward_working_bytes = std::max(mem.forward_working_bytes, exchange);
        mem.backward_working_bytes =
            std::max(mem.backward_working_bytes, block_backward_working_bytes(plan.model, a) + exchange);
        mem.weight_pass_bytes += block_weight_grad_bytes(plan.model, a);
        break;
      case ModuleKind::final_norm: mem.saved_activation_bytes += final_norm_activation_bytes(plan.model, a); break;
      case ModuleKind::head:
        mem.saved_activation_bytes += logits_bytes(plan.model, a);
        mem.loss_backward_bytes = logits_backward_working_bytes(plan.model, a);
        mem.weight_pass_bytes += head_weight_grad_bytes(plan.model, a);
        break;
    }
  }
  return mem;
}

std::string segment_signature(const Plan& plan, int first_module, int module_count) {
  std::string key;
  for (int i = first_module; i < first_module + module_count; ++i) {
    const ModuleKind kind = module_kind(plan, i);
    key += "ebnh"[int(kind)];
    if (kind == ModuleKind::block) key += "nsfo"[int(block_recompute(plan, i))];
    if (is_moe_block(plan, i)) key += 'm';  // an MoE block's kernels and all-to-alls differ from a dense one's
  }
  return key;
}

}  // namespace fsdpx
