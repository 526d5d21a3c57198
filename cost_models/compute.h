// cost_models/compute.h — FLOPs and HBM bytes of every kernel of one transformer block, the embedding
// and the LM head with its loss, for the forward, input-gradient and weight-gradient passes, at a
// micro-batch, sequence length and TP/CP degree; and their time on a GPU by a roofline with
// size-dependent efficiency. Attention is flash-style (no T×T matrix in memory; causal halving of its
// FLOPs; backward recomputes the scores). Elementwise work follows the training stack (LayerShape::stack:
// fused kernels, or eager PyTorch's chains with fp32 intermediates). Leaves out kernel launch gaps and
// fusion beyond what is listed per kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/attention_kernel.h"
#include "core/dtype.h"
#include "core/fp8.h"
#include "core/gpu_spec.h"
#include "core/model_spec.h"
#include "cost_models/stack_costs.h"

namespace fsdpx {

enum class Pass { forward, input_grad, weight_grad };

// The shape one rank computes on.
struct LayerShape {
  std::int64_t micro_batch = 1;  // sequences per micro-batch per data-parallel rank
  std::int64_t seq = 1;          // full sequence length (CP divides it)
  int tp = 1;
  int cp = 1;
  bool sequence_parallel = false;  // norms/dropout on seq/tp tokens when tp > 1
  DType act_dtype = DType::bf16;   // activations and compute inputs
  AttentionKernel attention_kernel = AttentionKernel::flash2;
  bool dropout = false;  // attention dropout (Plan::training.dropout > 0); costed on the unfused path only
  StackCosts stack;      // how the training stack implements norms, RoPE, SwiGLU, layouts and the loss
  // fp8 recipe of the blocks' linear GEMMs (core/fp8.h); nullopt: bf16. `fp8_fused_casts`: the casts run
  // as fused kernels (Transformer Engine, or torchao under torch.compile) rather than eager PyTorch ops.
  // `fp8_weight_casts_per_micro_batch`: Transformer Engine casts a weight once per step and reuses it
  // across micro-batches (1 / micro-batches); torchao casts it in every forward (1).
  std::optional<Fp8Settings> fp8;
  bool fp8_fused_casts = true;
  double fp8_weight_casts_per_micro_batch = 1;
};

// One kernel's work on one rank.
struct KernelWork {
  std::string name;   // "qkv", "attn_core", "attn_out", "mlp_up", "mlp_down", "norm", ...
  double flops = 0;
  double bytes = 0;   // HBM bytes read + written
  bool matmul = false;  // tensor-core work (efficiency by FLOPs) vs vector work
  // Fused attention kernels: the sequence length each query attends over; their tensor-core
  // efficiency follows GpuSpec::attention_efficiency by this length instead of the GEMM curve.
  double attention_seq = 0;
  bool attention_backward = false;  // uses GpuSpec::attention_backward_efficiency
  double attention_relative_speed = 1;  // kernel family vs FlashAttention-2 (core/attention_kernel.h)
  bool attention_cudnn = false;  // cuDNN's fused attention: GpuSpec::cudnn_attention_* curves
  // GEMMs: the smallest of m, n, k. Small dimensions fill tensor-core tiles and the K-loop pipeline
  // poorly, so efficiency also depends on it (GpuSpec::matmul_half_efficiency_dim).
  double min_dim = 0;
  // GEMMs: rows (tokens), output features and input features of the layer (the forward's m, n, k).
  double rows = 0, out_features = 0, in_features = 0;
  bool fp8 = false;  // runs at the GPU's fp8 peak (fp8 operands; cost_models/compute_fp8.cpp)
  // Kernels bound by shared memory (cost_models/attention_cuda_core.h, attention_tensor_core.h): 128-byte
  // wavefronts issued, one per SM per clock, a bound beside the FLOP and HBM ones; 0: not modelled.
  double shared_memory_wavefronts = 0;
};

std::vector<KernelWork> block_kernels(const ModelSpec& m, const LayerShape& s, Pass p);
// The attention core of a block's forward (softmax(QKᵀ)V: the fused kernel, or the unfused path's
// GEMMs, softmax and dropout), what Korthikanti's selective recompute re-runs.
bool is_attention_core(const KernelWork& k);
// Token (+ position) embedding lookup; its backward is a scatter-add into the table.
std::vector<KernelWork> embedding_kernels(const ModelSpec& m, const LayerShape& s, Pass p);
// Final norm, LM head GEMM, softmax + cross-entropy loss (fused, no full probabilities kept).
std::vector<KernelWork> head_kernels(const ModelSpec& m, const LayerShape& s, Pass p);
// AdamW over `local_params` fp32 shard elements (memory bound: param, grad, m, v read; param, m, v
// written; plus the low-precision copy when params are not fp32).
KernelWork optimizer_kernel(double local_params, DType param_dtype, DType grad_dtype);
// The optimizer step as a training stack runs it (stack_costs.h): AdamW fused or one pass per op,
// writing the low-precision copy only where the stack keeps one beside the fp32 shard (fsdpx, Megatron;
// FSDP casts at all-gather), preceded by gradient-norm clipping when `clip`.
std::vector<KernelWork> optimizer_step_kernels(double local_params, DType param_dtype, DType grad_dtype,
                                               const StackCosts& stack, bool weight_decay, bool clip);

// Share of a GEMM's executed work that is useful when its smallest dimension is d: d / (d + d_half),
// with d_half = GpuSpec::matmul_half_efficiency_dim (tile and wave quantisation and the K-loop prologue
// of each output tile: Anthony et al. 2024, arXiv:2401.14489 §IV). 1 when d is 0 (unknown).
double gemm_shape_factor(double min_dim, const GpuSpec& gpu);
// The work the GEMM's tiles execute: flops / gemm_shape_factor. A GEMM is timed as this work at the
// size-dependent efficiency of this work, eff_matmul(executed), so a GEMM never gets slower when one of
// its dimensions shrinks (its executed work shrinks, and work / eff_matmul(work) grows with work).
double gemm_executed_flops(double flops, double min_dim, const GpuSpec& gpu);

// Roofline time: max(flops / (peak · eff_matmul(flops)), bytes / (hbm_bw · eff_mem(bytes))).
// Matrix work runs at the peak of `compute_dtype` (attention at eff_attention(seq)); vector work at
// the GPU's vector peak; shared-memory wavefronts at shared_memory_wavefronts_per_s (the max of all three).
double shared_memory_wavefronts_per_s(const GpuSpec& gpu);
double kernel_time_s(const KernelWork& k, const GpuSpec& gpu, DType compute_dtype);
double kernels_time_s(const std::vector<KernelWork>& ks, const GpuSpec& gpu, DType compute_dtype);
double kernels_flops(const std::vector<KernelWork>& ks);

}  // namespace fsdpx
