// cost_models/compute_block.cpp — the kernels of one pre-norm transformer block on one rank, per
// pass: norms, Q/K/V, RoPE (llama), flash attention (or fsdpx's CUDA-core kernel), output projection, residual adds, MLP (SwiGLU,
// GELU or squared ReLU) with Megatron tensor parallelism, sequence parallelism and ring-style context
// parallelism. Leaves out dropout (Llama and llm.c's GPT-2 train without it), bias-gradient
// reductions (fused into the dW GEMM epilogue) and the TP/SP/CP communication (communication.h).
#include <utility>

#include "core/errors.h"
#include "cost_models/attention_cuda_core.h"
#include "cost_models/attention_tensor_core.h"
#include "cost_models/compute.h"
#include "cost_models/compute_fp8.h"
#include "cost_models/compute_internal.h"

namespace fsdpx {
namespace {

using compute_detail::attention_copy_kernels;
using compute_detail::gemm;
using compute_detail::stack_activation_kernels;
using compute_detail::stack_norm_kernels;
using compute_detail::stack_rope_kernels;
using compute_detail::RankDims;
using compute_detail::residual_kernel;
using compute_detail::vector_kernel;

void append(std::vector<KernelWork>& to, std::vector<KernelWork> from) {
  for (KernelWork& k : from) to.push_back(std::move(k));
}

// Output columns of the first MLP GEMM: gate and up fused for SwiGLU, up alone otherwise.
double mlp_up_cols(const ModelSpec& m, const RankDims& d) {
  return (m.ffn_kind == FfnKind::swiglu ? 2.0 : 1.0) * d.ffn;
}

// Flash attention forward FLOPs on one rank: S = QKᵀ is 2·queries·keys·q_dim and O = PV
// 2·queries·keys·v_dim (v_dim = q_dim but under latent attention), over b·s/c local queries and all s
// keys of their sequences (ring attention passes the K/V chunks around). The causal mask zeroes half of S, which flash kernels skip (Megatron's transformer_flops
// counts "q·s/2" for the same reason); with CP we assume load-balanced (zig-zag) chunks so every rank
// does half of its queries×keys work.
double attention_forward_flops(const RankDims& d) {
  constexpr double kCausalFraction = 0.5;
  return 2.0 * d.tokens * d.seq * (d.q_dim + d.v_dim) * kCausalFraction;
}

// Flash attention forward: reads Q, K, V, writes O and fp32 log-sum-exp per (query, head); the
// T×T score matrix stays in SRAM (Dao et al. 2022, FlashAttention, §3.1). K/V re-reads per query
// tile are left out.
KernelWork attention_forward(const RankDims& d) {
  constexpr double kLseBytes = 4;
  KernelWork w;
  w.name = "attn_core";
  w.flops = attention_forward_flops(d);
  w.bytes = (d.tokens * (d.q_dim + d.v_dim) + d.keys * (d.attention_kv_dim() + d.attention_v_dim())) * d.act_bytes +
            d.tokens * d.heads * kLseBytes;
  w.matmul = true;  // flash kernels run both products on tensor cores
  w.attention_seq = d.seq;
  w.attention_relative_speed = d.attention_speed;
  w.attention_cudnn = d.cudnn_attention;
  return w;
}

// Flash attention backward: 5 matrix products where the forward has 2 (recompute S = QKᵀ, then
// dV = PᵀdO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀQ), so 2.5× the forward FLOPs (Dao 2023,
// FlashAttention-2, §3.1.2 and Algorithm 2); under latent attention three products are q_dim wide and
// two v_dim wide, (3 q_dim + 2 v_dim) / (q_dim + v_dim) times the forward. Reads Q, K, V, O, dO and fp32 LSE and D = rowsum(dO∘O);
// writes dQ, dK, dV.
KernelWork attention_backward(const RankDims& d) {
  constexpr double kBackwardToForward = 2.5;
  constexpr double kStatBytes = 4;
  const double ratio =
      d.v_dim == d.q_dim ? kBackwardToForward : (3 * d.q_dim + 2 * d.v_dim) / (d.q_dim + d.v_dim);
  KernelWork w;
  w.name = "attn_core_bwd";
  w.flops = ratio * attention_forward_flops(d);
  w.bytes = (2 * d.tokens * (d.q_dim + d.v_dim) + 2 * d.keys * (d.attention_kv_dim() + d.attention_v_dim())) *
                d.act_bytes +
            2 * d.tokens * d.heads * kStatBytes;
  w.matmul = true;
  w.attention_seq = d.seq;
  w.attention_backward = true;
  w.attention_relative_speed = d.attention_speed;
  w.attention_cudnn = d.cudnn_attention;
  return w;
}

// Unfused attention (core/attention_kernel.h `unfused`, Megatron-LM 2021 CoreAttention): elements of
// the materialised score tensor on this rank, b·(a/t)·(s/c)·s; written at the activation dtype.
double score_elements(const RankDims& d) { return d.tokens * d.heads * d.seq; }

// Forward: S = QKᵀ as a batched GEMM over all s keys (baddbmm computes the full square; the causal
// mask is applied afterwards, so no FLOPs are skipped), the fused scale-mask-softmax (Narayanan et al.
// 2021 §4.3; reads S, writes P; ~5 FLOPs per element: scale, mask, max, exp, divide), attention
// with dropout (Plan::training.dropout > 0; Megatron's GPT default attention_dropout 0.1) dropout on P
// (reads P, writes P' and a 1-byte mask), and O = P'V (O = PV without dropout). Per-head GEMMs are s×s×head_dim, so head_dim is their smallest dimension.
std::vector<KernelWork> unfused_attention_forward(const ModelSpec& m, const RankDims& d) {
  constexpr double kMaskBytes = 1;
  const double e = d.act_bytes, sc = score_elements(d), head_dim = static_cast<double>(m.head_dim);
  KernelWork qk = gemm("attn_scores", d.tokens, d.seq, d.q_dim, e);
  qk.bytes = (d.tokens * d.q_dim + d.keys * d.kv_dim + sc) * e;
  qk.min_dim = head_dim;
  KernelWork pv = gemm("attn_pv", d.tokens, d.v_dim, d.seq, e);
  pv.bytes = (sc + d.keys * d.v_kv_dim + d.tokens * d.v_dim) * e;
  pv.min_dim = head_dim;
  std::vector<KernelWork> ks{qk, vector_kernel("attn_softmax", 5 * sc, sc * e, sc * e)};
  if (d.attention_dropout) ks.push_back(vector_kernel("attn_dropout", 2 * sc, sc * e, sc * (e + kMaskBytes)));
  ks.push_back(pv);
  return ks;
}

// Backward: dV = P'ᵀdO and dP' = dO·Vᵀ (two batched GEMMs), with dropout its backward (reads dP' and
// the mask, writes dP), softmax backward dS = P∘(dP − rowsum(dP∘P)) (reads P and dP, writes dS; ~4 FLOPs per
// element), then dQ = dS·K and dK = dSᵀQ.
std::vector<KernelWork> unfused_attention_backward(const ModelSpec& m, const RankDims& d) {
  constexpr double kMaskBytes = 1;
  const double e = d.act_bytes, sc = score_elements(d), head_dim = static_cast<double>(m.head_dim);
  KernelWork pv = gemm("attn_pv_bwd", d.tokens, d.v_dim, d.seq, e);
  pv.flops *= 2;
  pv.bytes = (2 * sc + 2 * d.tokens * d.v_dim + 2 * d.keys * d.v_kv_dim) * e;  // reads P', dO, V; writes dP', dV
  pv.min_dim = head_dim;
  KernelWork qk = gemm("attn_scores_bwd", d.tokens, d.seq, d.q_dim, e);
  qk.flops *= 2;
  qk.bytes = (sc + 2 * d.tokens * d.q_dim + 2 * d.keys * d.kv_dim) * e;  // reads dS, Q, K; writes dQ, dK
  qk.min_dim = head_dim;
  std::vector<KernelWork> ks{pv};
  if (d.attention_dropout) ks.push_back(vector_kernel("attn_dropout_bwd", sc, sc * (e + kMaskBytes), sc * e));
  ks.push_back(vector_kernel("attn_softmax_bwd", 4 * sc, 2 * sc * e, sc * e));
  ks.push_back(qk);
  return ks;
}

// The projections out of a norm, as one fused GEMM (Megatron's linear_qkv and fc1) or, with
// separate_projections, one GEMM per weight (torchtitan's wq, wk, wv; w1, w3). `suffix` names the pass.
std::vector<KernelWork> qkv_gemms(const RankDims& d, const std::string& suffix) {
  const double e = d.act_bytes, h = d.hidden, T = d.tokens;
  if (!d.stack.separate_projections) return {gemm("qkv" + suffix, T, d.q_dim + 2 * d.kv_dim, h, e)};
  return {gemm("wq" + suffix, T, d.q_dim, h, e), gemm("wk" + suffix, T, d.kv_dim, h, e),
          gemm("wv" + suffix, T, d.kv_dim, h, e)};
}

std::vector<KernelWork> rope_kernels(const ModelSpec& m, const RankDims& d, bool backward) {
  return m.is_mla() ? compute_detail::mla_rope_kernels(m, d, backward) : stack_rope_kernels(d, backward);
}

std::vector<KernelWork> up_gemms(const ModelSpec& m, const RankDims& d, const std::string& suffix) {
  const double e = d.act_bytes, h = d.hidden, T = d.tokens;
  if (!d.stack.separate_projections || m.ffn_kind != FfnKind::swiglu)
    return {gemm("mlp_up" + suffix, T, mlp_up_cols(m, d), h, e)};
  return {gemm("w1" + suffix, T, d.ffn, h, e), gemm("w3" + suffix, T, d.ffn, h, e)};
}

// Autograd sums the input gradients of separate projections that share an input: n GEMMs, n - 1 adds
// of a tokens×hidden tensor (read two, write one).
std::vector<KernelWork> grad_sums(const std::string& name, std::size_t gemms, const RankDims& d) {
  std::vector<KernelWork> ks;
  for (std::size_t i = 1; i < gemms; ++i) ks.push_back(residual_kernel(name, d.tokens, d));
  return ks;
}

// Forward in execution order. GEMM shapes per rank (Megatron-LM, Shoeybi et al. 2019, §3): Q/K/V
// and MLP up are column-parallel (output columns / t), attention output and MLP down row-parallel
// (input rows / t).
std::vector<KernelWork> forward_kernels(const ModelSpec& m, const RankDims& d) {
  const double e = d.act_bytes, h = d.hidden, T = d.tokens;
  std::vector<KernelWork> ks;
  append(ks, stack_norm_kernels("attn_norm", m.arch, d.norm_tokens, d, Pass::forward));
  append(ks, m.is_mla() ? compute_detail::mla_projection_kernels(m, d, Pass::forward) : qkv_gemms(d, ""));
  append(ks, compute_detail::qk_norm_kernels(m, d, Pass::forward));
  if (m.arch == Arch::llama) append(ks, rope_kernels(m, d, false));
  append(ks, attention_copy_kernels(d, false, true));
  if (d.cuda_core_attention) {
    ks.push_back(compute_detail::cuda_core_attention_forward(d));
  } else if (d.tensor_core_attention) {
    ks.push_back(compute_detail::tensor_core_attention_forward(d));
  } else if (d.fused_attention) {
    ks.push_back(attention_forward(d));
    append(ks, compute_detail::ring_attention_kernels(d, false));
  } else {
    append(ks, unfused_attention_forward(m, d));
  }
  append(ks, attention_copy_kernels(d, false, false));
  ks.push_back(gemm("attn_out", T, h, d.v_dim, e));
  ks.push_back(residual_kernel("attn_residual", d.norm_tokens, d));
  append(ks, stack_norm_kernels("mlp_norm", m.arch, d.norm_tokens, d, Pass::forward));
  append(ks, up_gemms(m, d, ""));
  append(ks, stack_activation_kernels(m, d, false));
  ks.push_back(gemm("mlp_down", T, h, d.ffn, e));
  ks.push_back(residual_kernel("mlp_residual", d.norm_tokens, d));
  return ks;
}

// Input gradients in execution (reverse) order: dX GEMMs have the forward GEMM's FLOPs; the residual
// kernels add the gradient coming through the skip path to the one coming out of the norm.
std::vector<KernelWork> input_grad_kernels(const ModelSpec& m, const RankDims& d) {
  const double e = d.act_bytes, h = d.hidden, T = d.tokens;
  std::vector<KernelWork> ks;
  ks.push_back(gemm("mlp_down_dx", T, h, d.ffn, e));
  append(ks, stack_activation_kernels(m, d, true));
  const std::vector<KernelWork> up_dx = up_gemms(m, d, "_dx");
  append(ks, up_dx);
  append(ks, grad_sums("mlp_up_dx_sum", up_dx.size(), d));
  append(ks, stack_norm_kernels("mlp_norm_bwd", m.arch, d.norm_tokens, d, Pass::input_grad));
  ks.push_back(residual_kernel("mlp_residual_bwd", d.norm_tokens, d));
  ks.push_back(gemm("attn_out_dx", T, h, d.v_dim, e));
  append(ks, attention_copy_kernels(d, true, true));
  if (d.cuda_core_attention) {
    ks.push_back(compute_detail::cuda_core_attention_backward(d));
  } else if (d.tensor_core_attention) {
    ks.push_back(compute_detail::tensor_core_attention_backward(d));
  } else if (d.fused_attention) {
    ks.push_back(attention_backward(d));
    append(ks, compute_detail::ring_attention_kernels(d, true));
  } else {
    append(ks, unfused_attention_backward(m, d));
  }
  append(ks, attention_copy_kernels(d, true, false));
  if (m.arch == Arch::llama) append(ks, rope_kernels(m, d, true));
  append(ks, compute_detail::qk_norm_kernels(m, d, Pass::input_grad));
  if (m.is_mla()) {
    append(ks, compute_detail::mla_projection_kernels(m, d, Pass::input_grad));
  } else {
    const std::vector<KernelWork> qkv_dx = qkv_gemms(d, "_dx");
    append(ks, qkv_dx);
    append(ks, grad_sums("qkv_dx_sum", qkv_dx.size(), d));
  }
  append(ks, stack_norm_kernels("attn_norm_bwd", m.arch, d.norm_tokens, d, Pass::input_grad));
  ks.push_back(residual_kernel("attn_residual_bwd", d.norm_tokens, d));
  return ks;
}

// Weight gradients: dW = Xᵀ·dY for every GEMM (the forward's FLOPs) and the norm scale (and shift).
std::vector<KernelWork> weight_grad_kernels(const ModelSpec& m, const RankDims& d) {
  const double e = d.act_bytes, h = d.hidden, T = d.tokens;
  std::vector<KernelWork> ks;
  ks.push_back(gemm("mlp_down_dw", T, h, d.ffn, e));
  append(ks, up_gemms(m, d, "_dw"));
  append(ks, stack_norm_kernels("mlp_norm_dw", m.arch, d.norm_tokens, d, Pass::weight_grad));
  ks.push_back(gemm("attn_out_dw", T, h, d.v_dim, e));
  append(ks, compute_detail::qk_norm_kernels(m, d, Pass::weight_grad));
  append(ks, m.is_mla() ? compute_detail::mla_projection_kernels(m, d, Pass::weight_grad) : qkv_gemms(d, "_dw"));
  append(ks, stack_norm_kernels("attn_norm_dw", m.arch, d.norm_tokens, d, Pass::weight_grad));
  return ks;
}

}  // namespace

bool is_attention_core(const KernelWork& k) {
  return k.name == "attn_core" || k.name == "attn_scores" || k.name == "attn_softmax" || k.name == "attn_dropout" ||
         k.name == "attn_pv";
}

std::vector<KernelWork> block_kernels(const ModelSpec& m, const LayerShape& s, Pass p) {
  const RankDims d = compute_detail::rank_dims(m, s);
  switch (p) {
    case Pass::forward: return apply_fp8_recipe(forward_kernels(m, d), s, p);
    case Pass::input_grad: return apply_fp8_recipe(input_grad_kernels(m, d), s, p);
    case Pass::weight_grad: return apply_fp8_recipe(weight_grad_kernels(m, d), s, p);
  }
  FSDP_CHECK(false, "block_kernels: unknown pass");
  return {};
}

}  // namespace fsdpx
