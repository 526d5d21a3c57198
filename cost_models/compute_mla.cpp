// cost_models/compute_mla.cpp — the kernels of multi-head latent attention's projections (DeepSeek-V3
// technical report, arXiv:2412.19437, §2.1.1; transformers models/deepseek_v3/modeling_deepseek_v3.py
// DeepseekV3Attention) and of Qwen3's per-head query/key RMSNorms (transformers models/qwen3/
// modeling_qwen3.py Qwen3Attention: q_norm, k_norm over head_dim, before RoPE). Leaves out the fused
// kernels some stacks use for the latent path (absorbed up-projections are an inference trick).
#include <string>
#include <utility>

#include "cost_models/compute_internal.h"

namespace fsdpx::compute_detail {
namespace {

void append(std::vector<KernelWork>& to, std::vector<KernelWork> from) {
  for (KernelWork& k : from) to.push_back(std::move(k));
}

// A norm over `rows` vectors of `width` (its RMSNorm weight is `width` wide).
std::vector<KernelWork> narrow_norm(const std::string& name, const ModelSpec& m, double rows, double width,
                                    const RankDims& d, Pass p) {
  RankDims n = d;
  n.hidden = width;
  return stack_norm_kernels(name, m.arch, rows, n, p);
}

// One projection y[T×out] = x[T×in]·W for `pass`: the forward GEMM, dX or dW (the same shape each).
KernelWork projection(const std::string& name, double tokens, double out, double in, const RankDims& d, Pass p) {
  const char* suffix = p == Pass::forward ? "" : p == Pass::input_grad ? "_dx" : "_dw";
  return gemm(name + suffix, tokens, out, in, d.act_bytes);
}

}  // namespace

// Per rank, as torchtitan shards DeepSeek-V3 under TP (torchtitan models/deepseek_v3/infra/parallelize.py:
// wq_a, q_norm, wkv_a, kv_norm NoParallel, wq/wq_b and wkv_b column-parallel, wo row-parallel): the down
// projections and latent norms run whole on every TP rank, the up projections on its heads.
//   q: x·W_q_a (h -> q_lora_rank), RMSNorm, ·W_q_b (-> heads·(nope + rope)); or x·W_q (q_lora_rank 0)
//   kv: x·W_kv_a (h -> kv_lora_rank + rope), RMSNorm on the latent, ·W_kv_b (-> heads·(nope + v))
std::vector<KernelWork> mla_projection_kernels(const ModelSpec& m, const RankDims& d, Pass p) {
  const MlaSpec& a = m.mla;
  const double T = d.tokens, h = d.hidden, qr = double(a.q_lora_rank), kvr = double(a.kv_lora_rank);
  const double kv_b_out = d.heads * double(a.qk_nope_head_dim + a.v_head_dim);
  const char* norm_suffix = p == Pass::forward ? "" : p == Pass::input_grad ? "_bwd" : "_dw";
  std::vector<KernelWork> q, kv;
  if (a.q_lora_rank > 0) {
    q.push_back(projection("wq_a", T, qr, h, d, p));
    append(q, narrow_norm(std::string("q_a_norm") + norm_suffix, m, T, qr, d, p));
    q.push_back(projection("wq_b", T, d.q_dim, qr, d, p));
  } else {
    q.push_back(projection("wq", T, d.q_dim, h, d, p));
  }
  kv.push_back(projection("wkv_a", T, kvr + double(a.qk_rope_head_dim), h, d, p));
  append(kv, narrow_norm(std::string("kv_a_norm") + norm_suffix, m, T, kvr, d, p));
  kv.push_back(projection("wkv_b", T, kv_b_out, kvr, d, p));
  std::vector<KernelWork> ks;
  if (p == Pass::forward) {
    append(ks, std::move(q));
    append(ks, std::move(kv));
    return ks;
  }
  // Backward runs each chain from its output back: up projection, norm, down projection; autograd then
  // sums the two input gradients of x (read two T×h tensors, write one).
  for (auto* chain : {&kv, &q})
    for (auto it = chain->rbegin(); it != chain->rend(); ++it) ks.push_back(*it);
  if (p == Pass::input_grad) ks.push_back(residual_kernel("mla_dx_sum", T, d));
  return ks;
}

// RoPE on the rope part only: qk_rope_head_dim of each local query head and the single rope key that all
// heads share (modeling_deepseek_v3.py apply_rotary_pos_emb on q_pe and k_pe), then the key expanded.
std::vector<KernelWork> mla_rope_kernels(const ModelSpec& m, const RankDims& d, bool backward) {
  RankDims r = d;
  r.q_dim = d.heads * double(m.mla.qk_rope_head_dim);
  r.kv_dim = double(m.mla.qk_rope_head_dim);
  return stack_rope_kernels(r, backward);
}

// Qwen3: RMSNorm over each head's head_dim for every local query and key head (a norm of
// tokens·heads rows of head_dim, one weight of head_dim shared by the heads).
std::vector<KernelWork> qk_norm_kernels(const ModelSpec& m, const RankDims& d, Pass p) {
  if (!m.qk_norm) return {};
  const double head_dim = double(m.head_dim);
  const char* suffix = p == Pass::forward ? "" : p == Pass::input_grad ? "_bwd" : "_dw";
  std::vector<KernelWork> ks;
  append(ks, narrow_norm(std::string("q_norm") + suffix, m, d.tokens * d.q_dim / head_dim, head_dim, d, p));
  append(ks, narrow_norm(std::string("k_norm") + suffix, m, d.tokens * d.kv_dim / head_dim, head_dim, d, p));
  return ks;
}

}  // namespace fsdpx::compute_detail
