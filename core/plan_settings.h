// core/plan_settings.h — the settings a plan is made of (data-parallel mode, recompute, pipeline schedule,
// units, training, parallelism, prefetch, mixed precision, optimizer), apart from the plan itself
// (core/plan.h), so that an interpreter can hold the run's settings without the plan: the executor
// reads them from its run settings (executor/runtime/runtime_program.h). Leaves out parsing and
// validation (core/plan.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

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
  // Expert parallelism: the routed experts of every MoE block split over ep ranks folded onto the
  // dp_shard x cp ranks (torchtitan's etp = tp case; core/expert_parallel.h). 1: every rank holds all.
  int ep = 1;
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

}  // namespace fsdpx
