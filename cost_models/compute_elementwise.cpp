// cost_models/compute_elementwise.cpp — the elementwise kernels of a block as a training stack runs
// them (cost_models/stack_costs.h): RMSNorm, RoPE and the MLP activation as one fused kernel each, or
// as eager PyTorch's chains of kernels (every op reads and writes HBM, intermediates in fp32 where the
// code upcasts), and the layout copies around SDPA. One HBM pass per kernel listed, with the autograd
// formulas of each op for the backward. Leaves out kernel launch gaps on the host and caching.
#include <utility>

#include "cost_models/compute_internal.h"

namespace fsdpx::compute_detail {

namespace {

constexpr double kFp32 = 4;

// One elementwise kernel over `elems` elements: read `read_per` and write `write_per` bytes per element
// (plus `extra_read` bytes such as per-token statistics), one FLOP per element.
KernelWork pass(std::string name, double elems, double read_per, double write_per, double extra_read = 0) {
  return vector_kernel(std::move(name), elems, elems * read_per + extra_read, elems * write_per);
}

// torchtitan's RMSNorm: `self._norm(x.float()).type_as(x) * self.weight` with
// `_norm = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)` (torchtitan/models/norms.py
// @9dec370, also @3faaa1a0d). Forward: cast to fp32, pow, mean (one value per token), + eps and rsqrt
// (per token), multiply by rstd, cast back, multiply by the weight. Backward by autograd: the weight
// product (dX_normed = dY·w; the weight gradient sums dY·normed over tokens), the cast back to fp32, the
// rstd product (g·r; and sum(g·x) over the hidden size for rstd's gradient), rsqrt/add/mean backward
// (mean's broadcast is materialised), pow's backward (x.pow(1), ·2, ·grad), the sum of the two
// gradient branches of x.float() and the cast to the activation dtype.
std::vector<KernelWork> eager_rmsnorm(const std::string& n, double tokens, const RankDims& d, Pass p) {
  const double x = tokens * d.hidden, e = d.act_bytes, per_token = tokens * kFp32;
  switch (p) {
    case Pass::forward:
      return {pass(n + ".cast_in", x, e, kFp32),          pass(n + ".pow", x, kFp32, kFp32),
              pass(n + ".mean", x, kFp32, 0, 0),          pass(n + ".add_rsqrt", tokens, 2 * kFp32, 2 * kFp32),
              pass(n + ".mul_rstd", x, kFp32, kFp32, per_token), pass(n + ".cast_out", x, kFp32, e),
              pass(n + ".mul_weight", x, e, e)};
    case Pass::input_grad:
      return {pass(n + ".mul_weight_bwd", x, e, e),       pass(n + ".cast_out_bwd", x, e, kFp32),
              pass(n + ".mul_rstd_bwd", x, kFp32, kFp32, per_token), pass(n + ".rstd_grad_mul", x, 2 * kFp32, kFp32),
              pass(n + ".rstd_grad_sum", x, kFp32, 0),    pass(n + ".add_rsqrt_bwd", tokens, 2 * kFp32, 2 * kFp32),
              pass(n + ".mean_bwd", x, 0, kFp32, per_token), pass(n + ".pow_bwd_pow", x, kFp32, kFp32),
              pass(n + ".pow_bwd_scale", x, kFp32, kFp32), pass(n + ".pow_bwd_mul", x, 2 * kFp32, kFp32),
              pass(n + ".grad_sum", x, 2 * kFp32, kFp32), pass(n + ".cast_in_bwd", x, kFp32, e)};
    case Pass::weight_grad:
      return {pass(n + ".dw_mul", x, 2 * e, e), pass(n + ".dw_sum", x, e, 0)};
  }
  return {};
}

// Fused RoPE (one kernel each way over Q and K, Su et al. 2021): x·cos ± x'·sin, 3 FLOPs per element;
// the cos/sin tables are small and cached.
KernelWork fused_rope(std::string name, const RankDims& d) {
  const double elems = d.tokens * (d.q_dim + d.kv_dim);
  return vector_kernel(std::move(name), 3 * elems, elems * d.act_bytes, elems * d.act_bytes);
}

// Eager RoPE for Q and for K, with the autograd backward running the same passes in reverse order of
// the ops (each op's gradient reads and writes what its forward did).
// torchtitan's apply_rotary_emb (`eager_complex`): view_as_complex(x.float().reshape(...)) * freqs_cis,
// then view_as_real(...).flatten(3).type_as(x): cast to fp32, complex product (6 FLOPs per pair), cast
// back; backward: type_as's gradient to fp32, the product with conj(freqs_cis), the cast to the
// activation dtype (models/llama/model.py @9dec370).
// fms's RotaryEmbedding.adjusted_qk (`eager_rotation_matrix`; foundation-model-stack
// fms/modules/positions.py @1e7ba639): q_ = x.float().view(..., D/2, 2); freqs[...].mul(q_.unsqueeze(-2))
// broadcasts each pair against its 2x2 rotation matrix (B L H D/2 2 2 in fp32: two fp32 values written per
// element, one multiply each); .sum(5) adds them back to one; .type_as(x). Backward: type_as's gradient to
// fp32, sum's expanded gradient times the matrices (two fp32 values per element), the sum over the
// broadcast dimension, x.float()'s gradient to the activation dtype. The cos/sin tables are small and left
// out in both.
std::vector<KernelWork> eager_rope(const RankDims& d, bool backward, RopeImpl impl) {
  const double e = d.act_bytes;
  std::vector<KernelWork> ks;
  for (const auto& [tag, width] : {std::pair{"q", d.q_dim}, std::pair{"k", d.kv_dim}}) {
    const double x = d.tokens * width;
    const std::string n = backward ? std::string("rope_bwd.") + tag : std::string("rope.") + tag;
    ks.push_back(pass(n + ".cast_in", x, e, kFp32));
    if (impl == RopeImpl::eager_rotation_matrix) {
      KernelWork mul = pass(n + ".rotate_mul", x, kFp32, 2 * kFp32);
      mul.flops = 2 * x;
      ks.push_back(std::move(mul));
      ks.push_back(pass(n + ".pair_sum", x, 2 * kFp32, kFp32));
    } else {
      KernelWork mul = pass(n + ".complex_mul", x, kFp32, kFp32);
      mul.flops = 3 * x;
      ks.push_back(std::move(mul));
    }
    ks.push_back(pass(n + ".cast_out", x, kFp32, e));
  }
  return ks;
}

// MLP activation as one kernel. SwiGLU: silu(gate)·up (Shazeer 2020), ~5 FLOPs per output (negate,
// exp, add, divide, multiply); backward reads dH, gate, up and writes dgate, dup (~8 FLOPs). GELU (tanh
// form, as llm.c's gelu.cuh) ~8 FLOPs forward, ~16 backward. Squared ReLU (So et al. 2021): 2 and 3.
KernelWork fused_activation(const ModelSpec& m, const RankDims& d, bool backward) {
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

// torchtitan's FeedForward: F.silu(w1(x)) * w3(x) as two kernels; backward: the product's two
// gradients (dH·up and dH·silu(gate), each reading two tensors) and silu's backward (reads dS, gate).
std::vector<KernelWork> eager_swiglu(const RankDims& d, bool backward) {
  const double out = d.tokens * d.ffn, e = d.act_bytes;
  if (backward)
    return {pass("mlp_mul_bwd.gate", out, 2 * e, e), pass("mlp_mul_bwd.up", out, 2 * e, e),
            pass("mlp_silu_bwd", out, 2 * e, e)};
  KernelWork silu = pass("mlp_silu", out, e, e);
  silu.flops = 4 * out;
  return {std::move(silu), pass("mlp_mul", out, 2 * e, e)};
}

}  // namespace

std::vector<KernelWork> stack_norm_kernels(const std::string& name, Arch a, double tokens, const RankDims& d, Pass p) {
  if (a == Arch::llama && d.stack.norm == NormImpl::eager_fp32) return eager_rmsnorm(name, tokens, d, p);
  return {norm_kernel(name, a, tokens, d, p)};
}

std::vector<KernelWork> stack_rope_kernels(const RankDims& d, bool backward) {
  if (d.stack.rope != RopeImpl::fused) return eager_rope(d, backward, d.stack.rope);
  return {fused_rope(backward ? "rope_bwd" : "rope", d)};
}

std::vector<KernelWork> stack_activation_kernels(const ModelSpec& m, const RankDims& d, bool backward) {
  if (m.ffn_kind == FfnKind::swiglu && d.stack.unfused_swiglu) return eager_swiglu(d, backward);
  return {fused_activation(m, d, backward)};
}

// repeat_kv (unsqueeze, expand, reshape: a copy when n_rep > 1) for K and V before SDPA where the stack
// has it (StackCosts::repeat_kv), and output.transpose(1, 2).contiguous() of SDPA's output after it
// (torchtitan models/llama/model.py).
// Backward, in execution order: the contiguous copy's gradient is copied back before SDPA's backward;
// after it, expand's gradient sums n_rep heads into one for dK and dV.
std::vector<KernelWork> attention_copy_kernels(const RankDims& d, bool backward, bool before_attention) {
  if (!d.stack.attention_copies) return {};
  const double e = d.act_bytes, q = d.tokens * d.q_dim, kv = d.tokens * d.kv_dim;
  const bool repeats = d.stack.repeat_kv && d.kv_dim < d.q_dim;
  std::vector<KernelWork> ks;
  if (backward == before_attention) {  // forward's output copy, or backward's copy of its gradient
    ks.push_back(pass(backward ? "attn_out_copy_bwd" : "attn_out_copy", q, e, e));
  } else if (repeats) {
    for (const char* n : {"repeat_k", "repeat_v"})
      ks.push_back(backward ? vector_kernel(std::string(n) + "_bwd", q, q * e, kv * e) : vector_kernel(n, 0, kv * e, q * e));
  }
  return ks;
}

}  // namespace fsdpx::compute_detail
