// simulator/validation_case.h — one published training run (format "fsdpx-published-runs/1", see
// /work/shared/validation/README.md) and the plan that describes it: the shipped cluster of its GPU
// with the case's overrides, its parallel degrees, units per block, recompute, the reduce dtype its
// framework uses by default and its framework's split of blocks over pipeline stages. Leaves out power
// caps (power_w is read and not modelled) and torch.compile (the "compiled" flag is read and ignored).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/plan.h"
#include "simulator/case_uncertainty.h"

namespace fsdpx {

// Published numbers; nullopt where the source does not publish them.
struct MeasuredRun {
  std::optional<double> tokens_per_s_per_gpu;
  std::optional<double> mfu_pct;
  std::optional<double> peak_memory_gib;
  std::optional<double> step_time_s;
};

struct ValidationCase {
  std::string id;
  std::string source;
  std::string framework;  // "llm-foundry", "nemo", "megatron", "torchtitan", ...
  ModelSpec model;        // max_seq = seq_len
  std::int64_t seq_len = 0;
  std::string gpu;        // GPU config name
  std::optional<double> gpu_memory_gib, gpu_hbm_bw_tb_s, gpu_power_w;
  int gpus = 0;
  int gpus_per_node = 0;
  std::optional<double> inter_node_bw_gbit_per_gpu;  // nullopt: not stated by the source
  Parallelism parallelism;  // with ep (1 when absent)
  // Megatron-Core's expert tensor parallelism (expert_tensor_parallel_size, "etp"; 1 when absent). fsdpx
  // models the experts split over tp (torchtitan's etp = tp), or unsplit when tp is 1.
  int expert_tp = 1;
  std::int64_t micro_batch = 0;
  std::int64_t global_batch = 0;
  RecomputeMode recompute = RecomputeMode::none;
  // With recompute "full": the share p of blocks checkpointed, spread as fms-fsdp's selective_checkpointing
  // spreads them (case_plan.cpp); 1 = every block.
  double recompute_fraction = 1.0;
  bool compiled = false;
  // "fp8": the case's recipe as its framework runs it (case_fp8.cpp); nullopt for "bf16".
  std::optional<Fp8Settings> fp8;
  MeasuredRun measured;
  std::vector<std::string> uncertain;
  // The readings of inter_node_bw_gbit_per_gpu the source leaves open, from an `uncertain` entry
  // (case_uncertainty.h); the case is also simulated at both ends. nullopt when the figure is not in doubt.
  std::optional<BandwidthRange> inter_node_bw_range;
  // Set when the case could not be read: the one-line error naming the file and JSON path. Only id
  // (or "cases[i]"), source and framework are then filled, as far as they could be read.
  std::optional<std::string> malformed;
};

struct ValidationCaseFile {
  std::string file;
  std::vector<ValidationCase> cases;
};

// Strict reading: unknown keys, wrong types and bad enum strings are ConfigErrors "<file>: <path>: ...".
// A malformed case (or a repeated id) does not stop the file: it is kept with its error in `malformed`
// and reported on its own row; only a file whose top level is wrong throws.
ValidationCaseFile parse_validation_cases(const nlohmann::json& j, const std::string& file);
ValidationCaseFile load_validation_cases(const std::string& path);

// Why the simulator cannot model this case (malformed); nullopt when it can.
std::optional<std::string> validation_skip_reason(const ValidationCase& c);

// Shipped cluster config for a GPU name ("a100-sxm-40gb" -> "dgx-a100-40gb", ...).
std::string cluster_for_gpu(const std::string& gpu, const std::string& file, const std::string& path);

// What a framework does by default in bf16 training (modelling inputs of the framework, not per-case
// fits; see validation_case.cpp for the sources): its gradient-reduction dtype and attention kernel.
DType framework_reduce_dtype(const std::string& framework);
AttentionKernel framework_attention_kernel(const std::string& framework);
// The framework's kernel in the software era the source cites (first year in `source`).
std::optional<int> source_year(const std::string& source);
// Transformer Engine's cuDNN attention on GPUs whose file has its curves (Hopper), for Megatron-era stacks.
AttentionKernel case_attention_kernel(const ValidationCase& c, const GpuSpec& gpu);
// Dropout probability of the case's stack: 0.1 for Megatron-LM runs of the unfused era (its GPT defaults), else 0.
double case_dropout(const ValidationCase& c);
// The recompute mode a framework runs for the case format's "selective" (other values map as named).
RecomputeMode framework_recompute(const std::string& framework, RecomputeMode stated);
// Full recompute on `fraction` of the blocks, spread as fms-fsdp's selective_checkpointing spreads them.
void spread_recompute(std::vector<RecomputeMode>& blocks, double fraction);
// How the framework splits blocks over pipeline stages (case_plan.cpp has the sources): Megatron-LM
// and NeMo evenly, embedding and loss on top (weights 0, layers divisible by pp x vpp); torchtitan and the
// others counting the embedding and the head as one block each.
bool framework_even_stage_split(const std::string& framework);
StageAccounting framework_stage_accounting(const std::string& framework);
// Megatron-Core's accounting for `layers` blocks over `stages` virtual stages: none when they divide,
// else the embedding and/or loss counted as blocks (its recipes' options), else an uneven split (noted).
StageAccounting megatron_stage_accounting(int layers, int stages, std::vector<std::string>& notes);

// What a source's published peak-memory figure counts: everything on the device (nvidia-smi), or the
// PyTorch caching allocator's peak reserved bytes (no CUDA context, no NCCL-owned buffers).
enum class MemoryMetric { device_total, allocator_reserved };
MemoryMetric framework_memory_metric(const std::string& framework);

// The training stack of the case's framework; unknown frameworks get torchtitan's (noted).
Framework case_framework(const ValidationCase& c, std::vector<std::string>& notes);
// The version of that stack the case's source names (a cited release, or "pre-0.1.0" for torchtitan
// sources dated before 2025); empty when not stated or the stack has no versions (core/framework.h).
std::string case_framework_version(const ValidationCase& c, Framework f);

// The fp8 recipe of an fp8 case: its framework's (torchao tensorwise for torchtitan, Transformer Engine
// for Megatron-Bridge and llm-foundry) with what the case states in `uncertain` (the file's README: a
// torchtitan case says where it ran rowwise and where the FSDP float8 all-gather was on; a
// Megatron-Bridge case prints "FP8-CS" for current scaling).
Fp8Settings case_fp8_settings(const std::string& framework, const std::string& source,
                              const std::vector<std::string>& uncertain, int dp_shard);

// Summary group of a case: the framework ("llm-foundry", "nemo", ...).
std::string validation_source_key(const ValidationCase& c);

struct CasePlan {
  Plan plan;
  MemoryMetric memory_metric = MemoryMetric::device_total;
  std::vector<std::string> notes;  // assumptions the output must state (defaults used, ...)
};

// The plan a case describes; throws ConfigError naming the case when the plan is inconsistent.
CasePlan build_case_plan(const ValidationCase& c, const std::string& file);

}  // namespace fsdpx
