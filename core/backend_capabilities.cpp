// core/backend_capabilities.cpp — the backends' rows and the gaps of a plan (see backend_capabilities.h).
#include "core/backend_capabilities.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"

namespace fsdpx {

namespace {

const std::vector<PipelineSchedule> kAllSchedules{PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                                                  PipelineSchedule::interleaved_1f1b, PipelineSchedule::zero_bubble};

// The CPU reference backend (executor/cpu_backend/): fp32 compute (fp16 plans rounded through _Float16),
// the unfused attention that materialises the probabilities, Megatron-style TP and CP.
BackendCapabilities cpu_row() {
  BackendCapabilities c;
  c.device = ExecutorDevice::cpu;
  c.name = "CPU";
  c.param_dtypes = {DType::fp32, DType::fp16};
  c.param_note = " (fp16 emulated in fp32)";
  c.reduce_dtypes = {DType::fp32};
  c.attention_kernels = {{AttentionKernel::unfused, {}}};
  c.attention_note = "materialises the attention probabilities";
  c.tensor_parallel = c.context_parallel = true;
  c.pipeline_schedules = kAllSchedules;
  c.pipeline_with_model_parallel = true;
  c.lora = true;
  // torchao's tensorwise recipe emulated around the blocks' linear GEMMs (executor/model/fp8_linear.h).
  c.fp8_scalings = {Fp8Scaling::tensorwise};
  c.moe = true;  // executor/model/moe_mlp.h
  c.mla = true;  // executor/model/mla_attention.h
  // Dispatch/combine over the ep group (executor/model/moe_exchange.h), experts sharded over efsdp
  // (executor/model/expert_shards.h); ep_gaps lists what it leaves out.
  c.expert_parallel = true;
  return c;
}

// The CUDA backend (executor/cuda_backend/): CudaModelT<bf16 or f16>, attention
// on tensor cores (executor/cuda/attention_tc.cu, `tensor_core`: head sizes 64 and 128, first, so the
// planner records it where it applies; no context-parallel variant yet) or on CUDA cores
// (executor/cuda/attention.cu, `cuda_core`: head sizes 32, 64, 96, 128); tensor parallelism, with or
// without sequence parallelism, on bf16 llama blocks with kv_heads >= tp (tested through the emulated
// runtime, docs/cuda.md), and context parallelism on the same blocks. The tensor-core kernel has not run
// on a GPU yet (docs/cuda.md, "Tensor-core attention"; issue 29 checks and measures it).
BackendCapabilities cuda_row() {
  BackendCapabilities c;
  c.device = ExecutorDevice::cuda;
  c.name = "CUDA";
  c.param_dtypes = {DType::bf16, DType::fp16};
  c.reduce_dtypes = {DType::fp32, DType::bf16};
  c.attention_kernels = {{AttentionKernel::tensor_core, {64, 128}, false},
                         {AttentionKernel::cuda_core, {32, 64, 96, 128}, true}};
  c.attention_note = "runs its tensor-core or CUDA-core attention kernel (executor/cuda/attention_tc.cu, attention.cu)";
  c.pipeline_schedules = kAllSchedules;
  c.lora = true;
  c.tensor_parallel = c.context_parallel = true;
  c.pipeline_with_model_parallel = true;  // 1F1B at pp 2 x tp 2 and pp 2 x cp 2, emulated (docs/cuda.md)
  c.tp_fp16 = c.tp_gpt = c.tp_grouped_kv = false;
  // Mixtral- and DeepSeek-V3-style MoE blocks (routing on the host, executor/cuda_backend/cuda_moe_mlp.h) and
  // latent attention (heads padded for the flash kernel, cuda_mla_attention.h) on the device; expert
  // parallelism as the CPU's:
  // the exchange over the ep group's device communicator, experts sharded over efsdp (cuda_unit.h).
  c.moe = c.mla = true;
  c.expert_parallel = true;
  return c;
}

template <class T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// "a, b or c" (each quoted when `quoted`).
template <class T, class Name>
std::string or_list(const std::vector<T>& v, bool quoted, Name name) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i)
    out += fmt::format("{}{}{}{}", i == 0 ? "" : i + 1 == v.size() ? " or " : ", ", quoted ? "\"" : "", name(v[i]),
                       quoted ? "\"" : "");
  return out;
}

std::string dtype_list(const std::vector<DType>& v, bool quoted) {
  return or_list(v, quoted, [](DType d) { return dtype_name(d); });
}

// The backends whose rows run an axis this one does not (messages point there).
std::string others_running(const BackendCapabilities& caps, bool BackendCapabilities::*axis) {
  for (const BackendCapabilities& c : all_backend_capabilities())
    if (c.device != caps.device && c.*axis) return fmt::format(" (the {} backend does)", c.name);
  return "";
}

void axis_gaps(const Plan& plan, const BackendCapabilities& caps, std::vector<CapabilityGap>& out) {
  const Parallelism& par = plan.parallelism;
  auto axis = [&](const char* key, int degree, bool BackendCapabilities::*runs, const char* what) {
    if (degree > 1 && !(caps.*runs))
      out.push_back({fmt::format("/parallelism/{}", key),
                     fmt::format("the runtime runs {} = 1 only (got {}); the {} backend does not run {} yet{}", key,
                                 degree, caps.name, what, others_running(caps, runs)),
                     true});
  };
  axis("tp", par.tp, &BackendCapabilities::tensor_parallel, "tensor parallelism");
  axis("cp", par.cp, &BackendCapabilities::context_parallel, "context parallelism");
  axis("ep", par.ep, &BackendCapabilities::expert_parallel, "expert parallelism");
  if (par.pp > 1 && par.tp * par.cp > 1 && !caps.pipeline_with_model_parallel)
    out.push_back({"/parallelism/pp", fmt::format("the runtime runs pipeline parallelism with tp = cp = 1 only (got pp "
                                                  "{}, tp {}, cp {})", par.pp, par.tp, par.cp), true});
  // Beside tp, a stage's message is its tp rank's sequence shard; without sequence parallelism it would
  // take Megatron's scatter-gather (an all-gather after each receive) that the step program leaves out.
  if (par.pp > 1 && par.tp > 1 && !par.sequence_parallel && caps.pipeline_with_model_parallel)
    out.push_back({"/parallelism/sequence_parallel", fmt::format("the runtime runs pipeline parallelism beside tp "
                                                                 "with sequence parallelism only (got pp {}, tp {})",
                                                                 par.pp, par.tp), true});
  // Zero bubble's split backward (B, then W) runs on models without tp or cp collectives only.
  if (par.pp > 1 && par.tp * par.cp > 1 && par.pp_schedule == PipelineSchedule::zero_bubble &&
      caps.pipeline_with_model_parallel)
    out.push_back({"/parallelism/pp_schedule", fmt::format("the {} runtime runs {}'s split backward with tp = cp = 1 "
                                                           "only (got tp {}, cp {})", caps.name,
                                                           pipeline_schedule_name(par.pp_schedule), par.tp, par.cp),
                   true});
  if (par.pp > 1 && !contains(caps.pipeline_schedules, par.pp_schedule))
    out.push_back({"/parallelism/pp_schedule", fmt::format("the {} runtime does not run the {} schedule", caps.name,
                                                           pipeline_schedule_name(par.pp_schedule)), true});
}

// Tensor parallelism splits heads, KV heads (or replicates them, Megatron's kv_heads < tp), the FFN and
// the vocabulary evenly (no padding); sequence parallelism splits each micro-batch's tokens; the model
// runs the tp collectives its step program lists, which op-level selective recompute would not match.
// What a backend's tensor-parallel path leaves out (BackendCapabilities::tp_*): sequence parallelism is
// the planner's choice; the dtype and the model are the request's.
// The same limits hold for context parallelism (the fp16 sums, the gpt model).
void tensor_parallel_limits(const Plan& plan, const BackendCapabilities& caps, std::vector<CapabilityGap>& out) {
  const Parallelism& par = plan.parallelism;
  const ModelSpec& m = plan.model;
  auto lacks = [&](const char* path, const std::string& what, bool searched) {
    out.push_back({path, fmt::format("the {} runtime's tensor and context parallelism {} so far (tp = {}, cp = {})",
                                     caps.name, what, par.tp, par.cp), searched});
  };
  if (par.tp > 1 && par.sequence_parallel && !caps.tp_sequence_parallel)
    lacks("/parallelism/sequence_parallel", "runs without sequence parallelism only", true);
  if (plan.precision.param == DType::fp16 && !caps.tp_fp16)
    lacks("/mixed_precision/param_dtype", "sums bf16 activations, not fp16", false);
  if ((m.arch == Arch::gpt || m.bias != LinearBias::none) && !caps.tp_gpt)
    lacks("/model", "runs llama blocks without biases or learned positions only", false);
  if (m.kv_heads < par.tp && !caps.tp_grouped_kv)
    lacks("/parallelism/tp", fmt::format("needs kv_heads ({}) >= tp (no replicated KV heads)", m.kv_heads), true);
}

void tensor_parallel_gaps(const Plan& plan, std::vector<CapabilityGap>& out) {
  const Parallelism& par = plan.parallelism;
  const ModelSpec& m = plan.model;
  auto bad = [&](const std::string& what) {
    out.push_back({"/parallelism/tp", fmt::format("{} (tp = {})", what, par.tp), true});
  };
  if (m.ffn_hidden % par.tp != 0) bad(fmt::format("tp must divide the model's ffn_hidden ({})", m.ffn_hidden));
  if (m.vocab % par.tp != 0)
    bad(fmt::format("tp must divide the model's vocab ({}): the vocabulary-parallel embedding and head hold "
                    "vocab/tp rows each, without padding", m.vocab));
  if (m.kv_heads % par.tp != 0 && par.tp % m.kv_heads != 0)
    bad(fmt::format("tp and the model's kv_heads ({}) must divide one another", m.kv_heads));
  const std::int64_t tokens = plan.training.micro_batch * plan.training.seq / par.cp;
  if (par.sequence_parallel && tokens % par.tp != 0)
    bad(fmt::format("sequence parallelism splits the {} tokens of a micro-batch (micro_batch x seq / cp) across "
                    "the tp ranks, so tp must divide them", tokens));
  if (std::find(plan.recompute.begin(), plan.recompute.end(), RecomputeMode::selective_op) != plan.recompute.end())
    out.push_back({"/recompute", "the runtime does not run op-level selective recompute (\"selective_op\") with "
                                 "tp > 1: its step program re-runs tensor-parallel collectives the model does not; "
                                 "use \"none\", \"selective\" or \"full\"", true});
}

// A tied head reads the embedding's table: without pipeline parallelism both sit in one unit; across
// stages the last stage keeps a copy laid out as the embedding's unit, so the embedding is alone in it.
void tied_unit_gaps(const Plan& plan, std::vector<CapabilityGap>& out) {
  for (std::size_t u = 0; u < plan.units.size(); ++u) {
    const auto& m = plan.units[u].modules;
    const bool emb = contains(m, std::string("embedding")), head = contains(m, std::string("head"));
    if (plan.parallelism.pp == 1 && emb != head)
      out.push_back({fmt::format("/units/{}/modules", u), "a tied head shares the embedding's weight, so "
                                                          "\"embedding\" and \"head\" must be in one unit", true});
    if (plan.parallelism.pp > 1 && emb && m.size() > 1)
      out.push_back({fmt::format("/units/{}/modules", u),
                     "under pipeline parallelism the last stage keeps a copy of a tied embedding laid out as its "
                     "unit, so \"embedding\" must be alone in its unit", true});
  }
}

// fp8 combinations a backend that trains with the recipe may still leave out.
void fp8_gaps(const Plan& plan, const BackendCapabilities& caps, std::vector<CapabilityGap>& out) {
  if (caps.fp8_scalings.empty()) return;  // the /fp8/scaling gap says it all
  if (plan.fp8->all_gather && !caps.fp8_all_gather)
    out.push_back({"/fp8/all_gather",
                   fmt::format("the {} runtime all-gathers parameters in their storage dtype, not in fp8; its GEMMs "
                               "see the same operands either way (each weight cast with its whole tensor's amax, as "
                               "torchao's precompute_float8_dynamic_scale_for_fsdp gives), so set all_gather false",
                               caps.name)});
  // Not marked searched: the planner would drop every tp > 1 shape's wrappings (refine.cpp now returns no
  // candidate then, where it crashed before) and a request fixing --tp 2 would end in a misleading "no plan
  // fits" on memory; the executor refuses such a plan with this reason instead.
  if (plan.parallelism.tp > 1 && !caps.fp8_tensor_parallel)
    out.push_back({"/parallelism/tp", fmt::format("the {} runtime trains fp8 with tp = 1 only (got {}): a tensorwise "
                                                  "scale of a tp-sharded weight needs an amax all-reduce it does not "
                                                  "run", caps.name, plan.parallelism.tp)});
  if (plan.lora && !caps.fp8_lora)
    out.push_back({"/lora", fmt::format("the {} runtime does not train LoRA adapters with fp8", caps.name)});
}

// The plan's attention kernel must be one of the row's, at a head size that kernel takes.
void attention_gaps(const Plan& plan, const BackendCapabilities& caps, std::vector<CapabilityGap>& out) {
  const auto& ks = caps.attention_kernels;
  const auto it = std::find_if(ks.begin(), ks.end(), [&](const AttentionKernelSupport& k) {
    return k.kernel == plan.attention_kernel;
  });
  if (it == ks.end()) {
    out.push_back({"/attention_kernel", fmt::format("the {} runtime {}, so the plan must say {} (got \"{}\")",
                                                    caps.name, caps.attention_note,
                                                    or_list(ks, true, [](const AttentionKernelSupport& k) {
                                                      return attention_kernel_name(k.kernel);
                                                    }),
                                                    attention_kernel_name(plan.attention_kernel)),
                   true});  // the planner records its target's kernel (planner/target.cpp)
    return;
  }
  // Latent attention on a row that trains it pads its heads (qk_nope + qk_rope) with zeros to the kernel's
  // next size (CUDA: executor/cuda/mla.h; deepseek-tiny's 24 to 32), so only the largest size bounds it.
  // DeepSeek-V3's 192 waits for a kernel instantiation checked on a GPU (docs/cuda.md, issue 29).
  const bool own_core = plan.model.is_mla() && caps.mla;
  const std::int64_t latent_head = plan.model.mla.qk_nope_head_dim + plan.model.mla.qk_rope_head_dim;
  const auto& sizes = it->head_dims;
  const std::int64_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  if (own_core && largest > 0 && latent_head > largest)
    out.push_back({"/model/mla", fmt::format("the {} attention kernel \"{}\" takes latent heads (qk_nope_head_dim + "
                                             "qk_rope_head_dim, padded) up to {} (got {})", caps.name,
                                             attention_kernel_name(it->kernel), largest, latent_head),
                   false});
  if (!it->head_dims.empty() && !own_core && !contains(it->head_dims, plan.model.head_dim))
    out.push_back({"/model/head_dim", fmt::format("the {} attention kernel \"{}\" takes {} (got {})", caps.name,
                                                  attention_kernel_name(it->kernel),
                                                  or_list(it->head_dims, false, [](std::int64_t h) { return h; }),
                                                  plan.model.head_dim)});
  if (plan.parallelism.cp > 1 && !it->context_parallel) {
    std::vector<AttentionKernel> with_cp;
    for (const AttentionKernelSupport& k : ks)
      if (k.context_parallel) with_cp.push_back(k.kernel);
    out.push_back({"/parallelism/cp", fmt::format("the {} attention kernel \"{}\" has no context-parallel variant "
                                                  "(got cp {}); cp > 1 runs {}", caps.name,
                                                  attention_kernel_name(it->kernel), plan.parallelism.cp,
                                                  or_list(with_cp, true, attention_kernel_name)),
                   true});
  }
}

void numeric_gaps(const Plan& plan, const BackendCapabilities& caps, std::vector<CapabilityGap>& out) {
  if (!contains(caps.param_dtypes, plan.precision.param))
    out.push_back({"/mixed_precision/param_dtype",
                   fmt::format("the {} runtime computes in {}{}, so the plan must say {} (got \"{}\")", caps.name,
                               dtype_list(caps.param_dtypes, false), caps.param_note,
                               dtype_list(caps.param_dtypes, true), dtype_name(plan.precision.param))});
  if (!contains(caps.reduce_dtypes, plan.precision.reduce))
    out.push_back({"/mixed_precision/reduce_dtype",
                   fmt::format("the {} runtime reduces in {}, so the plan must say {} (got \"{}\")", caps.name,
                               dtype_list(caps.reduce_dtypes, false), dtype_list(caps.reduce_dtypes, true),
                               dtype_name(plan.precision.reduce)), true});
  attention_gaps(plan, caps, out);
  if (plan.training.dropout > 0 && !caps.dropout)
    out.push_back({"/training/dropout", fmt::format("the {} runtime implements no dropout (got {})", caps.name,
                                                    plan.training.dropout)});
  if (plan.lora && !caps.lora)
    out.push_back({"/lora", fmt::format("the {} runtime does not run LoRA", caps.name)});
  if (plan.fp8 && std::find(caps.fp8_scalings.begin(), caps.fp8_scalings.end(), plan.fp8->scaling) == caps.fp8_scalings.end())
    out.push_back({"/fp8/scaling", fmt::format("the {} runtime does not train with fp8 scaling \"{}\"", caps.name,
                                               fp8_scaling_name(plan.fp8->scaling))});
  if (plan.fp8) fp8_gaps(plan, caps, out);
  if (plan.lora && plan.lora->dropout > 0 && !caps.dropout)
    out.push_back({"/lora/dropout", fmt::format("the {} runtime implements no adapter dropout (got {}); the simulator "
                                                "and planner accept it", caps.name, plan.lora->dropout)});
}

// What the backends' expert parallelism (ep > 1) leaves out: replicas (HSDP, DDP, ZeRO-1), a kept copy
// (int reshard_after_forward > 1) and parameter dtypes other than the CPU's fp32 and CUDA's bf16 (fp16 is
// untested with the exchange). Full recompute runs: the block's
// forward, re-run in backward, exchanges the tokens again (dispatch and combine), as torchtitan's full AC
// wraps the whole block, all-to-alls included (torchtitan/distributed/activation_checkpoint.py
// _apply_full_ac), and the step program lists them (program/segment_work.cpp add_block_recompute).
void ep_gaps(const Plan& plan, const BackendCapabilities& caps, std::vector<CapabilityGap>& out) {
  const Parallelism& par = plan.parallelism;
  if (par.ep == 1) return;
  const auto gap = [&](std::string path, const std::string& what, bool searched) {
    out.push_back({std::move(path), fmt::format("the {} backend runs expert parallelism {}", caps.name, what), searched});
  };
  if (par.dp_replicate > 1) gap("/parallelism/dp_replicate", fmt::format("without replicas (got {})", par.dp_replicate), true);
  if (par.data_parallel != DataParallel::fsdp_full_shard && par.data_parallel != DataParallel::fsdp_shard_grad_op)
    gap("/parallelism/data_parallel", "with FSDP's full or grad-op sharding only", true);
  for (std::size_t u = 0; u < plan.units.size(); ++u)
    if (plan.units[u].reshard_after_forward > 1)
      gap(fmt::format("/units/{}/reshard_after_forward", u), "without a kept copy (0 or 1)", true);
  const DType dtype = caps.device == ExecutorDevice::cuda ? DType::bf16 : DType::fp32;
  if (plan.precision.param != dtype) gap("/precision/param", fmt::format("in {} only", dtype_name(dtype)), false);
}

// tp, cp and pp above 1 where the backend runs `what` without them (searched: the planner keeps to 1).
void model_parallel_gaps(const Plan& plan, const BackendCapabilities& caps, const char* what,
                         std::vector<CapabilityGap>& out) {
  const Parallelism& par = plan.parallelism;
  for (const auto& [key, degree] : {std::pair{"tp", par.tp}, std::pair{"cp", par.cp}, std::pair{"pp", par.pp}})
    if (degree > 1)
      out.push_back({fmt::format("/parallelism/{}", key),
                     fmt::format("the {} backend runs {} with {} = 1 only (got {})", caps.name, what, key, degree),
                     true});
}

// What a backend that trains MoE blocks (BackendCapabilities::moe) leaves out: tp, cp, pp on them
// (searched, so the planner keeps to tp = cp = pp = 1), LoRA and fp8 (the request's).
void moe_gaps(const Plan& plan, const BackendCapabilities& caps, std::vector<CapabilityGap>& out) {
  model_parallel_gaps(plan, caps, "mixture-of-experts blocks", out);
  if (plan.lora) out.push_back({"/lora", fmt::format("the {} backend trains no LoRA on mixture-of-experts blocks",
                                                     caps.name), false});
  if (plan.fp8) out.push_back({"/fp8", fmt::format("the {} backend trains mixture-of-experts blocks in fp32 only",
                                                   caps.name), false});
}

}  // namespace

const std::vector<BackendCapabilities>& all_backend_capabilities() {
  static const std::vector<BackendCapabilities> rows{cpu_row(), cuda_row()};
  return rows;
}

const BackendCapabilities& backend_capabilities(ExecutorDevice d) {
  return all_backend_capabilities()[std::size_t(d)];
}

ExecutorDevice cluster_device(const ClusterSpec& c) { return c.host_threads ? ExecutorDevice::cpu : ExecutorDevice::cuda; }

std::optional<std::string> untrained_moe_reason(const ModelSpec& m, const BackendCapabilities& caps) {
  if (!m.is_moe()) return std::nullopt;
  if (!caps.moe) return fmt::format("the {} backend does not train mixture-of-experts blocks yet: issue 30", caps.name);
  const MoeSpec& e = m.moe;
  // Mixtral's block and DeepSeek-V3's (sigmoid scores, correction bias, group-limited top-k, routed scaling,
  // shared experts, dense leading layers: executor/model/moe_mlp.h); DeepSeek-V3's group ranking needs
  // the groups to divide the experts.
  const char* beyond = m.is_mla() && !caps.mla                        ? "multi-head latent attention"
                       : m.qk_norm                                    ? "q/k norms"
                       : e.shared_expert_gate                         ? "Qwen2-MoE's shared-expert gate"
                       : e.capacity_factor > 0                        ? "a capacity factor (token dropping)"
                       : e.groups > 1 && e.scoring != RouterScoring::sigmoid ? "group-limited softmax routing"
                                                                      : nullptr;
  if (!beyond) return std::nullopt;
  return fmt::format("the {} backend trains Mixtral- and DeepSeek-V3-style mixture-of-experts blocks only "
                     "(dropless routed and shared SwiGLU experts): not {} yet (issue 30)", caps.name, beyond);
}

namespace {

// What a backend that trains latent attention (BackendCapabilities::mla) leaves out: tp, cp, pp
// (searched), LoRA and fp8 (the request's); a backend without it: the model. RoPE scaling (YaRN, llama3) is
// in the shared rope table and the softmax scale (executor/model/rope_table.h), so both backends run it.
void mla_gaps(const Plan& plan, const BackendCapabilities& caps, std::vector<CapabilityGap>& out) {
  if (!caps.mla) {
    out.push_back({"/model", fmt::format("the {} backend does not train multi-head latent attention yet: issue 30",
                                         caps.name), false});
    return;
  }
  model_parallel_gaps(plan, caps, "multi-head latent attention", out);
  if (plan.lora) out.push_back({"/lora", fmt::format("the {} backend trains no LoRA on latent attention", caps.name),
                                false});
  if (plan.fp8) out.push_back({"/fp8", fmt::format("the {} backend trains latent attention in fp32 only", caps.name),
                               false});
}

}  // namespace

std::vector<CapabilityGap> capability_gaps(const Plan& plan, const BackendCapabilities& caps) {
  std::vector<CapabilityGap> out;
  // Plans of mixture-of-experts models are simulated (program/moe_block.h); a backend whose row says moe
  // trains Mixtral's kind of block. The model is the request's, not a searched setting.
  if (const auto why = untrained_moe_reason(plan.model, caps)) out.push_back({"/model", *why, false});
  if (plan.model.is_moe() && caps.moe) moe_gaps(plan, caps, out);
  if (plan.model.is_moe() && caps.expert_parallel) ep_gaps(plan, caps, out);
  if (plan.model.is_mla() && !(plan.model.is_moe() && !caps.moe)) mla_gaps(plan, caps, out);
  axis_gaps(plan, caps, out);
  const Parallelism& par = plan.parallelism;
  if ((caps.tensor_parallel && par.tp > 1) || (caps.context_parallel && par.cp > 1))
    tensor_parallel_limits(plan, caps, out);
  if (caps.tensor_parallel && par.tp > 1) tensor_parallel_gaps(plan, out);
  numeric_gaps(plan, caps, out);
  if (plan.model.tied_embeddings) tied_unit_gaps(plan, out);
  return out;
}

}  // namespace fsdpx
