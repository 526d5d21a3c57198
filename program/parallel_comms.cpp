// program/parallel_comms.cpp — TP/CP collectives of a module (see parallel_comms.h). Bytes are
// nccl-tests' S: the all-gather output, the reduce-scatter input, the all-reduce buffer.
#include "program/parallel_comms.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"
#include "cost_models/stack_costs.h"
#include "program/moe_block.h"

namespace fsdpx {

namespace {

// Parameter gradients are fp32 in both backends (the TP all-reduce of replicated tensors' gradients).
constexpr double kGradBytes = 4;
// PyTorch's ring attention accumulates the K and V gradients in fp32 (convert_to_f32).
constexpr double kFp32Bytes = 4;
// The cross-entropy statistics (max, Σexp, target logit) are fp32 per token.
constexpr double kStatBytes = 4;

struct Sizes {
  double tokens = 0;    // of the rank's context-parallel part of the micro-batch
  double act = 0;       // bytes per activation element
  double exchange = 0;  // one [tokens, hidden] activation: Megatron's f/g collectives
  // The blocks' sequence-parallel all-gathers (of the attention's and MLP's inputs forward, of their
  // outputs' gradients backward): `exchange`, or in fp8 under torchao's float8 TP plan.
  double block_gather = 0;
  bool sp = false;
  StackCosts stack;  // the training stack: how its context parallelism exchanges K and V
};

// torchtitan applies torchao's float8 tensor-parallel plan (Float8ColwiseParallel, Float8RowwiseParallel,
// PrepareFloat8ModuleInput) only for the tensorwise recipe; rowwise keeps the bf16 plan (torchtitan v0.2.2
// models/llama3/infra/parallelize.py: enable_float8_tensorwise_tp = float8 and not rowwise). Under it the
// attention's and the MLP's inputs are cast to e4m3 before their sequence-parallel all-gather, and their
// outputs' gradients to e5m2 before the backward all-gather (torchao/float8/float8_tensor_parallel.py:
// _hp_tensor_to_float8_dynamic before redistribute, _NoopFwToFloat8BwDynamic after it): one byte per element.
// The rowwise layers' reduce-scatters and the inputs' gradients stay in bf16. Leaves out the scalar amax
// all-reduce of each dynamic scale over the tp group.
bool float8_tensor_parallel(const Plan& plan) {
  return plan.fp8 && plan.fp8->scaling == Fp8Scaling::tensorwise;
}

Sizes sizes(const Plan& plan) {
  Sizes s;
  s.tokens = double(plan.training.micro_batch) * double(plan.training.seq) / plan.parallelism.cp;
  s.act = dtype_bytes(plan.precision.param);
  s.exchange = s.tokens * double(plan.model.hidden) * s.act;
  s.sp = plan.parallelism.sequence_parallel && plan.parallelism.tp > 1;
  s.block_gather = float8_tensor_parallel(plan) ? s.exchange / s.act : s.exchange;
  s.stack = stack_costs(plan.framework, plan.compiled, plan.framework_version);
  return s;
}

void add(std::vector<SerialCollective>& out, Collective kind, double bytes, int group, int count = 1) {
  if (group >= 0 && count > 0) out.push_back({kind, bytes, group, count});
}

// Elements of the tensors every tp rank holds whole (executor/runtime/param_layout.h): norm scales (and
// LayerNorm shifts), the row-parallel biases, gpt's position table.
double replicated_elems(const Plan& plan, ModuleKind kind) {
  const ModelSpec& m = plan.model;
  const double norm = (m.arch == Arch::gpt ? 2.0 : 1.0) * double(m.hidden);
  switch (kind) {
    case ModuleKind::embedding: return m.arch == Arch::gpt ? double(m.max_seq) * double(m.hidden) : 0.0;
    case ModuleKind::block: return 2 * norm + (m.bias == LinearBias::all ? 2.0 * double(m.hidden) : 0.0);
    case ModuleKind::final_norm: return norm;
    case ModuleKind::head: return 0;
  }
  return 0;
}

// With kv_heads < tp the qkv outputs [tokens, Q + 2·KV] are all-gathered (backward: reduce-scattered).
bool grouped_qkv(const Plan& plan) { return plan.model.kv_heads < plan.parallelism.tp; }
double qkv_bytes(const Plan& plan, const Sizes& s) {
  return s.tokens * double(plan.model.q_dim() + 2 * plan.model.kv_dim()) * s.act;
}

// Context parallelism: the K and V of the rank's heads for the whole sequences (all-gather output). The
// heads are the KV heads, or every query head where the stack expands K and V before attention
// (StackCosts::repeat_kv): torchtitan up to v0.2.1 calls repeat_kv before SDPA
// (torchtitan/models/llama3/model/model.py @v0.2.1, Attention.forward), so the tensors PyTorch's ring
// exchanges carry n_heads; v0.2.2 passes enable_gqa instead ("GQA without kv repeats", pytorch/torchtitan
// #2259, 2026-01-27): a plan's framework_version says which (core/framework.h).
double kv_bytes(const Plan& plan, const Sizes& s) {
  const ModelSpec& m = plan.model;
  const double heads = double(s.stack.repeat_kv ? m.heads : m.kv_heads);
  const double rank_heads = std::max(1.0, heads / plan.parallelism.tp);
  return 2.0 * s.tokens * plan.parallelism.cp * rank_heads * double(m.head_dim) * s.act;
}

// PyTorch's ring backward (torch/distributed/tensor/experimental/_attention.py,
// _templated_ring_attention_backward): K and V all-gathered again (the allgather rotate method), then at
// each of the cp steps the dK and dV accumulated so far, fp32 under convert_to_f32 (the default), sent
// whole to the next rank (_AllToAllRotater: permute_tensor, an all-to-all with one peer per rank). A
// point-to-point send of the rank's own dK and dV in fp32, cp times.
void add_ring_backward(std::vector<SerialCollective>& out, const Plan& plan, const Sizes& s, int cp_group) {
  const int cp = plan.parallelism.cp;
  add(out, Collective::all_gather, kv_bytes(plan, s), cp_group);
  add(out, Collective::send_recv, kv_bytes(plan, s) / cp * kFp32Bytes / s.act, cp_group, cp);
}

// Megatron's f and g around the attention and the MLP: with SP two all-gathers and two
// reduce-scatters, else two all-reduces (forward: g's; backward: f's).
void add_block_regions(std::vector<SerialCollective>& out, const Sizes& s, int tp) {
  if (s.sp) {
    add(out, Collective::all_gather, s.block_gather, tp, 2);
    add(out, Collective::reduce_scatter, s.exchange, tp, 2);
  } else {
    add(out, Collective::all_reduce, s.exchange, tp, 2);
  }
}

}  // namespace

std::string serial_collective_name(GroupKind axis, Collective kind, double bytes) {
  FSDP_CHECK(axis == GroupKind::tp || axis == GroupKind::cp || axis == GroupKind::ep,
             "serial collectives run in the tp, cp or ep group");
  return fmt::format("{}.{}.{}B", group_kind_name(axis), collective_name(kind), std::int64_t(bytes));
}

ModuleKind module_kind(const Plan& plan, int i) {
  const int layers = int(plan.model.layers);
  if (i == 0) return ModuleKind::embedding;
  if (i <= layers) return ModuleKind::block;
  return i == layers + 1 ? ModuleKind::final_norm : ModuleKind::head;
}

void add_forward_comms(std::vector<SerialCollective>& out, const Plan& plan, const StepGroups& g, int module) {
  const Sizes s = sizes(plan);
  const int tp = g.tp, tp_ranks = plan.parallelism.tp;
  switch (module_kind(plan, module)) {
    case ModuleKind::embedding:  // g after the vocabulary-parallel lookup
      add(out, s.sp ? Collective::reduce_scatter : Collective::all_reduce, s.exchange, tp);
      break;
    case ModuleKind::block:
      add_block_regions(out, s, tp);
      if (grouped_qkv(plan)) add(out, Collective::all_gather, qkv_bytes(plan, s), tp);
      add(out, Collective::all_gather, kv_bytes(plan, s), g.cp);
      add_moe_all_to_alls(out, plan, g.ep, module);
      break;
    case ModuleKind::final_norm: break;
    case ModuleKind::head:  // f before the vocabulary-parallel head; the cross-entropy statistics
      if (s.sp) add(out, Collective::all_gather, s.exchange, tp);
      add(out, Collective::all_gather, tp_ranks * s.tokens * 3 * kStatBytes, tp);
      break;
  }
}

void add_backward_comms(std::vector<SerialCollective>& out, const Plan& plan, const StepGroups& g, int module) {
  const Sizes s = sizes(plan);
  const int tp = g.tp;
  const ModuleKind kind = module_kind(plan, module);
  switch (kind) {
    case ModuleKind::embedding:  // g's backward: the gathered output gradient
      if (s.sp) add(out, Collective::all_gather, s.exchange, tp);
      break;
    case ModuleKind::block:
      add_block_regions(out, s, tp);
      if (grouped_qkv(plan)) add(out, Collective::reduce_scatter, qkv_bytes(plan, s), tp);
      if (s.stack.torch_ring_attention) {
        add_ring_backward(out, plan, s, g.cp);
      } else {
        add(out, Collective::all_gather, kv_bytes(plan, s), g.cp);  // K and V again, then dK and dV back
        add(out, Collective::reduce_scatter, kv_bytes(plan, s), g.cp);
      }
      add_moe_all_to_alls(out, plan, g.ep, module);
      break;
    case ModuleKind::final_norm: break;
    case ModuleKind::head:  // f's backward
      add(out, s.sp ? Collective::reduce_scatter : Collective::all_reduce, s.exchange, tp);
      break;
  }
  // Sequence parallelism leaves the whole-tensor gradients partial on each tp rank.
  const double replicated = replicated_elems(plan, kind);
  if (s.sp && replicated > 0) add(out, Collective::all_reduce, replicated * kGradBytes, tp);
}

}  // namespace fsdpx
