// core/backend_capabilities.h — what each of fsdpx's executor backends runs, as data: one row per
// backend (parallelism axes, compute and reduction dtypes, attention kernels and their head sizes, pipeline
// schedules, LoRA, dropout). The executor refuses a plan outside its backend's row
// (executor/session/runtime_program_from_plan.cpp) and the planner searches inside it
// (planner/target.cpp), both through capability_gaps, so they cannot disagree. Adding a backend is one
// row here. Leaves out limits that follow from the model's shape (even tensor-parallel splits) and unit
// layout (tied embeddings), which both read from the plan the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/attention_kernel.h"
#include "core/dtype.h"
#include "core/executor_device.h"
#include "core/plan.h"

namespace fsdpx {

// One attention kernel a backend runs, the head sizes it takes (empty: any), and whether it has a
// context-parallel variant (cp > 1).
struct AttentionKernelSupport {
  AttentionKernel kernel = AttentionKernel::unfused;
  std::vector<std::int64_t> head_dims;
  bool context_parallel = true;
};

struct BackendCapabilities {
  ExecutorDevice device = ExecutorDevice::cpu;
  const char* name = "";                 // "CPU", "CUDA": in messages
  std::vector<DType> param_dtypes;       // what the plan's param_dtype may say
  const char* param_note = "";           // how it computes them (messages)
  std::vector<DType> reduce_dtypes;      // gradient reduction dtypes
  // The attention kernels it runs, by the plan's attention_kernel; the first that takes the model's head
  // size is the one fsdpx's planner records for this backend (planner/target.h target_attention_kernel),
  // so that its prediction is costed with the kernel that will run.
  std::vector<AttentionKernelSupport> attention_kernels;
  const char* attention_note = "";
  bool tensor_parallel = false, context_parallel = false;
  // ep > 1 (core/expert_parallel.h): the dispatch/combine all-to-alls and experts sharded over their own
  // FSDP group. torchtitan >= 0.2 (expert_parallel_degree) and Megatron-Core (expert_model_parallel_size)
  // run it; so do fsdpx's CPU and CUDA backends (issue 30).
  bool expert_parallel = false;
  // Trains mixture-of-experts blocks (at ep 1 unless expert_parallel): Mixtral's kind (a softmax router
  // over every expert, top-k renormalised or not, the load-balancing loss) and DeepSeek-V3's (sigmoid
  // scores, correction bias, group-limited top-k, routed scaling, shared experts, the sequence-wise balance
  // loss), dropless SwiGLU experts; without tp, cp, pp, LoRA or fp8 on them. The CPU's
  // (executor/model/moe_mlp.h), and CUDA's (on the device: executor/cuda_backend/cuda_moe_mlp.h).
  bool moe = false;
  // Trains DeepSeek-V3's multi-head latent attention, YaRN included (without tp, cp, pp, LoRA or fp8): the CPU's
  // (executor/model/mla_attention.h), and CUDA's (on the device: executor/cuda_backend/cuda_mla_attention.h).
  bool mla = false;
  // Under tp > 1 (or cp > 1: fp16 and gpt), what a backend's tensor- and context-parallel paths also run:
  // sequence parallelism, fp16 parameters (the activations' sums), linear biases and learned positions
  // (gpt), kv_heads < tp (Megatron's replicated KV heads). The CPU runs them all; the CUDA paths not yet.
  bool tp_sequence_parallel = true, tp_fp16 = true, tp_gpt = true, tp_grouped_kv = true;
  bool pipeline_with_model_parallel = false;  // pp > 1 together with tp or cp > 1
  std::vector<PipelineSchedule> pipeline_schedules;
  bool lora = false;
  bool dropout = false;  // attention/MLP/embedding dropout and LoRA's adapter dropout
  std::vector<Fp8Scaling> fp8_scalings;  // fp8 recipes it trains with (core/fp8.h); empty: none
  // With fp8: FSDP's fp8 all-gather, tp > 1 (a sharded weight's tensorwise amax needs an all-reduce), LoRA.
  bool fp8_all_gather = false, fp8_tensor_parallel = false, fp8_lora = false;
};

// Every backend, in ExecutorDevice order; backend_capabilities(d) is its row.
const std::vector<BackendCapabilities>& all_backend_capabilities();
const BackendCapabilities& backend_capabilities(ExecutorDevice d);
// The backend a cluster's plans run on: the `cpu` cluster's host threads, else CUDA.
ExecutorDevice cluster_device(const ClusterSpec& c);

// One way a plan leaves a backend's row: the plan's JSON path and why ("the CUDA runtime ...").
struct CapabilityGap {
  std::string path;  // "/parallelism/tp"
  std::string what;
  // The planner chooses this setting (parallelism axes, schedule, reduction dtype, attention kernel), so
  // its fsdpx target keeps to the row; the others (param dtype, head size, dropout, LoRA) are the
  // request's, which only the executor refuses.
  bool searched = false;
};
// Why `caps` does not train the mixture-of-experts model `m` (nullopt: it does, or `m` is dense): the
// backend trains no MoE blocks, or the model's routing or attention goes beyond what its MoE blocks run
// (latent attention on a backend whose row has no mla).
std::optional<std::string> untrained_moe_reason(const ModelSpec& m, const BackendCapabilities& caps);

// Every gap of `plan` on `caps`, in a fixed order; empty when the backend runs it.
std::vector<CapabilityGap> capability_gaps(const Plan& plan, const BackendCapabilities& caps);

}  // namespace fsdpx
