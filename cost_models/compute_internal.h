// cost_models/compute_internal.h — helpers shared by the compute-model sources (not a public API):
// per-rank tensor sizes under TP/CP/SP, and constructors for a GEMM and for a memory-bound kernel.
// Leaves out everything about time; see compute.h for the roofline.
#pragma once

#include <string>
#include <vector>

#include "core/model_spec.h"
#include "cost_models/compute.h"

namespace fsdpx::compute_detail {

// Sizes one rank works on, in elements (doubles: TP/CP need not divide evenly in a what-if).
struct RankDims {
  double tokens = 0;       // b·s/c: tokens whose hidden state this rank computes
  double norm_tokens = 0;  // tokens seen by norms/residuals: tokens/t with sequence parallelism
  double seq = 0;          // s: keys each query attends to (all of its sequence, ring attention)
  double keys = 0;         // b·s: key/value rows this rank reads (its own and the ring's chunks)
  double cp = 1;           // context-parallel ranks sharing each sequence (ring steps per attention)
  double hidden = 0;
  double q_dim = 0;        // heads·head_dim / t (Megatron column-parallel Q)
  double kv_dim = 0;       // kv_heads·head_dim / t; one KV head at least (replicated when t > kv_heads)
  // V and the attention output: q_dim and kv_dim, except under latent attention (DeepSeek-V3), whose value
  // heads are v_head_dim wide and query/key heads qk_nope + qk_rope (compute_mla.cpp).
  double v_dim = 0;        // heads·v_head_dim / t: the attention output on this rank
  double v_kv_dim = 0;     // V's width as the model computes it (kv_dim, or v_dim under latent attention)
  double heads = 0;        // query heads on this rank
  double ffn = 0;          // ffn_hidden / t (column-parallel up/gate, row-parallel down)
  double vocab = 0;        // vocab / t (vocabulary-parallel embedding and LM head)
  double act_bytes = 0;    // bytes per activation element
  double attention_speed = 1;  // attention kernel family relative to FlashAttention-2
  bool fused_attention = true;  // false: materialised scores (AttentionKernel::unfused)
  bool cudnn_attention = false;  // cuDNN's fused attention (its own GPU curves)
  bool cuda_core_attention = false;  // fsdpx's CUDA-core kernel (attention_cuda_core.h)
  bool tensor_core_attention = false;  // fsdpx's tensor-core kernel (attention_tensor_core.h)
  bool attention_dropout = false;  // dropout on the probabilities (unfused path; fused kernels fuse it)
  StackCosts stack;                // the training stack's elementwise implementations
  // Width of K and V as attention reads them: q_dim when the stack expands them (repeat_kv).
  double attention_kv_dim() const { return stack.repeat_kv ? q_dim : kv_dim; }
  double attention_v_dim() const { return stack.repeat_kv ? v_dim : v_kv_dim; }
};

RankDims rank_dims(const ModelSpec& m, const LayerShape& s);

// PyTorch's ring attention around its per-chunk SDPA calls (ring_attention.cpp): the fp32 merge of the
// partial outputs after the forward's, the fp32 gradient accumulation after the backward's. Empty at
// cp = 1 or when the stack does not use it.
std::vector<KernelWork> ring_attention_kernels(const RankDims& d, bool backward);

// C[m×n] = A[m×k]·B[k×n]: 2·m·n·k FLOPs (one multiply and one add per FMA); reads A and B and writes
// C once at `elem_bytes`. The backward GEMMs of the same layer (dX = dY·Wᵀ, dW = Xᵀ·dY) touch the
// same three matrix sizes, so one constructor serves all three passes.
KernelWork gemm(std::string name, double m, double n, double k, double elem_bytes);

// A memory-bound kernel: `read_bytes` + `write_bytes` of HBM traffic and `flops` of vector work.
KernelWork vector_kernel(std::string name, double flops, double read_bytes, double write_bytes);

// Vector FLOPs per element of a norm (derived: operation count). RMSNorm: square, accumulate,
// scale by 1/rms, scale by weight = 4. LayerNorm: mean, subtract, square, accumulate, scale, weight,
// bias = 7. Backward costs about twice the forward.
double norm_flops_per_element(Arch a);

// A norm over `tokens`×hidden: forward reads x, writes y and fp32 per-token statistics (rstd, and
// the mean for LayerNorm); backward (dX) reads dY, x and the statistics, writes dX; the weight
// gradient is a column reduction of dY·x̂ (split from dX so that it can run in a separate
// weight-gradient pass, as zero-bubble schedules do; a fused kernel reads dY and x once).
KernelWork norm_kernel(std::string name, Arch a, double tokens, const RankDims& d, Pass p);

// The same norm as the training stack runs it: norm_kernel, or eager PyTorch's RMSNorm chain
// (compute_eager.cpp). LayerNorm is one kernel in every stack (F.layer_norm).
std::vector<KernelWork> stack_norm_kernels(const std::string& name, Arch a, double tokens, const RankDims& d, Pass p);
// RoPE on Q and K for the forward or the backward (llama only).
std::vector<KernelWork> stack_rope_kernels(const RankDims& d, bool backward);
// The MLP activation (SwiGLU as one kernel or as silu and a product; GELU, squared ReLU one kernel).
std::vector<KernelWork> stack_activation_kernels(const ModelSpec& m, const RankDims& d, bool backward);
// repeat_kv's expansion of K and V and the contiguous copy of SDPA's output (none unless the stack does
// them and, for repeat_kv, the model has fewer KV heads than query heads); the kernels that run before
// the attention core of that pass, or after it.
std::vector<KernelWork> attention_copy_kernels(const RankDims& d, bool backward, bool before_attention);

// The attention input projections of a block (the kernels between the attention norm and RoPE, for
// `pass`, in execution order) when they differ from fused or separate Q/K/V GEMMs: multi-head latent
// attention's down and up projections with their latent norms; Qwen3's per-head q/k RMSNorms (qk_norm)
// follow the Q/K/V GEMMs. Empty when the model has neither (compute_mla.cpp).
std::vector<KernelWork> mla_projection_kernels(const ModelSpec& m, const RankDims& d, Pass pass);
std::vector<KernelWork> qk_norm_kernels(const ModelSpec& m, const RankDims& d, Pass pass);
// RoPE under latent attention: only the qk_rope_head_dim part of each query head and the one shared rope key.
std::vector<KernelWork> mla_rope_kernels(const ModelSpec& m, const RankDims& d, bool backward);

// Residual add y = x + f(x) over `tokens`×hidden (forward), or the sum of the two gradient streams
// that meet at the block input (backward): read two tensors, write one.
KernelWork residual_kernel(std::string name, double tokens, const RankDims& d);

}  // namespace fsdpx::compute_detail
