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
#include "core/expert_parallel.h"
#include "core/fp8.h"
#include "core/framework.h"
#include "core/lora.h"
#include "core/loss_scale.h"
#include "core/model_spec.h"
#include "core/pipeline.h"
#include "core/plan_settings.h"

namespace fsdpx {

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
  std::optional<Fp8Settings> fp8;  // fp8 linear GEMMs (core/fp8.h); absent: bf16 throughout
  OptimizerSettings optimizer;
  ReduceGrads reduce_grads = ReduceGrads::every_micro_batch;
  AttentionKernel attention_kernel = AttentionKernel::flash2;  // the training stack's kernel family
  // The stack whose costs the prediction assumes (core/framework.h) and whether it runs under
  // torch.compile (PyTorch stacks only).
  Framework framework = Framework::fsdpx;
  // The stack's version where its code differs in what fsdpx costs (core/framework.h
  // framework_versions); empty: not stated.
  std::string framework_version;
  bool compiled = false;
  // LoRA fine-tuning (core/lora.h): the base weights frozen, adapters trained; absent = full training.
  std::optional<LoraSettings> lora;
  // Mixture-of-experts routing assumptions (core/expert_parallel.h); written for MoE models only.
  MoeRouting moe_routing;
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
