// executor/model/mla_dims.h — multi-head latent attention's sizes, tensor places and buffers (DeepSeek-V3
// technical report, arXiv:2412.19437 §2.1.1), the device-neutral part of the latent attention
// (executor/model/mla_attention.h) that the CPU and CUDA backends both take. Leaves out the math.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model_spec.h"
#include "executor/model/attn_shape.h"

namespace fsdpx {

// One MLA call's sizes: B sequences of T tokens (N = B·T) of width C, H heads.
struct MlaDims {
  std::int64_t b = 0, t = 0, n = 0, c = 0, heads = 0;
  std::int64_t q_rank = 0, kv_rank = 0;     // q_lora_rank (0: queries straight from x), kv_lora_rank
  std::int64_t nope = 0, rope = 0, v = 0;   // qk_nope_head_dim, qk_rope_head_dim, v_head_dim
  double eps = 1e-6;                        // the latent RMSNorms' (rms_norm_eps)
  double softmax_scale_factor = 1.0;        // YaRN's mscale^2 on the (nope + rope)^-1/2 softmax scale
  std::int64_t qk() const { return nope + rope; }
  std::int64_t q_width() const { return heads * qk(); }
  std::int64_t kv_a_width() const { return kv_rank + rope; }
  std::int64_t kv_b_width() const { return heads * (nope + v); }
  std::int64_t out_width() const { return heads * v; }
  AttnShape attn() const { return AttnShape{b, t, heads, heads, qk()}; }  // the padded multi-head call
};
MlaDims make_mla_dims(const ModelSpec& m, std::int64_t batch, std::int64_t seq);

// The block's latent-attention tensors (runtime/param_layout.cpp): q_a [Rq, C], q_a_norm [Rq], q_b [H·D, Rq]
// (or q [H·D, C] when Rq = 0: q_a, q_a_norm and q_b null), kv_a [Rkv + rope, C], kv_a_norm [Rkv],
// kv_b [H·(nope + v), Rkv] (head h's rows: its nope key rows, then its v rows).
template <class P>
struct MlaTensors {
  P q_a = nullptr, q_a_norm = nullptr, q_b = nullptr, q = nullptr;
  P kv_a = nullptr, kv_a_norm = nullptr, kv_b = nullptr;
};

// What forward keeps for backward besides the block's qkv, att and atty (block.h), and the chains'
// outputs (q, kva, kvb: forward only; the MlaChains of mla_sequence.h).
template <class Real>
struct MlaActs {
  std::vector<Real> qa, qa_rstd, qa_n;    // [N, Rq], [N], [N, Rq]: q_a output, its norm's rstd and output
  std::vector<Real> c_kv, kv_rstd, kv_n;  // [N, Rkv] the latent, [N], [N, Rkv] its norm's output
  std::vector<Real> out_pad;              // [N, H·D] the attention core's output (v columns, then zeros)
  std::vector<Real> q, kva, kvb;          // [N, H·D] queries before RoPE, [N, Rkv + rope], [N, H·(nope + v)]
  void allocate(const MlaDims& d);
};

template <class Real>
struct MlaScratch {
  std::vector<Real> dout_pad, dq, dqa_n, dqa, dkva, dkv_n, dc_kv, dkvb;  // the gradients of the forward's buffers
  void allocate(const MlaDims& d);
};

}  // namespace fsdpx
