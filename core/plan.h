// core/plan.h — the plan: the contract between planner, simulator and executor, self-contained
// (model, cluster, training settings, parallelism, FSDP units, prefetch, recompute, mixed precision,
// optimizer, pipeline stages and schedule, predicted metrics). Schema "fsdpx-plan/1"; loading is strict
// (unknown keys and inconsistent values are errors with a JSON path). Lives in core/ because the
// simulator, the planner and the executor all read it and dependencies point one way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/attention_kernel.h"
#include "core/cluster_spec.h"
#include "core/dtype.h"
#include "core/framework.h"
#include "core/lora.h"
#include "core/loss_scale.h"
#include "core/model_spec.h"
#include "core/pipeline.h"

namespace fsdpx {

// How data-parallel ranks hold parameters, gradients and optimizer state.
enum class DataParallel {
  fsdp_full_shard,        // ZeRO-3: params, grads, optimizer sharded over dp_shard
  fsdp_shard_grad_op,     // ZeRO-2: params kept unsharded between forward and backward
  hsdp,                   // full shard within dp_shard, replicate across dp_replicate
  ddp,                    // everything replicated, gradients all-reduced
  zero1,                  // optimizer state sharded, gradients reduce-scattered
  distributed_optimizer,  // Megatron's ZeRO-1 (same costs as zero1)
};
// Activation recomputation of one block. selective: Korthikanti et al. 2022 §5 (recompute the attention
// core, keep every linear-layer output); selective_op: torchtitan's op-level selective AC (save the
// outputs of mm and SDPA except every second mm of a block, recompute the rest:
// torchtitan/parallelisms/parallelize_llama.py, _apply_ac_to_transformer_block / _save_list).
enum class RecomputeMode { none, selective, full, selective_op };
enum class ReduceGrads { every_micro_batch, last_micro_batch };
// GPipe (Huang et al. 2019): every forward, then every backward. 1F1B: PipeDream-Flush (Narayanan et al.
// 2021 §2.2). interleaved_1f1b: the same with vpp model chunks per rank (§2.2.1, Megatron-LM's
// schedule). zero_bubble: ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism"): 1F1B with the
// backward split into input-gradient and weight-gradient passes, weight passes deferred into the bubble.
enum class PipelineSchedule { none, gpipe, one_f_one_b, interleaved_1f1b, zero_bubble };

const char* data_parallel_name(DataParallel d);
const char* recompute_mode_name(RecomputeMode r);
const char* reduce_grads_name(ReduceGrads r);
const char* pipeline_schedule_name(PipelineSchedule s);  // "none", "gpipe", "1f1b", "interleaved_1f1b", "zero_bubble"

// Modules in forward order: "embedding", "block.0" ... "block.<L-1>", "final_norm", "head".
struct PlanUnit {
  std::vector<std::string> modules;
  // 0: keep unsharded until backward (ZeRO-2); 1 (or dp_shard): reshard fully after forward (ZeRO-3);
  // g > 1: keep a copy sharded over g ranks for backward (FSDP2's int, like ZeRO++ hpZ).
  int reshard_after_forward = 1;
  // Virtual pipeline stage (model chunk) in [0, pp x vpp): runs on pipeline rank stage mod pp as its
  // chunk stage div pp (core/pipeline.h). 0 without pipeline parallelism.
  int stage = 0;
};

struct TrainingSettings {
  std::int64_t seq = 2048;
  std::int64_t micro_batch = 1;   // sequences per micro-batch per data-parallel rank
  std::int64_t global_batch = 8;  // sequences per optimizer step
  std::uint64_t seed = 0;
  // Dropout probability of the attention probabilities and of the attention-output, MLP-output and
  // embedding dropouts (GPT-3 / Megatron-LM style, one rate for all); 0 = none (Llama, llm.c's GPT-2).
  // Only its presence matters to the simulator: p > 0 keeps Korthikanti et al. 2022's dropout masks.
  double dropout = 0;
};

struct Parallelism {
  int dp_replicate = 1;
  int dp_shard = 1;
  int tp = 1;
  int cp = 1;
  bool sequence_parallel = false;
  int pp = 1;
  int vpp = 1;
  PipelineSchedule pp_schedule = PipelineSchedule::none;
  DataParallel data_parallel = DataParallel::fsdp_full_shard;

  int data_parallel_ranks() const { return dp_replicate * dp_shard; }
  int world_size() const { return dp_replicate * dp_shard * tp * cp * pp; }
};

struct Prefetch {
  int forward = 1;                   // units all-gathered ahead in forward
  int backward = 1;                  // units all-gathered ahead in backward
  int max_all_gathers_in_flight = 2;  // unsharded units alive beyond the one in use (FSDP1 rate limiter)
};

struct MixedPrecision {
  DType param = DType::bf16;
  DType reduce = DType::fp32;
  bool fp32_master_weights = true;
};

struct OptimizerSettings {
  double lr = 3e-4;
  double beta1 = 0.9, beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip_norm = 1.0;  // 0 disables clipping
  std::int64_t warmup_steps = 10;
  std::int64_t total_steps = 1000;  // cosine decay horizon
  double min_lr_ratio = 0.1;
};

// Metrics the simulator predicted for this plan (written by the planner; informative on load).
struct PredictedMetrics {
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double exposed_comm_s = 0;
  double peak_memory_bytes = 0;
};

// How `fsdpx plan` made the plan (absent from hand-written plans): the target it kept to and what the
// user allowed, so that an export or a report knows what the plan was made for.
struct PlannerRecord {
  std::string target = "fsdpx";          // "fsdpx" or "torchtitan@<release>" (planner/target.h)
  double memory_capacity_bytes = 0;      // per GPU
  double memory_margin_bytes = 0;        // kept free: the plan's peak is within capacity - margin
  double throughput_tolerance = 0;       // plans this close to the fastest counted as equally fast
  bool allow_bf16_reduce = false;        // whether bf16 gradient reduction was allowed
};

struct Plan {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSettings training;
  Parallelism parallelism;
  std::vector<PlanUnit> units;
  Prefetch prefetch;
  std::vector<RecomputeMode> recompute;  // one per block
  MixedPrecision precision;
  std::optional<LossScaleSettings> loss_scale;  // fp16 only (core/loss_scale.h); absent: no loss scaling
  OptimizerSettings optimizer;
  ReduceGrads reduce_grads = ReduceGrads::every_micro_batch;
  AttentionKernel attention_kernel = AttentionKernel::flash2;  // the training stack's kernel family
  // The stack whose costs the prediction assumes (core/framework.h) and whether it runs under
  // torch.compile (PyTorch stacks only).
  Framework framework = Framework::fsdpx;
  bool compiled = false;
  // LoRA fine-tuning (core/lora.h): the base weights frozen, adapters trained; absent = full training.
  std::optional<LoraSettings> lora;
  std::optional<PredictedMetrics> predicted;
  std::optional<PlannerRecord> planner;
  std::string notes;  // free text (why the planner chose this plan); empty = not written

  // Micro-batches per step: gradient accumulation, and under pipeline parallelism the micro-batches
  // every stage runs through the pipeline (written as training.micro_batches when pp > 1).
  std::int64_t grad_accum() const {
    return training.global_batch / (training.micro_batch * parallelism.data_parallel_ranks());
  }
};

// Strict load; throws ConfigError "<file>: <path>: <what>". Checks consistency: degrees multiply to the
// cluster's world size, units cover every module once and in order, one recompute entry per block,
// global batch divisible by micro_batch x data-parallel ranks, tp within a node and dividing heads.
Plan parse_plan(const nlohmann::json& j, const std::string& file);
Plan load_plan(const std::string& path);
nlohmann::json plan_to_json(const Plan& p);
// The same checks as parse_plan, for plans built in code; `file` names the origin in messages.
void validate_plan(const Plan& p, const std::string& file);

// Module names in forward order for a model.
std::vector<std::string> module_names(const ModelSpec& m);

// A plan with FSDP2/torchtitan defaults: embedding alone, one unit per `blocks_per_unit` blocks,
// final norm + head together (with the embedding when tied), reshard after forward except the last
// unit, prefetch 1/1, bf16 params and fp32 reduce; on a host-threads cluster (`cpu`, the CPU reference
// backend) fp32 params and the unfused attention kernel, which is what that backend runs. With pp > 1
// the blocks are split over the pp x vpp virtual stages by balance_stage_blocks(accounting) (units never
// cross a stage; a tied embedding stays alone on stage 0, its copy lives with the head), parameters stay
// unsharded across micro-batches and gradients are reduced after the last one (torchtitan under PP).
Plan default_plan(const ModelSpec& m, const ClusterSpec& c, const TrainingSettings& t, const Parallelism& par,
                  int blocks_per_unit, RecomputeMode recompute, StageAccounting accounting = {1, 1});

}  // namespace fsdpx
