// cost_models/compute.cpp — shared kernel constructors (GEMM, norm, residual), the AdamW optimizer
// kernel and the roofline that turns a kernel's FLOPs and bytes into time on a GPU. The per-layer
// inventories live in compute_block.cpp (transformer block) and compute_head.cpp (embedding, head).
// Leaves out launch overhead, wave quantisation and caches (every byte listed goes to HBM).
#include "cost_models/compute.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "core/errors.h"
#include "cost_models/compute_internal.h"

namespace fsdpx {
namespace compute_detail {

RankDims rank_dims(const ModelSpec& m, const LayerShape& s) {
  FSDP_CHECK(s.micro_batch > 0 && s.seq > 0 && s.tp > 0 && s.cp > 0,
             "LayerShape: micro_batch, seq, tp and cp must be positive");
  FSDP_CHECK(m.hidden > 0 && m.heads > 0 && m.kv_heads > 0 && m.head_dim > 0 && m.ffn_hidden > 0 &&
                 m.vocab > 0,
             "ModelSpec: non-positive dimension");
  const double t = s.tp;
  RankDims d;
  d.tokens = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq) / s.cp;
  // Sequence parallelism (Korthikanti et al. 2022, §4.2.2) splits the norm and residual regions
  // along the sequence over the TP group; without it every TP rank repeats them on all tokens.
  d.norm_tokens = (s.sequence_parallel && s.tp > 1) ? d.tokens / t : d.tokens;
  d.seq = static_cast<double>(s.seq);
  d.keys = static_cast<double>(s.micro_batch) * d.seq;
  d.cp = static_cast<double>(s.cp);
  d.hidden = static_cast<double>(m.hidden);
  d.heads = static_cast<double>(m.heads) / t;
  d.q_dim = static_cast<double>(m.q_dim()) / t;
  // Megatron replicates KV heads when tp exceeds the number of query groups, so a rank holds one KV
  // head at least (megatron/core/transformer/attention.py, num_query_groups_per_partition).
  d.kv_dim = std::max(static_cast<double>(m.kv_heads) / t, 1.0) * static_cast<double>(m.head_dim);
  d.v_dim = m.is_mla() ? static_cast<double>(m.heads * m.mla.v_head_dim) / t : d.q_dim;
  d.v_kv_dim = m.is_mla() ? d.v_dim : d.kv_dim;
  d.ffn = static_cast<double>(m.ffn_hidden) / t;
  d.vocab = static_cast<double>(m.vocab) / t;
  d.act_bytes = dtype_bytes(s.act_dtype);
  d.attention_speed = attention_kernel_relative_speed(s.attention_kernel);
  d.fused_attention = attention_kernel_is_fused(s.attention_kernel);
  d.cudnn_attention = s.attention_kernel == AttentionKernel::cudnn;
  d.cuda_core_attention = s.attention_kernel == AttentionKernel::cuda_core;
  d.tensor_core_attention = s.attention_kernel == AttentionKernel::tensor_core;
  d.attention_dropout = s.dropout;
  d.stack = s.stack;
  return d;
}

KernelWork gemm(std::string name, double m, double n, double k, double elem_bytes) {
  KernelWork w;
  w.name = std::move(name);
  w.flops = 2.0 * m * n * k;
  w.bytes = (m * k + k * n + m * n) * elem_bytes;
  w.matmul = true;
  w.min_dim = std::min({m, n, k});
  w.rows = m;
  w.out_features = n;
  w.in_features = k;
  return w;
}

KernelWork vector_kernel(std::string name, double flops, double read_bytes, double write_bytes) {
  KernelWork w;
  w.name = std::move(name);
  w.flops = flops;
  w.bytes = read_bytes + write_bytes;
  w.matmul = false;
  return w;
}

double norm_flops_per_element(Arch a) { return a == Arch::llama ? 4.0 : 7.0; }

KernelWork norm_kernel(std::string name, Arch a, double tokens, const RankDims& d, Pass p) {
  constexpr double kStatBytes = 4;  // fp32 statistics per token and statistic
  const double stats = (a == Arch::llama ? 1.0 : 2.0) * tokens * kStatBytes;  // rstd (+ mean)
  const double weights = (a == Arch::llama ? 1.0 : 2.0) * d.hidden * d.act_bytes;
  const double x = tokens * d.hidden * d.act_bytes;  // one token×hidden tensor
  const double fpe = norm_flops_per_element(a);
  switch (p) {
    case Pass::forward:
      return vector_kernel(std::move(name), fpe * tokens * d.hidden, x + weights, x + stats);
    case Pass::input_grad:  // reads dY, x, weight, statistics; writes dX
      return vector_kernel(std::move(name), 2 * fpe * tokens * d.hidden, 2 * x + weights + stats, x);
    case Pass::weight_grad:  // reads dY, x, statistics; writes the weight (and bias) gradient
      return vector_kernel(std::move(name), 2.0 * tokens * d.hidden, 2 * x + stats, weights);
  }
  return {};
}

KernelWork residual_kernel(std::string name, double tokens, const RankDims& d) {
  const double x = tokens * d.hidden * d.act_bytes;
  return vector_kernel(std::move(name), tokens * d.hidden, 2 * x, x);
}

}  // namespace compute_detail

KernelWork optimizer_kernel(double local_params, DType param_dtype, DType grad_dtype) {
  FSDP_CHECK(local_params >= 0, "optimizer_kernel: negative parameter count");
  constexpr double kFp32 = 4;
  // AdamW (Loshchilov & Hutter 2019) over fp32 master weights, as torch.optim.AdamW's fused/foreach
  // path runs it: read param, grad, m, v; write param, m, v (ZeRO's 12 bytes of fp32 state,
  // Rajbhandari et al. SC20 §3.1, plus the gradient), and the low-precision copy of the updated
  // parameter when the model computes in another dtype.
  const double read_per_param = 3 * kFp32 + dtype_bytes(grad_dtype);
  double write_per_param = 3 * kFp32;
  if (param_dtype != DType::fp32) write_per_param += dtype_bytes(param_dtype);
  // About 12 vector FLOPs per element (derived: 3 for m, 4 for v, 5 for the bias-corrected update
  // with weight decay; sqrt and divide counted once each).
  constexpr double kFlopsPerParam = 12;
  return compute_detail::vector_kernel("adamw", kFlopsPerParam * local_params,
                                       read_per_param * local_params, write_per_param * local_params);
}

std::vector<KernelWork> optimizer_step_kernels(double local_params, DType param_dtype, DType grad_dtype,
                                               const StackCosts& stack, bool weight_decay, bool clip) {
  FSDP_CHECK(local_params >= 0, "optimizer_step_kernels: negative parameter count");
  const double grad = dtype_bytes(grad_dtype);
  const bool keeps_copy = stack.fsdp == FsdpImpl::flat && param_dtype != DType::fp32;
  const double copy = keeps_copy ? dtype_bytes(param_dtype) : 0;
  std::vector<KernelWork> ks;
  if (clip)
    ks.push_back(compute_detail::vector_kernel("clip_grad_norm", 2 * local_params, 0,
                                               clip_bytes_per_param(stack.optimizer, grad) * local_params));
  constexpr double kFlopsPerParam = 12;  // as optimizer_kernel
  ks.push_back(compute_detail::vector_kernel(
      "adamw", kFlopsPerParam * local_params, 0,
      optimizer_bytes_per_param(stack.optimizer, grad, copy, weight_decay) * local_params));
  return ks;
}

double gemm_shape_factor(double min_dim, const GpuSpec& gpu) {
  if (min_dim <= 0 || gpu.matmul_half_efficiency_dim <= 0) return 1.0;
  return min_dim / (min_dim + gpu.matmul_half_efficiency_dim);
}

double gemm_executed_flops(double flops, double min_dim, const GpuSpec& gpu) {
  return flops / gemm_shape_factor(min_dim, gpu);
}

namespace {

// The efficiency curves are read at work sizes of the compute dtype; an fp8 GEMM is read at the work a
// `compute_dtype` GEMM does in the same time (flops x peak(compute) / peak(fp8)): the curve models the
// fixed per-GEMM costs (launch, prologue, tail wave), which take a time, not a number of FLOPs.
// Assumption: no published achievable-fp8 curve; the bf16 fractions of peak apply to fp8 (issue 33).
double matmul_size_scale(const GpuSpec& gpu, DType gemm_dtype, DType compute_dtype) {
  if (gemm_dtype == compute_dtype) return 1.0;
  return gpu.peak(compute_dtype) / gpu.peak(gemm_dtype);
}

// GEMMs at the sustained, power-saturated rate rather than the boost burst. The Maximum Achievable Matmul
// FLOPS (MAMF) of matmul_efficiency's top is a short burst that draws far below the rated power, so the SM
// clock holds its boost; a training step keeps the tensor cores busy at the rated power and the clock
// settles lower. ml-engineering's Maximum Sustainable Matmul FLOPS (MSMF) is that rate, "the number that
// matches sustained training throughput" (stas00/ml-engineering branch fast-mamf @082816f,
// compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison table": H200 SXM bf16 708.5
// TFLOP/s at ~693 W and 1,465 MHz against a MAMF burst of 841.9 at 1,980 MHz). The size curve keeps its
// shape, scaled to the sustained maximum; GPUs without a measured MSMF keep the burst curve.
double sustained_scale(const GpuSpec& gpu) {
  if (gpu.matmul_sustained_efficiency <= 0 || gpu.matmul_efficiency.points.empty()) return 1.0;
  return gpu.matmul_sustained_efficiency / gpu.matmul_efficiency.points.back().second;
}

// FP8 GEMMs reach a smaller share of their doubled peak than bf16 GEMMs of theirs: the Maximum Achievable
// Matmul FLOPS table (stas00/ml-engineering compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS
// comparison table", BF16 and FP8 float8_e4m3fn rows) gives H100 SXM 80.3% vs 70.9%, B200 77.6% vs 76.3%.
// The size curve keeps its shape and is scaled to the fp8 maximum, the sustained one where it is measured
// (MSMF, above), else the burst one times the bf16 sustained ratio (the clock is the same); without a
// measured fp8 maximum the bf16 fractions apply (the assumption of issue 33).
double fp8_efficiency_scale(const GpuSpec& gpu) {
  if (gpu.matmul_efficiency.points.empty()) return 1.0;
  const double top = gpu.matmul_efficiency.points.back().second;
  if (gpu.fp8_matmul_sustained_efficiency > 0) return gpu.fp8_matmul_sustained_efficiency / top;
  const double burst = gpu.fp8_matmul_max_efficiency > 0 ? gpu.fp8_matmul_max_efficiency / top : 1.0;
  return burst * sustained_scale(gpu);
}

// The curve a fused attention kernel runs at: cuDNN's own where the plan runs cuDNN and the GPU file has it.
const EfficiencyCurve& attention_curve(const KernelWork& k, const GpuSpec& gpu) {
  if (k.attention_cudnn) {
    FSDP_CHECK(!gpu.cudnn_attention_efficiency.points.empty(), "kernel_time_s: the GPU has no cuDNN attention curve");
    return k.attention_backward ? gpu.cudnn_attention_backward_efficiency : gpu.cudnn_attention_efficiency;
  }
  return k.attention_backward ? gpu.attention_backward_efficiency : gpu.attention_efficiency;
}

// The kernel's own measured curve where a calibration gave it one (GpuSpec::*_by_kernel), else its class's.
const EfficiencyCurve& named_curve(const std::map<std::string, EfficiencyCurve>& by_kernel, const std::string& name,
                                   const EfficiencyCurve& class_curve) {
  if (by_kernel.empty()) return class_curve;
  const auto it = by_kernel.find(name);
  return it == by_kernel.end() ? class_curve : it->second;
}

}  // namespace

// One wavefront per SM per clock; the clock is the vector peak over the SM's FP32 lanes: 128 FP32 CUDA
// cores per SM, 2 FLOPs per FMA (NVIDIA H100 Tensor Core GPU Architecture whitepaper, "H100 SM
// architecture": 66.9 TFLOP/s FP32 = 132 SMs x 128 x 2 x 1.98 GHz on H100 SXM5). Hopper's, the only
// architecture fsdpx's CUDA build targets (sm_90); GA100 SMs have 64 lanes, where this doubles the time.
double shared_memory_wavefronts_per_s(const GpuSpec& gpu) {
  constexpr double kFp32FlopsPerSmClock = 2 * 128;
  return gpu.vector_flops_per_s * gpu.clock_factor() / kFp32FlopsPerSmClock;
}

double kernel_time_s(const KernelWork& k, const GpuSpec& gpu, DType compute_dtype) {
  double time_s = 0;
  if (k.shared_memory_wavefronts > 0) {
    FSDP_CHECK(gpu.vector_flops_per_s > 0, "kernel_time_s: GPU has no vector FLOP/s");
    time_s = k.shared_memory_wavefronts / shared_memory_wavefronts_per_s(gpu);
  }
  if (k.flops > 0) {
    if (k.matmul && k.attention_seq > 0) {
      const double eff =
          named_curve(gpu.attention_by_kernel, k.name, attention_curve(k, gpu)).at(k.attention_seq) *
          k.attention_relative_speed;
      FSDP_CHECK(eff > 0, "kernel_time_s: attention efficiency must be positive");
      time_s = std::max(time_s, k.flops / (gpu.peak(compute_dtype) * gpu.clock_factor() * eff));
    } else if (k.matmul) {
      const double executed = gemm_executed_flops(k.flops, k.min_dim, gpu);
      const DType dt = k.fp8 ? DType::fp8 : compute_dtype;
      const double eff = named_curve(gpu.matmul_by_kernel, k.name, gpu.matmul_efficiency)
                             .at(executed * matmul_size_scale(gpu, dt, compute_dtype)) *
                         (k.fp8 ? fp8_efficiency_scale(gpu) : sustained_scale(gpu));
      FSDP_CHECK(eff > 0, "kernel_time_s: matmul efficiency must be positive");
      time_s = std::max(time_s, executed / (gpu.peak(dt) * gpu.clock_factor() * eff));
    } else {
      FSDP_CHECK(gpu.vector_flops_per_s > 0, "kernel_time_s: GPU has no vector FLOP/s");
      time_s = std::max(time_s, k.flops / (gpu.vector_flops_per_s * gpu.clock_factor()));
    }
  }
  if (k.bytes > 0) {
    const double eff = named_curve(gpu.memory_by_kernel, k.name, gpu.memory_efficiency).at(k.bytes);
    FSDP_CHECK(eff > 0 && gpu.hbm_bw_bytes_per_s > 0, "kernel_time_s: HBM bandwidth must be positive");
    // Roofline (Williams et al. 2009): a kernel is bound by the slower of compute and memory.
    time_s = std::max(time_s, k.bytes / (gpu.hbm_bw_bytes_per_s * eff));
  }
  return time_s;
}

double kernels_time_s(const std::vector<KernelWork>& ks, const GpuSpec& gpu, DType compute_dtype) {
  double time_s = 0;
  for (const KernelWork& k : ks) time_s += kernel_time_s(k, gpu, compute_dtype);
  return time_s;
}

double kernels_flops(const std::vector<KernelWork>& ks) {
  double flops = 0;
  for (const KernelWork& k : ks) flops += k.flops;
  return flops;
}

}  // namespace fsdpx
