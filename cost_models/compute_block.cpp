// cost_models/compute_block.cpp — the kernels of one pre-norm transformer block on one rank, per
// pass: norms, Q/K/V, RoPE (llama), flash attention, output projection, residual adds, MLP (SwiGLU,
// GELU or squared ReLU) with Megatron tensor parallelism, sequence parallelism and ring-style context
// parallelism. Leaves out dropout (Llama and llm.c's GPT-2 train without it), bias-gradient
// reductions (fused into the dW GEMM epilogue) and the TP/SP/CP communication (communication.h).
#include <utility>

#include "core/errors.h"
#include "cost_models/compute.h"
#include "cost_models/compute_internal.h"

namespace fsdpx {
namespace {

using compute_detail::gemm;
using compute_detail::norm_kernel;
using compute_detail::RankDims;
using compute_detail::residual_kernel;
using compute_detail::vector_kernel;

// Output columns of the first MLP GEMM: gate and up fused for SwiGLU, up alone otherwise.
double mlp_up_cols(const ModelSpec& m, const RankDims& d) {
  return (m.ffn_kind == FfnKind::swiglu ? 2.0 : 1.0) * d.ffn;
}

// Flash attention forward FLOPs on one rank: S = QKᵀ and O = PV are 2·queries·keys·q_dim each, over
// b·s/c local queries and all s keys of their sequences (ring attention passes the K/V chunks
// around). The causal mask zeroes half of S, which flash kernels skip (Megatron's transformer_flops
// counts "q·s/2" for the same reason); with CP we assume load-balanced (zig-zag) chunks so every rank
// does half of its queries×keys work.
double attention_forward_flops(const RankDims& d) {
  constexpr double kCausalFraction = 0.5;
  return 2.0 * 2.0 * d.tokens * d.seq * d.q_dim * kCausalFraction;
}

// Flash attention forward: reads Q, K, V, writes O and fp32 log-sum-exp per (query, head); the
// T×T score matrix stays in SRAM (Dao et al. 2022, FlashAttention, §3.1). K/V re-reads per query
// tile are left out.
KernelWork attention_forward(const RankDims& d) {
  constexpr double kLseBytes = 4;
  KernelWork w;
  w.name = "attn_core";
  w.flops = attention_forward_flops(d);
  w.bytes = (2 * d.tokens * d.q_dim + 2 * d.keys * d.kv_dim) * d.act_bytes +
            d.tokens * d.heads * kLseBytes;
  w.matmul = true;  // flash kernels run both products on tensor cores
  w.attention_seq = d.seq;
  w.attention_relative_speed = d.attention_speed;
  return w;
}

// Flash attention backward: 5 matrix products where the forward has 2 (recompute S = QKᵀ, then
// dV = PᵀdO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀQ), so 2.5× the forward FLOPs (Dao 2023,
// FlashAttention-2, §3.1.2 and Algorithm 2). Reads Q, K, V, O, dO and fp32 LSE and D = rowsum(dO∘O);
// writes dQ, dK, dV.
KernelWork attention_backward(const RankDims& d) {
  constexpr double kBackwardToForward = 2.5;
  constexpr double kStatBytes = 4;
  KernelWork w;
  w.name = "attn_core_bwd";
  w.flops = kBackwardToForward * attention_forward_flops(d);
  w.bytes = (4 * d.tokens * d.q_dim + 4 * d.keys * d.kv_dim) * d.act_bytes +
            2 * d.tokens * d.heads * kStatBytes;
  w.matmul = true;
  w.attention_seq = d.seq;
  w.attention_backward = true;
  w.attention_relative_speed = d.attention_speed;
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
  KernelWork pv = gemm("attn_pv", d.tokens, d.q_dim, d.seq, e);
  pv.bytes = (sc + d.keys * d.kv_dim + d.tokens * d.q_dim) * e;
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
  KernelWork pv = gemm("attn_pv_bwd", d.tokens, d.q_dim, d.seq, e);
  pv.flops *= 2;
  pv.bytes = (2 * sc + 2 * d.tokens * d.q_dim + 2 * d.keys * d.kv_dim) * e;  // reads P', dO, V; writes dP', dV
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

// Rotary embedding of Q and K (Su et al. 2021, RoFormer): each element is x·cos ± x'·sin, 3 FLOPs;
// reads and writes Q and K once (the cos/sin tables are small and cached).
KernelWork rope_kernel(std::string name, const RankDims& d) {
  const double elems = d.tokens * (d.q_dim + d.kv_dim);
  return vector_kernel(std::move(name), 3 * elems, elems * d.act_bytes, elems * d.act_bytes);
}

// MLP activation. SwiGLU: silu(gate)·up (Shazeer 2020), ~5 FLOPs per output (negate, exp, add,
// divide, multiply); backward reads dH, gate, up and writes dgate, dup (~8 FLOPs). GELU (tanh form,
// as llm.c's gelu.cuh) ~8 FLOPs forward, ~16 backward. Squared ReLU (So et al. 2021, Primer): 2 and 3.
KernelWork activation_kernel(const ModelSpec& m, const RankDims& d, bool backward) {
  const double out = d.tokens * d.ffn;  // elements of the activation output (the down GEMM input)
  const double e = d.act_bytes;
  if (m.ffn_kind == FfnKind::swiglu) {
    if (backward) return vector_kernel("mlp_act_bwd", 8 * out, 3 * out * e, 2 * out * e);
    return vector_kernel("mlp_act", 5 * out, 2 * out * e, out * e);
  }
  const bool gelu = m.ffn_kind == FfnKind::gelu;
  if (backward) return vector_kernel("mlp_act_bwd", (gelu ? 16 : 3) * out, 2 * out * e, out * e);
  return vector_kernel("mlp_act", (gelu ? 8 : 2) * out, out * e, out * e);
}

// Forward in execution order. GEMM shapes per rank (Megatron-LM, Shoeybi et al. 2019, §3): Q/K/V
// and MLP up are column-parallel (output columns / t), attention output and MLP down row-parallel
// (input rows / t).
std::vector<KernelWork> forward_kernels(const ModelSpec& m, const RankDims& d) {
  const double e = d.act_bytes, h = d.hidden, T = d.tokens;
  std::vector<KernelWork> ks;
  ks.push_back(norm_kernel("attn_norm", m.arch, d.norm_tokens, d, Pass::forward));
  ks.push_back(gemm("qkv", T, d.q_dim + 2 * d.kv_dim, h, e));
  if (m.arch == Arch::llama) ks.push_back(rope_kernel("rope", d));
  if (d.fused_attention) {
    ks.push_back(attention_forward(d));
  } else {
    for (KernelWork& k : unfused_attention_forward(m, d)) ks.push_back(std::move(k));
  }
  ks.push_back(gemm("attn_out", T, h, d.q_dim, e));
  ks.push_back(residual_kernel("attn_residual", d.norm_tokens, d));
  ks.push_back(norm_kernel("mlp_norm", m.arch, d.norm_tokens, d, Pass::forward));
  ks.push_back(gemm("mlp_up", T, mlp_up_cols(m, d), h, e));
  ks.push_back(activation_kernel(m, d, false));
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
  ks.push_back(activation_kernel(m, d, true));
  ks.push_back(gemm("mlp_up_dx", T, mlp_up_cols(m, d), h, e));
  ks.push_back(norm_kernel("mlp_norm_bwd", m.arch, d.norm_tokens, d, Pass::input_grad));
  ks.push_back(residual_kernel("mlp_residual_bwd", d.norm_tokens, d));
  ks.push_back(gemm("attn_out_dx", T, h, d.q_dim, e));
  if (d.fused_attention) {
    ks.push_back(attention_backward(d));
  } else {
    for (KernelWork& k : unfused_attention_backward(m, d)) ks.push_back(std::move(k));
  }
  if (m.arch == Arch::llama) ks.push_back(rope_kernel("rope_bwd", d));
  ks.push_back(gemm("qkv_dx", T, d.q_dim + 2 * d.kv_dim, h, e));
  ks.push_back(norm_kernel("attn_norm_bwd", m.arch, d.norm_tokens, d, Pass::input_grad));
  ks.push_back(residual_kernel("attn_residual_bwd", d.norm_tokens, d));
  return ks;
}

// Weight gradients: dW = Xᵀ·dY for every GEMM (the forward's FLOPs) and the norm scale (and shift).
std::vector<KernelWork> weight_grad_kernels(const ModelSpec& m, const RankDims& d) {
  const double e = d.act_bytes, h = d.hidden, T = d.tokens;
  std::vector<KernelWork> ks;
  ks.push_back(gemm("mlp_down_dw", T, h, d.ffn, e));
  ks.push_back(gemm("mlp_up_dw", T, mlp_up_cols(m, d), h, e));
  ks.push_back(norm_kernel("mlp_norm_dw", m.arch, d.norm_tokens, d, Pass::weight_grad));
  ks.push_back(gemm("attn_out_dw", T, h, d.q_dim, e));
  ks.push_back(gemm("qkv_dw", T, d.q_dim + 2 * d.kv_dim, h, e));
  ks.push_back(norm_kernel("attn_norm_dw", m.arch, d.norm_tokens, d, Pass::weight_grad));
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
    case Pass::forward: return forward_kernels(m, d);
    case Pass::input_grad: return input_grad_kernels(m, d);
    case Pass::weight_grad: return weight_grad_kernels(m, d);
  }
  FSDP_CHECK(false, "block_kernels: unknown pass");
  return {};
}

}  // namespace fsdpx
