// simulator/case_plan.cpp — the plan a published run describes: the shipped cluster of its GPU with
// the case's overrides, its parallel degrees, and what its framework does by default (training stack,
// FSDP wrapping, reduce dtype, attention kernel, recompute mode, when gradients are reduced, which
// memory figure it publishes, how it splits blocks over pipeline stages), each read from the framework's
// code. Leaves out power caps.
#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include <fmt/format.h>

#include "core/config_paths.h"
#include "core/data_placement.h"
#include "core/errors.h"
#include "core/pipeline.h"
#include "core/json_reader.h"
#include "simulator/op_timing.h"
#include "simulator/validation_case.h"

namespace fsdpx {

// Gradient-reduction dtype by framework. llm-foundry: its benchmark tables list "MP Mode DEFAULT"
// (mosaicml/llm-foundry scripts/train/benchmarking/README.md), which Composer maps to param dtype =
// bf16, reduce dtype = fp32 (composer/distributed/mosaic_parallelism.py, get_mixed_precision).
// torchtitan: mixed_precision_reduce = float32 (torchtitan/config/configs.py l.102). Megatron-LM / NeMo:
// bf16 forces fp32 gradient accumulation and all-reduce (megatron/training/arguments.py). IBM's fms-fsdp:
// main_training.py wraps the model in FSDP1 with get_policies' mixed precision, bfSixteen whenever the GPU and
// NCCL support bf16 (fms_fsdp/utils/train_utils.py @4ffb9bd and @ed74fd5), and bfSixteen sets
// reduce_dtype=torch.bfloat16 (fms_fsdp/policies/mixed_precision.py): bf16 reduce-scatters and HSDP
// all-reduces. Frameworks not listed get PyTorch FSDP2's default, fp32.
DType framework_reduce_dtype(const std::string& framework) {
  return framework == "fms-fsdp" ? DType::bf16 : DType::fp32;
}

// Attention kernel family by framework: MosaicML's MPT pretraining configs set attn_impl: triton
// (scripts/train/yamls/pretrain/mpt-*.yaml), the Triton port of FlashAttention-1; the others run
// FlashAttention-2-class kernels (PyTorch SDPA, flash-attn 2, Transformer Engine).
AttentionKernel framework_attention_kernel(const std::string& framework) {
  return framework == "llm-foundry" ? AttentionKernel::flash1 : AttentionKernel::flash2;
}

// The first standalone year (2000-2099) in a source citation: when the software ran.
std::optional<int> source_year(const std::string& source) {
  for (std::size_t i = 0; i + 4 <= source.size(); ++i) {
    const bool starts = i == 0 || !std::isalnum(static_cast<unsigned char>(source[i - 1]));
    const bool ends = i + 4 == source.size() || !std::isalnum(static_cast<unsigned char>(source[i + 4]));
    if (!starts || !ends || source.compare(i, 2, "20") != 0) continue;
    const auto digit = [&](std::size_t k) { return std::isdigit(static_cast<unsigned char>(source[k])) != 0; };
    if (digit(i + 2) && digit(i + 3)) return std::stoi(source.substr(i, 4));
  }
  return std::nullopt;
}

namespace {

bool megatron_stack(const std::string& framework) {
  return framework == "megatron" || framework == "nemo" || framework == "megatron-bridge";
}

// Megatron-LM's attention before flash kernels: the 2021 paper's runs used materialised scores with a
// fused scale-mask-softmax (Narayanan et al. 2021 §4.3); flash attention entered Megatron-LM with
// --use-flash-attn in 2023 (flash-attn 2, Transformer Engine fused attention since). NeMo's GPT ran the
// same Megatron attention until flash attention entered it in NVIDIA/NeMo PR #6666 (2023-06-12, "GPT
// extrapolatable position embedding ... and Flash Attention"). Megatron and NeMo runs cited from before
// 2023 therefore get the unfused path; later and undated ones the framework default.
bool megatron_unfused_era(const ValidationCase& c) {
  constexpr int kMegatronFlashYear = 2023;
  const std::optional<int> year = source_year(c.source);
  return megatron_stack(c.framework) && year && *year < kMegatronFlashYear;
}

}  // namespace

// After it, Megatron-Core's attention is Transformer Engine's DotProductAttention, which prefers cuDNN's
// fused attention over flash-attn on Hopper: "Select FusedAttention on sm90 and FlashAttention on others"
// since TE v1.2 (2023-12, NVIDIA/TransformerEngine transformer_engine/pytorch/attention.py), "Disabling
// FlashAttention to give FusedAttention preference on Hopper+" since TE v1.8 (`get_attention_backend`, now
// transformer_engine/pytorch/attention/dot_product_attention/utils.py). Such runs get cuDNN where the GPU
// file has its curves (Hopper); elsewhere (A100: TE keeps flash-attn; Blackwell: no cuDNN figure shipped)
// the framework default. Megatron-Bridge is Megatron-Core's stack.
AttentionKernel case_attention_kernel(const ValidationCase& c, const GpuSpec& gpu) {
  if (megatron_unfused_era(c)) return AttentionKernel::unfused;
  if (megatron_stack(c.framework) && !gpu.cudnn_attention_efficiency.points.empty()) return AttentionKernel::cudnn;
  return framework_attention_kernel(c.framework);
}

// Megatron-LM of the 2021 runs (the unfused era above) trains GPT with attention and hidden dropout 0.1
// (megatron/arguments.py, --attention-dropout and --hidden-dropout defaults), the setting Korthikanti
// et al. 2022 §4.1 itemise; the later stacks' Llama/GPT runs train without dropout.
double case_dropout(const ValidationCase& c) {
  constexpr double kMegatronDropout = 0.1;
  return megatron_unfused_era(c) ? kMegatronDropout : 0.0;
}

// torchtitan's "selective" in the published Llama runs is op-level SAC: its Llama 3 train configs set
// activation_checkpoint.mode = 'selective', selective_ac_option = 'op' (train_configs/llama3_8b.toml
// @0011fb90; the policy in torchtitan/parallelisms/parallelize_llama.py @004b3148). NeMo / Megatron's
// recompute_granularity: selective recomputes the core attention (Korthikanti et al. 2022 §5;
// megatron/core/transformer/transformer_config.py), fsdpx's `selective`.
RecomputeMode framework_recompute(const std::string& framework, RecomputeMode stated) {
  if (stated == RecomputeMode::selective && framework == "torchtitan") return RecomputeMode::selective_op;
  return stated;
}

// How a framework splits the blocks over pipeline stages. Megatron-LM (and NeMo, which builds on
// Megatron-Core) splits the blocks evenly, the embedding on the first stage and the output layer and
// loss on the last on top: account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split
// default to False (megatron/core/transformer/transformer_config.py; get_num_layers_to_build in
// transformer_block.py). torchtitan counts the embedding and norm + output as one block each
// (generate_llm_fqn_per_model_part(num_stages, num_layers, input_weight=1, output_weight=1),
// torchtitan/distributed/pipeline_parallel.py). Others: torchtitan's, the PyTorch-native default.
bool framework_even_stage_split(const std::string& framework) {
  return framework == "megatron" || framework == "nemo" || framework == "megatron-bridge";
}
StageAccounting framework_stage_accounting(const std::string& framework) {
  return framework_even_stage_split(framework) ? StageAccounting{0, 0} : StageAccounting{1, 1};
}

// Megatron-Core's split when the stages do not divide the blocks. The Llama 3.1 405B recipes of
// Megatron-Bridge and NeMo (126 blocks over pp x vpp = 8 x 8 or 16 x 1 stages) set
// account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split, so that
// (layers + 2) / stages blocks go to every stage and the first and last hold one fewer
// (megatron/core/transformer/transformer_config.py; get_transformer_layer_offset in
// transformer_block.py); the loss option alone when layers + 1 divides. Any other count needs
// --decoder-first/last-pipeline-num-layers, which a case does not state: the balanced split with the
// embedding and the loss counted as a block each is assumed and noted (Llama 3 paper, Dubey et al.
// 2024 §3.3.2: "we reduce one Transformer layer each from the first and the last stages").
StageAccounting megatron_stage_accounting(int layers, int stages, std::vector<std::string>& notes) {
  if (layers % stages == 0) return StageAccounting{0, 0};
  if ((layers + 2) % stages == 0) {
    notes.push_back("embedding and loss counted as a block each in the pipeline split");
    return StageAccounting{1, 1};
  }
  if ((layers + 1) % stages == 0) {
    notes.push_back("loss counted as a block in the pipeline split");
    return StageAccounting{0, 1};
  }
  notes.push_back(fmt::format("{} blocks over {} pipeline stages: uneven first and last stages assumed "
                              "(--decoder-first/last-pipeline-num-layers), embedding and loss counted as a block each",
                              layers, stages));
  return StageAccounting{1, 1};
}

// torchtitan logs "memory: {max_reserved_gib}GiB", the caching allocator's reserved_bytes.all.peak
// (torchtitan/metrics.py, DeviceMemoryMonitor.get_peak_stats); CUDA context and NCCL's own cudaMalloc'd
// buffers are outside it. Other sources publish no memory; nvidia-smi's device total is the default.
MemoryMetric framework_memory_metric(const std::string& framework) {
  return framework == "torchtitan" ? MemoryMetric::allocator_reserved : MemoryMetric::device_total;
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Line rate of one compute NIC of each shipped cluster, Gb/s (the configs' sources: DGX A100 has
// HDR 200G ConnectX-6; DGX H100/H200, the assumed HGX B200 and GB200 NVL72 NICs are NDR 400G
// ConnectX-7). The shipped nic_gb_per_s is the achievable rate; achievable / line is the protocol
// efficiency kept when a case states another line rate (24/25 for HDR, sjeaugey nccl-tests #160;
// 48/50 for NDR, AddyLaddy nccl-tests #267).
double shipped_nic_line_gbit(const std::string& cluster) {
  return cluster.rfind("dgx-a100", 0) == 0 ? 200.0 : 400.0;
}

ClusterSpec case_cluster(const ValidationCase& c, const std::string& file, std::vector<std::string>& notes) {
  const std::string name = cluster_for_gpu(c.gpu, file, "/cases/" + c.id + "/gpu/name");
  ClusterSpec cl = load_cluster(name);
  // A job on part of a node keeps the node's GPU count for its NIC share only when it spans nodes; on
  // one node it is a node of that many GPUs. Across nodes the last one may be partly used.
  cl.gpus_per_node = std::min(c.gpus_per_node, c.gpus);
  cl.nodes = (c.gpus + cl.gpus_per_node - 1) / cl.gpus_per_node;
  cl.gpus = c.gpus % cl.gpus_per_node == 0 ? 0 : c.gpus;
  if (c.gpu_memory_gib) cl.gpu.hbm_bytes = *c.gpu_memory_gib * kGiB;
  if (c.gpu_hbm_bw_tb_s) cl.gpu.hbm_bw_bytes_per_s = *c.gpu_hbm_bw_tb_s * 1e12;
  if (c.gpu_power_w) {
    if (cl.gpu.rated_power_w > 0)
      cl.gpu.power_limit_w = *c.gpu_power_w;
    else
      notes.push_back(fmt::format("power cap {:.0f} W not modelled: {} has no rated power", *c.gpu_power_w, cl.gpu.name));
  }
  if (c.inter_node_bw_gbit_per_gpu) {
    const double line_bytes_per_s = shipped_nic_line_gbit(name) * 1e9 / 8;
    const double achievable_ratio = cl.inter.nic_bw_bytes_per_s / line_bytes_per_s;
    const double node_line_bytes_per_s = *c.inter_node_bw_gbit_per_gpu * 1e9 / 8 * cl.gpus_per_node;
    cl.inter.nic_bw_bytes_per_s = node_line_bytes_per_s * achievable_ratio / cl.inter.nics_per_node;
  } else if (cl.nodes > 1) {
    notes.push_back(fmt::format("inter-node bandwidth not stated: {} default, {} NICs x {:.0f} GB/s per node", name,
                                cl.inter.nics_per_node, cl.inter.nic_bw_bytes_per_s / 1e9));
  }
  return cl;
}

// Megatron's DDP and distributed optimizer accumulate into a contiguous main-grad buffer and reduce
// it once per step, overlapped with the last micro-batch's backward (megatron/core/distributed/
// distributed_data_parallel.py, no_sync over all but the last micro-batch). PyTorch FSDP under
// llm-foundry and torchtitan reduce-scatters after every micro-batch (FSDP keeps no unsharded grads).
// So: replicated parameters (DDP, ZeRO-1) reduce once per step, sharded ones every micro-batch.
ReduceGrads framework_reduce_grads(const ValidationCase& c) {
  return is_sharded(data_placement(c.parallelism).params) ? ReduceGrads::every_micro_batch
                                                          : ReduceGrads::last_micro_batch;
}

// torchtitan's apply_fsdp (parallelisms/parallelize_llama.py @9dec370): fully_shard on every block,
// resharded after forward except the last ("FSDP would prefetch it immediately"), then
// fully_shard(model, reshard_after_forward=True) without pipelining, a root unit owning the embedding,
// the final norm and the output projection. fms-fsdp wraps every LLaMABlock the same way with FSDP1's
// transformer_auto_wrap_policy, the root FSDP module holding the rest (fms_fsdp/policies/wrapping.py,
// main_training.py @4ffb9bd).
std::vector<PlanUnit> torchtitan_units(const ModelSpec& m) {
  std::vector<PlanUnit> units;
  for (std::int64_t b = 0; b < m.layers; ++b)
    units.push_back(PlanUnit{{fmt::format("block.{}", b)}, b + 1 < m.layers ? 1 : 0});
  units.push_back(PlanUnit{{"embedding", "final_norm", "head"}, 1});
  return units;
}

// The slowest expert-parallel rank's routed rows over the mean. Megatron-Core with a capacity factor and
// moe_pad_expert_input_to_capacity pads every expert to capacity = capacity_factor x tokens x top_k /
// experts rows and drops the rest (megatron/core/transformer/moe/moe_utils.py get_capacity; the MoE runs
// state token drop with padding), so each rank carries capacity_factor x the mean. Dropless runs get the
// documented default (core/expert_parallel.h), an assumption the notes state.
MoeRouting case_moe_routing(const ModelSpec& m, std::vector<std::string>& notes) {
  MoeRouting r;
  if (m.moe.capacity_factor >= 1.0) {
    r.token_imbalance = m.moe.capacity_factor;
    notes.push_back(fmt::format("routed load padded to capacity factor {:g} (token drop)", m.moe.capacity_factor));
    return r;
  }
  if (m.moe.capacity_factor > 0)
    notes.push_back(fmt::format("capacity factor {:g} < 1 not modelled: its dropped rows are counted as routed",
                                m.moe.capacity_factor));
  notes.push_back(fmt::format("dropless routing: slowest ep rank's routed tokens {:g} x the mean assumed (default)",
                              r.token_imbalance));
  return r;
}

}  // namespace

// The stack a case's framework names. Frameworks not listed are taken as eager PyTorch with FSDP2, as
// torchtitan runs it (its kernels are the plain PyTorch module code that Hugging Face-style models also
// use), and the notes say so.
Framework case_framework(const ValidationCase& c, std::vector<std::string>& notes) {
  // Megatron-Bridge trains with Megatron-Core and Transformer Engine, as NeMo does.
  if (c.framework == "nemo" || c.framework == "megatron" || c.framework == "megatron-bridge") return Framework::megatron;
  if (auto f = framework_from_name(c.framework)) return *f;
  notes.push_back(fmt::format("framework \"{}\" not known: eager PyTorch FSDP2 (torchtitan's costs) assumed",
                              c.framework));
  return Framework::torchtitan;
}

// The stack version a case's source names, where the stack has versions that cost differently
// (core/framework.h framework_versions): a release it cites ("v0.2.2", "@v0.2.1", "torchtitan 0.2.2"),
// else "pre-0.1.0" for a torchtitan source dated before 2025 (the commits before its first release,
// v0.1.0 of 2025-06-17); otherwise not stated (empty).
std::string case_framework_version(const ValidationCase& c, Framework f) {
  const std::vector<std::string>& known = framework_versions(f);
  for (auto it = known.rbegin(); it != known.rend(); ++it)
    for (const char* prefix : {"v", "@v", "torchtitan "})
      if (c.source.find(std::string(prefix) + *it) != std::string::npos) return *it;
  constexpr int kFirstReleaseYear = 2025;
  const std::optional<int> year = source_year(c.source);
  if (f == Framework::torchtitan && year && *year < kFirstReleaseYear) return "pre-0.1.0";
  return {};
}

// fms-fsdp's selective_checkpointing p: full checkpointing on p of the blocks, evenly spaced, block i (1-based)
// checkpointed when i * p reaches the next half-integer cut-off (fms_fsdp/policies/ac_handler.py,
// apply_fsdp_checkpointing: p = 1/2 -> [ac, no-ac, ...], p = 1/3 -> [no-ac, ac, no-ac, ...]).
void spread_recompute(std::vector<RecomputeMode>& blocks, double fraction) {
  double cut_off = 0.5;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const bool checkpointed = double(i + 1) * fraction >= cut_off;
    if (checkpointed) cut_off += 1;
    blocks[i] = checkpointed ? RecomputeMode::full : RecomputeMode::none;
  }
}

CasePlan build_case_plan(const ValidationCase& c, const std::string& file) {
  CasePlan out;
  const ClusterSpec cl = case_cluster(c, file, out.notes);
  TrainingSettings t;
  t.seq = c.seq_len;
  t.micro_batch = c.micro_batch;
  t.global_batch = c.global_batch;
  // One unit per block, embedding alone, final norm + head together (with the embedding when tied,
  // never resharded): torchtitan's apply_fsdp and llm-foundry's per-block FSDP wrapping. Megatron
  // stacks split evenly where the stages divide the blocks (megatron_stage_accounting otherwise).
  const std::string where = fmt::format("{}: case \"{}\"", file, c.id);
  const Parallelism& par = c.parallelism;
  StageAccounting accounting = framework_stage_accounting(c.framework);
  if (par.pp > 1 && framework_even_stage_split(c.framework))
    accounting = megatron_stage_accounting(int(c.model.layers), virtual_stages(par.pp, par.vpp), out.notes);
  out.plan = default_plan(c.model, cl, t, par, 1, framework_recompute(c.framework, c.recompute), accounting);
  if (c.recompute_fraction < 1) spread_recompute(out.plan.recompute, c.recompute_fraction);
  out.memory_metric = framework_memory_metric(c.framework);
  out.plan.precision.param = DType::bf16;
  out.plan.precision.reduce = framework_reduce_dtype(c.framework);
  out.plan.reduce_grads = framework_reduce_grads(c);
  out.plan.attention_kernel = case_attention_kernel(c, cl.gpu);
  out.plan.training.dropout = case_dropout(c);
  out.plan.framework = case_framework(c, out.notes);
  out.plan.framework_version = case_framework_version(c, out.plan.framework);
  out.plan.compiled = c.compiled && framework_can_compile(out.plan.framework);
  if (c.compiled && !out.plan.compiled)
    out.notes.push_back(fmt::format("compiled ignored: {} runs its own kernels", framework_name(out.plan.framework)));
  out.plan.fp8 = c.fp8;
  // Apex's DistributedFusedAdam (op_timing.h) all-gathers the updated parameters bucket by bucket inside
  // step(), after the update and before the next forward (NVIDIA/apex apex/contrib/optimizers/
  // distributed_fused_adam.py @98661600 step; overlap_param_sync came later): nothing computes meanwhile.
  // Modelled as the first micro-batch's all-gathers without prefetch, each waiting for the compute before
  // it: the same exposed time, at the start of the step instead of the end of the previous one.
  if (apex_distributed_adam(out.plan)) out.plan.prefetch.forward = 0;
  if (c.model.is_moe()) out.plan.moe_routing = case_moe_routing(c.model, out.notes);
  if ((out.plan.framework == Framework::torchtitan || out.plan.framework == Framework::fms_fsdp) &&
      par.data_parallel == DataParallel::fsdp_full_shard && par.pp == 1)
    out.plan.units = torchtitan_units(c.model);
  validate_plan(out.plan, where);
  return out;
}

}  // namespace fsdpx
