// cost_models/estimate.h — the analytic estimate behind `fsdpx estimate`: per-GPU memory by category
// and a lower bound on step time from the compute, communication and memory models, with no overlap
// modelling (the simulator does that). The lower bound assumes perfect overlap of communication with
// compute: max(compute, communication). Leaves out pipeline parallelism (pp must be 1) and the order
// of ops, so no peak-of-a-timeline effects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/cluster_spec.h"
#include "core/model_spec.h"
#include "core/plan.h"
#include "cost_models/memory.h"

namespace fsdpx {

struct TrainingShape {
  int dp_replicate = 1;
  int dp_shard = 1;
  int tp = 1;
  int cp = 1;
  bool sequence_parallel = true;  // used when tp > 1
  ShardingMode mode = ShardingMode::zero3;
  std::int64_t micro_batch = 1;    // sequences per micro-batch per data-parallel rank
  std::int64_t seq = 2048;
  std::int64_t grad_accum = 1;     // micro-batches per optimizer step
  Recompute recompute = Recompute::none;
  PrecisionPolicy precision;
  std::int64_t blocks_per_unit = 1;  // FSDP wrapping granularity
  int prefetch = 1;                  // unsharded units in flight beside the current one
  // LoRA (core/lora.h): a frozen base (sharded, no gradients or optimizer state, no reduction) and
  // adapters every rank holds whole (cost_models/lora_memory.h, compute_lora.h).
  std::optional<LoraSettings> lora;
  // fp16 loss scaling (core/loss_scale.h): one unscale and inf-check pass over the rank's optimizer
  // gradients per step (cost_models/grad_scaling.h), counted in the compute time.
  bool loss_scale = false;
  // fp8 linear GEMMs (core/fp8.h), with their casts counted in the compute time and, with fp8
  // all-gather, the blocks' linear weights gathered at one byte.
  std::optional<Fp8Settings> fp8;

  int world_size() const { return dp_replicate * dp_shard * tp * cp; }
};

struct MemoryBreakdown {
  double params = 0, grads = 0, optimizer = 0, activations = 0, transient = 0, other = 0;
  double total() const { return params + grads + optimizer + activations + transient + other; }
};

struct Estimate {
  std::int64_t total_params = 0;
  std::int64_t active_params = 0;        // one token's parameters (cost_models/moe_params.h); dense: total
  // Non-empty for a mixture-of-experts or latent-attention model: what this estimate leaves out and why
  // (activations, transient and overhead memory, and every time figure are then 0 and not reported).
  std::string not_modelled;
  double params_per_gpu = 0;             // before data-parallel sharding (after TP)
  double adapter_params = 0;             // LoRA: trainable adapter parameters (every rank)
  MemoryBreakdown memory;                // per GPU, bytes
  double model_flops_per_token = 0;      // PaLM
  double hardware_flops_per_step = 0;    // per GPU, including recompute
  double compute_time_s = 0;             // per GPU per step, all kernels
  double unscale_time_s = 0;             // of which fp16 loss scaling's unscale pass (0 without)
  double dp_comm_time_s = 0;             // FSDP/ZeRO/DDP collectives per step
  double fp8_all_gather_saved_s = 0;     // of dp_comm_time_s: saved by fp8 all-gather against bf16
  double tp_cp_comm_time_s = 0;          // TP and CP collectives per step
  double step_time_lower_bound_s = 0;
  double tokens_per_step = 0;            // global
  double tokens_per_s_per_gpu_upper_bound = 0;
  double mfu_upper_bound = 0;            // at the lower-bound step time
};

// The plan's recompute mode in the memory model's terms.
Recompute recompute_of(RecomputeMode r);
// The estimate's view of a plan (its first block's recompute mode stands for all blocks).
TrainingShape training_shape_of(const Plan& p);

// Validates the shape against the cluster (degrees multiply to the world size, tp within a node,
// divisibility of heads by tp); throws ConfigError naming the option.
void check_training_shape(const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s);
// Dense models in full; mixture-of-experts and latent-attention models at tp = cp = 1 without LoRA or fp8:
// parameter counts, FLOPs per token and parameter/gradient/optimizer bytes (cost_models/estimate_moe.cpp),
// the rest named in not_modelled.
Estimate estimate(const ModelSpec& m, const ClusterSpec& c, const TrainingShape& s);

}  // namespace fsdpx
