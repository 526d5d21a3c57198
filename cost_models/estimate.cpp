// cost_models/estimate.cpp — analytic memory breakdown and step-time lower bound (no overlap model).
#include "cost_models/estimate.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/model_spec_moe.h"
#include "cost_models/communication.h"
#include "cost_models/compute.h"
#include "cost_models/compute_fp8.h"
#include "cost_models/compute_lora.h"
#include "cost_models/grad_scaling.h"
#include "cost_models/lora_memory.h"
#include "cost_models/mesh.h"
#include "cost_models/op_sac.h"
#include "cost_models/params.h"

namespace fsdpx {

// Defined in cost_models/estimate_moe.cpp.
Estimate estimate_moe(const ModelSpec& m, const TrainingShape& s);

namespace {

[[noreturn]] void bad_option(const char* option, const std::string& what) {
  throw ConfigError(fmt::format("command line: {}: {}", option, what));
}

LayerShape layer_shape(const TrainingShape& s) {
  LayerShape ls;
  ls.micro_batch = s.micro_batch;
  ls.seq = s.seq;
  ls.tp = s.tp;
  ls.cp = s.cp;
  ls.sequence_parallel = s.sequence_parallel && s.tp > 1;
  ls.act_dtype = s.precision.param;
  ls.fp8 = s.fp8;
  ls.fp8_weight_casts_per_micro_batch = 1.0 / double(s.grad_accum);
  return ls;
}

ActivationShape activation_shape(const TrainingShape& s) {
  ActivationShape a;
  a.micro_batch = s.micro_batch;
  a.seq = s.seq;
  a.tp = s.tp;
  a.cp = s.cp;
  a.sequence_parallel = s.sequence_parallel && s.tp > 1;
  a.act_bytes = dtype_bytes(s.precision.param);
  return a;
}

struct Groups {
  GroupShape tp, cp, shard, replicate;
};

Groups mesh_groups(const TrainingShape& s, int gpus_per_node) {
  Groups g;
  g.tp = mesh_axis_group(s.tp, 1, gpus_per_node);
  g.cp = mesh_axis_group(s.cp, s.tp, gpus_per_node);
  // FSDP's shard group is dp_shard x cp (torchtitan's dp_shard_cp mesh; program/lower.cpp make_groups).
  g.shard = mesh_axis_group(s.dp_shard * s.cp, s.tp, gpus_per_node);
  g.replicate = mesh_axis_group(s.dp_replicate, s.tp * s.cp * s.dp_shard, gpus_per_node);
  return g;
}

// Compute time of one micro-batch through the whole model on one rank (forward, recompute, backward).
double micro_batch_compute_s(const ModelSpec& m, const GpuSpec& gpu, const TrainingShape& s, double* flops) {
  const LayerShape ls = layer_shape(s);
  const DType dt = s.precision.param;
  double time_s = 0;
  *flops = 0;
  for (Pass p : {Pass::forward, Pass::input_grad, Pass::weight_grad}) {
    auto block = block_kernels(m, ls, p);
    if (s.lora && p == Pass::weight_grad) block.clear();  // a frozen base has no weight gradients
    if (s.lora) {
      const auto adapters = lora_block_kernels(m, *s.lora, ls, p);
      block.insert(block.end(), adapters.begin(), adapters.end());
    }
    const bool frozen = s.lora && p == Pass::weight_grad;
    const auto emb = frozen ? std::vector<KernelWork>{} : embedding_kernels(m, ls, p);
    const auto head = frozen ? std::vector<KernelWork>{} : head_kernels(m, ls, p);
    time_s += m.layers * kernels_time_s(block, gpu, dt) + kernels_time_s(emb, gpu, dt) + kernels_time_s(head, gpu, dt);
    *flops += m.layers * kernels_flops(block) + kernels_flops(emb) + kernels_flops(head);
  }
  // Recompute re-runs forward work before backward: all of it (full), the attention core (selective,
  // Korthikanti et al. 2022 §5) or the unsaved matmuls and elementwise kernels (selective_op, op_sac.h).
  if (s.recompute != Recompute::none) {
    auto fwd = block_kernels(m, ls, Pass::forward);
    if (s.recompute == Recompute::selective)
      std::erase_if(fwd, [](const KernelWork& k) { return !is_attention_core(k); });
    if (s.recompute == Recompute::selective_op) fwd = op_sac_recompute_kernels(m, ls);
    time_s += m.layers * kernels_time_s(fwd, gpu, dt);
    *flops += m.layers * kernels_flops(fwd);
  }
  return time_s;
}

// Tensor- and context-parallel collectives of one micro-batch (Megatron-style: per block two in
// forward and two in backward; with SP each all-reduce becomes all-gather + reduce-scatter).
double micro_batch_tp_cp_comm_s(const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s, const Groups& g) {
  double time_s = 0;
  const double act_b = dtype_bytes(s.precision.param);
  if (s.tp > 1) {
    const double bytes = s.micro_batch * (double(s.seq) / s.cp) * m.hidden * act_b;
    const int passes = 2 + (s.recompute == Recompute::full ? 1 : 0);  // forward, backward, recompute
    const double per_pass = s.sequence_parallel
        ? 2 * (collective_time_s(Collective::all_gather, bytes, g.tp, c) +
               collective_time_s(Collective::reduce_scatter, bytes, g.tp, c))
        : 2 * collective_time_s(Collective::all_reduce, bytes, g.tp, c);
    time_s += m.layers * passes * per_pass;
    // Op-level SAC re-runs the all-reduce after wo, or with SP the two all-gathers (segment_work.cpp).
    if (s.recompute == Recompute::selective_op)
      time_s += m.layers * (s.sequence_parallel ? 2 * collective_time_s(Collective::all_gather, bytes, g.tp, c)
                                                : collective_time_s(Collective::all_reduce, bytes, g.tp, c));
  }
  if (s.cp > 1) {
    // K and V all-gathered over cp for the whole sequence (the step program's context parallelism,
    // program/parallel_comms.cpp): forward, again in backward (and in a full recompute), and dK, dV
    // reduce-scattered back.
    const double kv_heads = std::max(1.0, double(m.kv_heads) / s.tp);
    const double kv_bytes = 2.0 * s.micro_batch * double(s.seq) * kv_heads * m.head_dim * act_b;
    const int gathers = 2 + (s.recompute == Recompute::full ? 1 : 0);
    time_s += m.layers * (gathers * collective_time_s(Collective::all_gather, kv_bytes, g.cp, c) +
                          collective_time_s(Collective::reduce_scatter, kv_bytes, g.cp, c));
  }
  return time_s;
}

// Data-parallel collectives of one optimizer step (FSDP2 reduces every micro-batch; ZeRO-1 and DDP
// accumulate locally and reduce once).
// `linear_share`: the share of the parameters that are blocks' linear weights (fp8 all-gather's).
double step_dp_comm_s(const ClusterSpec& c, const TrainingShape& s, const Groups& g, double local_params,
                      double adapter_params, double linear_share) {
  const double pb = dtype_bytes(s.precision.param), rb = dtype_bytes(s.precision.reduce);
  if (s.lora) {  // the base is only all-gathered; the adapters' gradients are all-reduced once a step
    const double ag = collective_time_s(Collective::all_gather, local_params * pb, g.shard, c);
    const double gathers = s.mode == ShardingMode::zero3 || s.mode == ShardingMode::hsdp ? 2.0 * s.grad_accum : 0.0;
    const GroupShape all = mesh_axis_group(s.dp_shard * s.dp_replicate, s.tp * s.cp, c.gpus_per_node);
    return gathers * ag + collective_time_s(Collective::all_reduce, adapter_params * rb, all, c);
  }
  // fp8 all-gather: the blocks' linear weights at one byte (compute_fp8.h), the rest at pb.
  const double linear = linear_share * local_params;
  const double ag_bytes = (local_params - linear) * pb + linear * fp8_linear_gather_bytes(s.fp8, pb);
  const double ag = collective_time_s(Collective::all_gather, ag_bytes, g.shard, c);
  const double rs = collective_time_s(Collective::reduce_scatter, local_params * rb, g.shard, c);
  const double ar = collective_time_s(Collective::all_reduce, local_params * rb, g.shard, c);
  const double k = double(s.grad_accum);
  double time_s = 0;
  switch (s.mode) {
    case ShardingMode::zero3:
    case ShardingMode::hsdp: time_s = k * (2 * ag + rs); break;  // forward and backward all-gather
    case ShardingMode::zero2: time_s = k * rs + ag; break;
    case ShardingMode::zero1: time_s = rs + ag; break;
    case ShardingMode::ddp: time_s = ar; break;
  }
  // Replicas all-reduce their gradient shard once per step (HSDP; the same for other modes).
  const double shard_bytes = local_params * rb / (s.mode == ShardingMode::ddp ? 1 : s.dp_shard * s.cp);
  time_s += collective_time_s(Collective::all_reduce, shard_bytes, g.replicate, c);
  return time_s;
}

}  // namespace

namespace {

MemoryBreakdown memory_breakdown(const ModelSpec& m, const TrainingShape& s, const ParamCounts& pc,
                                 double local_params, int communicators) {
  // local_params: parameters on this rank after TP, before data-parallel sharding.
  MemoryBreakdown mem;
  const bool fsdp = s.mode == ShardingMode::zero3 || s.mode == ShardingMode::hsdp;
  const StateBytes state =
      s.lora ? lora_state_bytes(local_params, lora_params(m, *s.lora), fsdp ? s.dp_shard * s.cp : 1, s.precision.param)
      : fsdp ? fsdp2_state_bytes(local_params, s.dp_shard * s.cp, s.precision)
             : model_state_bytes(local_params, s.mode, s.dp_shard * s.cp, s.precision);
  mem.params = state.params;
  mem.grads = state.grads;
  mem.optimizer = state.optimizer;

  const ActivationShape a = activation_shape(s);
  mem.activations = m.layers * block_activation_bytes(m, a, s.recompute) + embedding_activation_bytes(m, a) +
                    final_norm_activation_bytes(m, a) +
                    logits_bytes(m, a) +
                    std::max(block_backward_working_bytes(m, a), logits_backward_working_bytes(m, a));
  // LoRA: each adapter keeps u = x Aᵀ [tokens, r] (program/segment_work.cpp counts the same).
  if (s.lora && s.recompute != Recompute::full)
    mem.activations += double(m.layers) * double(s.micro_batch) * double(s.seq) / s.cp * double(s.lora->rank) *
                       double(s.lora->targets.size()) * a.act_bytes;

  // Unsharded units alive at once: the current one plus `prefetch` more (FSDP1 paper §3.3), and the
  // unsharded gradients of the unit being reduced. The largest unit bounds it.
  const double tp = s.tp;
  const double largest_unit = std::max({double(s.blocks_per_unit * pc.per_block), double(pc.embedding),
                                        double(pc.head + pc.final_norm)}) / tp;
  const double pb = dtype_bytes(s.precision.param), rb = dtype_bytes(s.precision.reduce);
  switch (s.mode) {
    case ShardingMode::zero3:
    case ShardingMode::hsdp: mem.transient = largest_unit * ((1 + s.prefetch) * pb + (s.lora ? 0 : rb)); break;
    case ShardingMode::zero2: mem.transient = s.lora ? 0 : largest_unit * rb; break;
    case ShardingMode::zero1:
    case ShardingMode::ddp: mem.transient = 0; break;
  }
  mem.other = overhead_bytes(communicators, mem.activations + mem.transient).total();
  return mem;
}

}  // namespace

Recompute recompute_of(RecomputeMode r) {
  switch (r) {
    case RecomputeMode::none: return Recompute::none;
    case RecomputeMode::selective: return Recompute::selective;
    case RecomputeMode::full: return Recompute::full;
    case RecomputeMode::selective_op: return Recompute::selective_op;
  }
  return Recompute::none;
}

TrainingShape training_shape_of(const Plan& p) {
  const auto& par = p.parallelism;
  TrainingShape s;
  s.dp_replicate = par.dp_replicate;
  s.dp_shard = par.dp_shard;
  s.tp = par.tp;
  s.cp = par.cp;
  s.sequence_parallel = par.sequence_parallel;
  s.mode = sharding_mode(data_placement(par));
  s.micro_batch = p.training.micro_batch;
  s.seq = p.training.seq;
  s.grad_accum = p.grad_accum();
  s.recompute = p.recompute.empty() ? Recompute::none : recompute_of(p.recompute.front());
  s.precision = PrecisionPolicy{p.precision.param, p.precision.reduce, p.precision.fp32_master_weights};
  s.lora = p.lora;
  s.loss_scale = p.loss_scale.has_value();
  s.fp8 = p.fp8;
  return s;
}

void check_training_shape(const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s) {
  if (s.world_size() != c.world_size())
    bad_option("--dp-shard", fmt::format("dp_replicate({}) * dp_shard({}) * cp({}) * tp({}) = {} != world size {}",
                                         s.dp_replicate, s.dp_shard, s.cp, s.tp, s.world_size(), c.world_size()));
  if (s.tp > c.gpus_per_node || c.gpus_per_node % s.tp != 0)
    bad_option("--tp", fmt::format("tp ({}) must divide the GPUs per node ({})", s.tp, c.gpus_per_node));
  if (m.heads % s.tp != 0) bad_option("--tp", fmt::format("tp ({}) must divide heads ({})", s.tp, m.heads));
  if (m.kv_heads % s.tp != 0 && s.tp % m.kv_heads != 0)
    bad_option("--tp", fmt::format("tp ({}) and kv_heads ({}) must divide one another", s.tp, m.kv_heads));
  if (m.ffn_hidden % s.tp != 0) bad_option("--tp", fmt::format("tp ({}) must divide ffn_hidden ({})", s.tp, m.ffn_hidden));
  if (s.seq % (2 * s.cp) != 0 && s.cp > 1)
    bad_option("--cp", fmt::format("2 * cp ({}) must divide the sequence length ({})", 2 * s.cp, s.seq));
  if (s.seq > m.max_seq) bad_option("--seq", fmt::format("{} exceeds the model's max_seq {}", s.seq, m.max_seq));
  if (s.blocks_per_unit > m.layers)
    bad_option("--blocks-per-unit", fmt::format("{} exceeds the model's {} layers", s.blocks_per_unit, m.layers));
}

Estimate estimate(const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s) {
  check_training_shape(m, c, s);
  if (has_moe_parts(m)) return estimate_moe(m, s);
  Estimate e;
  const ParamCounts pc = count_params(m);
  e.total_params = pc.total();
  e.active_params = e.total_params;
  // TP splits every weight matrix and the vocabulary; norms stay replicated (a < 0.1% difference).
  e.params_per_gpu = double(pc.total()) / s.tp;
  if (s.lora) e.adapter_params = lora_params(m, *s.lora);

  const Groups g = mesh_groups(s, c.gpus_per_node);
  int communicators = 0;
  for (const GroupShape* gs : {&g.tp, &g.cp, &g.shard, &g.replicate}) communicators += gs->ranks > 1 ? 1 : 0;
  e.memory = memory_breakdown(m, s, pc, e.params_per_gpu, communicators);

  double mb_flops = 0;
  const double mb_time_s = micro_batch_compute_s(m, c.gpu, s, &mb_flops);
  const double optimizer_params = s.lora                       ? e.adapter_params
                                  : s.mode == ShardingMode::ddp ? e.params_per_gpu
                                                                : e.params_per_gpu / (s.dp_shard * s.cp);
  const KernelWork opt = optimizer_kernel(optimizer_params, s.precision.param, s.precision.reduce);
  // The unscale pass reads and writes the reduced gradients the optimizer reads (program/lower.cpp).
  const std::vector<KernelWork> unscale =
      s.loss_scale ? grad_unscale_kernels(optimizer_params, s.precision.reduce) : std::vector<KernelWork>{};
  e.unscale_time_s = kernels_time_s(unscale, c.gpu, DType::fp32);
  e.compute_time_s = s.grad_accum * mb_time_s + kernel_time_s(opt, c.gpu, DType::fp32) + e.unscale_time_s;
  e.hardware_flops_per_step = s.grad_accum * mb_flops + opt.flops + kernels_flops(unscale);

  const double linear_share = fp8_linear_params_per_block(m) * double(m.layers) / double(pc.total());
  e.dp_comm_time_s = step_dp_comm_s(c, s, g, e.params_per_gpu, e.adapter_params, linear_share);
  if (s.fp8 && s.fp8->all_gather) {
    TrainingShape bf16_gather = s;
    bf16_gather.fp8->all_gather = false;
    e.fp8_all_gather_saved_s =
        step_dp_comm_s(c, bf16_gather, g, e.params_per_gpu, e.adapter_params, linear_share) - e.dp_comm_time_s;
  }
  e.tp_cp_comm_time_s = s.grad_accum * micro_batch_tp_cp_comm_s(m, c, s, g);
  e.step_time_lower_bound_s = std::max(e.compute_time_s, e.dp_comm_time_s + e.tp_cp_comm_time_s);

  e.model_flops_per_token = model_flops_per_token(m, s.seq);
  e.tokens_per_step = double(s.micro_batch) * s.seq * s.grad_accum * s.dp_replicate * s.dp_shard;
  e.tokens_per_s_per_gpu_upper_bound = e.tokens_per_step / e.step_time_lower_bound_s / s.world_size();
  e.mfu_upper_bound = e.tokens_per_s_per_gpu_upper_bound * e.model_flops_per_token / c.gpu.peak(DType::bf16);
  return e;
}

}  // namespace fsdpx
