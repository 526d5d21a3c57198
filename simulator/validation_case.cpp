// simulator/validation_case.cpp — strict reading of the published-runs case format and the plan each
// case describes (see validation_case.h). The plan follows what the run's framework does by default:
// one FSDP unit per block, embedding alone, final norm + head together; bf16 parameters with the
// framework's gradient-reduction dtype; pipeline stages split by the framework's accounting. Leaves out
// power caps and torch.compile.
#include "simulator/validation_case.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/config_paths.h"
#include "core/data_placement.h"
#include "core/json_reader.h"

namespace fsdpx {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

template <typename E, std::size_t N>
E from_name(const std::array<std::pair<const char*, E>, N>& names, const std::string& s) {
  for (const auto& [n, v] : names)
    if (s == n) return v;
  FSDP_CHECK(false, "name accepted by JsonObject::choice without an enum value");
  return names[0].second;
}

constexpr std::array<std::pair<const char*, DataParallel>, 6> kDataParallel{{
    {"fsdp_full_shard", DataParallel::fsdp_full_shard},
    {"fsdp_shard_grad_op", DataParallel::fsdp_shard_grad_op},
    {"hsdp", DataParallel::hsdp},
    {"ddp", DataParallel::ddp},
    {"zero1", DataParallel::zero1},
    {"distributed_optimizer", DataParallel::distributed_optimizer},
}};
constexpr std::array<std::pair<const char*, PipelineSchedule>, 5> kSchedules{{
    {"none", PipelineSchedule::none},
    {"gpipe", PipelineSchedule::gpipe},
    {"1f1b", PipelineSchedule::one_f_one_b},
    {"interleaved_1f1b", PipelineSchedule::interleaved_1f1b},
    {"zero_bubble", PipelineSchedule::zero_bubble},
}};
constexpr std::array<std::pair<const char*, RecomputeMode>, 3> kRecompute{{
    {"none", RecomputeMode::none}, {"selective", RecomputeMode::selective}, {"full", RecomputeMode::full}}};
constexpr std::array<std::pair<const char*, FfnKind>, 3> kFfn{{
    {"swiglu", FfnKind::swiglu}, {"gelu", FfnKind::gelu}, {"squared_relu", FfnKind::squared_relu}}};

// A number or null; absent keys are errors (the format writes every key).
std::optional<double> nullable_number(JsonObject& o, std::string_view key) {
  const nlohmann::json& v = o.raw(key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number() || v.get<double>() < 0)
    o.fail(key, fmt::format("expected a non-negative number or null, got {}", json_type_name(v)));
  return v.get<double>();
}

int positive_int(JsonObject& o, std::string_view key) { return int(o.positive_integer(key)); }

ModelSpec parse_case_model(JsonObject o) {
  ModelSpec m;
  m.name = o.string("name");
  m.arch = o.choice("arch", {"llama", "gpt"}) == "llama" ? Arch::llama : Arch::gpt;
  m.layers = o.positive_integer("layers");
  m.hidden = o.positive_integer("hidden");
  m.heads = o.positive_integer("heads");
  m.kv_heads = o.positive_integer("kv_heads");
  m.ffn_hidden = o.positive_integer("ffn_hidden");
  m.ffn_kind = from_name(kFfn, o.choice("ffn_kind", {"swiglu", "gelu", "squared_relu"}));
  m.vocab = o.positive_integer("vocab");
  m.tied_embeddings = o.boolean("tied_embeddings");
  o.finish();
  if (m.hidden % m.heads != 0) o.fail("hidden", "expected a multiple of heads");
  if (m.heads % m.kv_heads != 0) o.fail("kv_heads", "expected a divisor of heads");
  m.head_dim = m.hidden / m.heads;
  // Same default as core/model_spec.cpp: GPT biases every linear layer, Llama none (< 0.1% of params).
  m.bias = m.arch == Arch::gpt ? LinearBias::all : LinearBias::none;
  return m;
}

Parallelism parse_case_parallelism(JsonObject o) {
  Parallelism p;
  p.dp_replicate = positive_int(o, "dp_replicate");
  p.dp_shard = positive_int(o, "dp_shard");
  p.tp = positive_int(o, "tp");
  p.pp = positive_int(o, "pp");
  p.vpp = positive_int(o, "vpp");
  p.cp = positive_int(o, "cp");
  p.sequence_parallel = o.boolean("sequence_parallel");
  p.pp_schedule =
      from_name(kSchedules, o.choice("pp_schedule", {"none", "gpipe", "1f1b", "interleaved_1f1b", "zero_bubble"}));
  p.data_parallel = from_name(kDataParallel, o.choice("data_parallel", {"fsdp_full_shard", "fsdp_shard_grad_op", "hsdp",
                                                                       "ddp", "zero1", "distributed_optimizer"}));
  o.finish();
  return p;
}

MeasuredRun parse_measured(JsonObject o) {
  MeasuredRun m;
  m.tokens_per_s_per_gpu = nullable_number(o, "tokens_per_s_per_gpu");
  m.mfu_pct = nullable_number(o, "mfu_pct");
  m.peak_memory_gib = nullable_number(o, "peak_memory_gib");
  m.step_time_s = nullable_number(o, "step_time_s");
  o.finish();
  return m;
}

void parse_case_gpu(JsonObject o, ValidationCase& c) {
  c.gpu = o.choice("name", {"a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb", "h200-sxm-141gb", "b200-180gb", "gb200"});
  c.gpu_memory_gib = o.optional_positive_number("memory_gib");
  c.gpu_hbm_bw_tb_s = o.optional_positive_number("hbm_bw_tb_s");
  c.gpu_power_w = o.optional_positive_number("power_w");
  o.finish();
}

ValidationCase parse_case(JsonObject o) {
  ValidationCase c;
  c.id = o.string("id");
  c.source = o.string("source");
  c.framework = o.string("framework");
  c.model = parse_case_model(o.object("model"));
  c.seq_len = o.positive_integer("seq_len");
  c.model.max_seq = c.seq_len;
  parse_case_gpu(o.object("gpu"), c);
  c.gpus = positive_int(o, "gpus");
  c.gpus_per_node = positive_int(o, "gpus_per_node");
  c.inter_node_bw_gbit_per_gpu = nullable_number(o, "inter_node_bw_gbit_per_gpu");
  c.parallelism = parse_case_parallelism(o.object("parallelism"));
  c.micro_batch = o.positive_integer("micro_batch");
  c.global_batch = o.positive_integer("global_batch");
  c.recompute = from_name(kRecompute, o.choice("recompute", {"none", "selective", "full"}));
  o.choice("precision", {"bf16"});
  c.compiled = o.boolean("compiled");
  c.measured = parse_measured(o.object("measured"));
  for (const auto& [v, path] : o.array("uncertain")) {
    if (!v->is_string()) throw_config_error(o.file(), path, "expected a string");
    c.uncertain.push_back(v->get<std::string>());
  }
  o.finish();
  const Parallelism& p = c.parallelism;
  if (p.world_size() != c.gpus)
    o.fail("parallelism", fmt::format("dp_replicate x dp_shard x tp x pp x cp = {}, expected gpus = {}", p.world_size(), c.gpus));
  if (c.gpus % c.gpus_per_node != 0 && c.gpus > c.gpus_per_node)
    o.fail("gpus", fmt::format("expected a multiple of gpus_per_node ({})", c.gpus_per_node));
  return c;
}

}  // namespace

ValidationCaseFile parse_validation_cases(const nlohmann::json& j, const std::string& file) {
  JsonObject root(j, file);
  root.choice("format", {"fsdpx-published-runs/1"});
  ValidationCaseFile out;
  out.file = file;
  for (const auto& [v, path] : root.array("cases")) {
    if (!v->is_object()) throw_config_error(file, path, fmt::format("expected an object, got {}", json_type_name(*v)));
    out.cases.push_back(parse_case(JsonObject(*v, file, path)));
    for (std::size_t i = 0; i + 1 < out.cases.size(); ++i)
      if (out.cases[i].id == out.cases.back().id)
        throw_config_error(file, path + "/id", fmt::format("duplicate case id \"{}\"", out.cases.back().id));
  }
  root.finish();
  return out;
}

ValidationCaseFile load_validation_cases(const std::string& path) {
  return parse_validation_cases(load_json_file(path), path);
}

std::optional<std::string> validation_skip_reason(const ValidationCase&) { return std::nullopt; }

std::string cluster_for_gpu(const std::string& gpu, const std::string& file, const std::string& path) {
  static constexpr std::array<std::pair<const char*, const char*>, 6> kClusters{{
      {"a100-sxm-40gb", "dgx-a100-40gb"},
      {"a100-sxm-80gb", "dgx-a100-80gb"},
      {"h100-sxm-80gb", "dgx-h100"},
      {"h200-sxm-141gb", "dgx-h200"},
      {"b200-180gb", "hgx-b200"},
      {"gb200", "gb200-nvl72"},
  }};
  for (const auto& [g, cl] : kClusters)
    if (gpu == g) return cl;
  throw_config_error(file, path, fmt::format("no shipped cluster for GPU \"{}\"", gpu));
}

// Gradient-reduction dtype by framework. llm-foundry: its benchmark tables list "MP Mode DEFAULT"
// (mosaicml/llm-foundry scripts/train/benchmarking/README.md), which Composer maps to param dtype =
// bf16, reduce dtype = fp32 (composer/distributed/mosaic_parallelism.py, get_mixed_precision).
// torchtitan: mixed_precision_reduce = float32 (torchtitan/config/configs.py l.102). Megatron-LM / NeMo:
// bf16 forces fp32 gradient accumulation and all-reduce (megatron/training/arguments.py). Frameworks
// not listed get PyTorch FSDP2's default, also fp32.
DType framework_reduce_dtype(const std::string&) { return DType::fp32; }

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

// Megatron-LM's attention before flash kernels: the 2021 paper's runs used materialised scores with a
// fused scale-mask-softmax (Narayanan et al. 2021 §4.3); flash attention entered Megatron-LM with
// --use-flash-attn in 2023 (flash-attn 2, Transformer Engine fused attention since). Megatron runs
// cited from before 2023 therefore get the unfused path; later and undated ones the framework default.
AttentionKernel case_attention_kernel(const ValidationCase& c) {
  constexpr int kMegatronFlashYear = 2023;
  const std::optional<int> year = source_year(c.source);
  if (c.framework == "megatron" && year && *year < kMegatronFlashYear) return AttentionKernel::unfused;
  return framework_attention_kernel(c.framework);
}

// Megatron-LM of the 2021 runs (the unfused era above) trains GPT with attention and hidden dropout 0.1
// (megatron/arguments.py, --attention-dropout and --hidden-dropout defaults), the setting Korthikanti
// et al. 2022 §4.1 itemise; the later stacks' Llama/GPT runs train without dropout.
double case_dropout(const ValidationCase& c) {
  constexpr double kMegatronDropout = 0.1;
  return case_attention_kernel(c) == AttentionKernel::unfused ? kMegatronDropout : 0.0;
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
  return framework == "megatron" || framework == "nemo";
}
StageAccounting framework_stage_accounting(const std::string& framework) {
  return framework_even_stage_split(framework) ? StageAccounting{0, 0} : StageAccounting{1, 1};
}

// torchtitan logs "memory: {max_reserved_gib}GiB", the caching allocator's reserved_bytes.all.peak
// (torchtitan/metrics.py, DeviceMemoryMonitor.get_peak_stats); CUDA context and NCCL's own cudaMalloc'd
// buffers are outside it. Other sources publish no memory; nvidia-smi's device total is the default.
MemoryMetric framework_memory_metric(const std::string& framework) {
  return framework == "torchtitan" ? MemoryMetric::allocator_reserved : MemoryMetric::device_total;
}

std::string validation_source_key(const ValidationCase& c) {
  const std::size_t space = c.source.find(' ');
  const std::string head = c.source.substr(0, space);
  return head.empty() ? c.framework : head;
}

}  // namespace fsdpx

namespace fsdpx {

namespace {

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
  cl.gpus_per_node = std::min(c.gpus_per_node, c.gpus);
  cl.nodes = c.gpus / cl.gpus_per_node;
  if (c.gpu_memory_gib) cl.gpu.hbm_bytes = *c.gpu_memory_gib * kGiB;
  if (c.gpu_hbm_bw_tb_s) cl.gpu.hbm_bw_bytes_per_s = *c.gpu_hbm_bw_tb_s * 1e12;
  if (c.gpu_power_w) notes.push_back(fmt::format("power cap {:.0f} W not modelled", *c.gpu_power_w));
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

}  // namespace

CasePlan build_case_plan(const ValidationCase& c, const std::string& file) {
  CasePlan out;
  const ClusterSpec cl = case_cluster(c, file, out.notes);
  TrainingSettings t;
  t.seq = c.seq_len;
  t.micro_batch = c.micro_batch;
  t.global_batch = c.global_batch;
  // One unit per block, embedding alone, final norm + head together (with the embedding when tied,
  // never resharded): torchtitan's apply_fsdp and llm-foundry's per-block FSDP wrapping. Megatron-LM
  // refuses a layer count its even pipeline split cannot divide.
  const std::string where = fmt::format("{}: case \"{}\"", file, c.id);
  const Parallelism& par = c.parallelism;
  if (par.pp > 1 && framework_even_stage_split(c.framework)) {
    try {
      even_stage_blocks(int(c.model.layers), par.pp, par.vpp);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: /parallelism: {}", where, e.what()));
    }
  }
  out.plan = default_plan(c.model, cl, t, par, 1, framework_recompute(c.framework, c.recompute),
                          framework_stage_accounting(c.framework));
  out.memory_metric = framework_memory_metric(c.framework);
  out.plan.precision.param = DType::bf16;
  out.plan.precision.reduce = framework_reduce_dtype(c.framework);
  out.plan.reduce_grads = framework_reduce_grads(c);
  out.plan.attention_kernel = case_attention_kernel(c);
  out.plan.training.dropout = case_dropout(c);
  if (c.compiled) out.notes.push_back("torch.compile not modelled");
  validate_plan(out.plan, where);
  return out;
}

}  // namespace fsdpx
