// executor/model/mla_sequence.h — the kernel-call sequence of multi-head latent attention (DeepSeek-V3
// technical report, arXiv:2412.19437 §2.1.1; the math is mla_attention.h's), forward and backward, written
// once over a device policy `Dev`: the CPU's (mla_attention.cpp: host kernels) and the CUDA backend's
// (cuda_backend/cuda_mla_attention.cpp: device launches). The sequence decides the order, the kernel
// names it is timed under (the simulator's, cost_models/compute_mla.cpp), which buffers it zeroes and
// which GEMMs write or accumulate their dx; the policy names the kernels and holds the buffers (the views
// below). Leaves out the RoPE assembly's and the attention core's arithmetic (policy calls).
//
// A policy names E (activations), S (norm statistics, the core's keep), G (weight gradients) and Ctx, and
// has static functions: timed (a scope timing one kernel group), head_dim (the core's head width: D, or the
// flash kernel's padded Dp), linear (out [n, oc] = x [n, k] · Wᵀ, written), linear_backward (dx [n, k]
// written, or += with accumulate; dW [oc, k] +=), rms_forward, rms_backward (dinp +=, dw +=), zero,
// copy_columns, assemble_qkv and split_dqkv (RoPE and the padded multi-head qkv, and their reverse, every
// output written), attention_forward and attention_backward (dqkv +=).
#pragma once

#include <cstdint>

#include "core/errors.h"
#include "executor/model/block_dims.h"
#include "executor/model/mla_dims.h"

namespace fsdpx {

// A latent-attention block's tensors (block_dims.h) as the sequence names them.
template <class P>
MlaTensors<P> mla_tensors(const BlockTensors<P>& t) {
  FSDP_CHECK(t.mla_kv_a && t.mla_kv_a_norm && t.mla_kv_b && (t.mla_q || (t.mla_q_a && t.mla_q_a_norm && t.mla_q_b)),
             "mla_tensors: a latent-attention block without its tensors");
  return MlaTensors<P>{t.mla_q_a, t.mla_q_a_norm, t.mla_q_b, t.mla_q, t.mla_kv_a, t.mla_kv_a_norm, t.mla_kv_b};
}

// What the forward keeps for the backward (Dh = Dev::head_dim). E, S: const in the backward.
template <class E, class S>
struct MlaKept {
  E *qa = nullptr, *qa_n = nullptr;   // [N, Rq] q_a's output and its norm's (unused without a q LoRA rank)
  S* qa_rstd = nullptr;               // [N]
  E *c_kv = nullptr, *kv_n = nullptr;  // [N, Rkv] the latent (kv_a's first Rkv columns) and its norm's output
  S* kv_rstd = nullptr;               // [N]
  E *qkv = nullptr, *out = nullptr;   // [N, 3·H·Dh] after RoPE, queries scaled; [N, H·Dh] the core's output
  S* att = nullptr;                   // the core's keep (probabilities or log-sum-exp)
};

// The chains' outputs in the forward, their gradients in the backward (not kept).
template <class E>
struct MlaChains {
  E* q = nullptr;    // [N, H·D] queries before RoPE
  E* kva = nullptr;  // [N, Rkv + rope] kv_a's output (the latent, then the unrotated rope key)
  E* kvb = nullptr;  // [N, H·(nope + v)] kv_b's output (head h: its nope key columns, then its v)
};

// The backward's own scratch.
template <class E>
struct MlaGradScratch {
  E *dout = nullptr, *dqkv = nullptr;    // [N, H·Dh] the padded output gradient, [N, 3·H·Dh]
  E *dkv_n = nullptr, *dc_kv = nullptr;  // [N, Rkv]
  E *dqa_n = nullptr, *dqa = nullptr;    // [N, Rq]
};

namespace mla_sequence {

// x [N, C] (the attention norm's output) -> atty [N, H·v] (written); fills `keep`, `c` is scratch.
template <class Dev, class E = typename Dev::E, class S = typename Dev::S>
void forward(const typename Dev::Ctx& ctx, const MlaDims& d, const MlaTensors<const E*>& p, const E* x,
             const MlaKept<E, S>& keep, const MlaChains<E>& c, E* atty) {
  if (d.q_rank > 0) {
    { const auto t = Dev::timed(ctx, "wq_a");
      Dev::linear(ctx, d.n, keep.qa, x, p.q_a, d.c, d.q_rank); }
    { const auto t = Dev::timed(ctx, "q_a_norm");
      Dev::rms_forward(ctx, keep.qa_n, keep.qa_rstd, keep.qa, p.q_a_norm, d.n, d.q_rank, d.eps); }
    const auto t = Dev::timed(ctx, "wq_b");
    Dev::linear(ctx, d.n, c.q, keep.qa_n, p.q_b, d.q_rank, d.q_width());
  } else {
    const auto t = Dev::timed(ctx, "wq");
    Dev::linear(ctx, d.n, c.q, x, p.q, d.c, d.q_width());
  }
  { const auto t = Dev::timed(ctx, "wkv_a");
    Dev::linear(ctx, d.n, c.kva, x, p.kv_a, d.c, d.kv_a_width()); }
  { const auto t = Dev::timed(ctx, "kv_a_norm");  // the latent: kv_a's first Rkv columns
    Dev::copy_columns(ctx, keep.c_kv, d.kv_rank, c.kva, d.kv_a_width(), d.n, d.kv_rank);
    Dev::rms_forward(ctx, keep.kv_n, keep.kv_rstd, keep.c_kv, p.kv_a_norm, d.n, d.kv_rank, d.eps); }
  { const auto t = Dev::timed(ctx, "wkv_b");
    Dev::linear(ctx, d.n, c.kvb, keep.kv_n, p.kv_b, d.kv_rank, d.kv_b_width()); }
  { const auto t = Dev::timed(ctx, "rope");  // and the padded multi-head qkv
    Dev::assemble_qkv(ctx, d, keep.qkv, c.q, c.kvb, c.kva + d.kv_rank, d.kv_a_width()); }
  { const auto t = Dev::timed(ctx, "attn_core");
    Dev::attention_forward(ctx, d, keep.out, keep.att, keep.qkv); }
  Dev::copy_columns(ctx, atty, d.v, keep.out, Dev::head_dim(d), d.n * d.heads, d.v);  // each head's v columns
}

// dx [N, C] (written) = the gradient w.r.t. x from datty [N, H·v]; the tensors' gradients accumulate (+=).
// `c` receives the chains' output gradients.
template <class Dev, class E = typename Dev::E, class S = typename Dev::S, class G = typename Dev::G>
void backward(const typename Dev::Ctx& ctx, const MlaDims& d, const MlaTensors<const E*>& p, const MlaTensors<G*>& g,
              const E* x, const MlaKept<const E, const S>& keep, const E* datty, const MlaChains<E>& c,
              const MlaGradScratch<E>& s, E* dx) {
  const std::int64_t dh = Dev::head_dim(d);
  { const auto t = Dev::timed(ctx, "attn_core_bwd");
    Dev::zero(ctx, s.dout, d.n * d.heads * dh), Dev::zero(ctx, s.dqkv, d.n * 3 * d.heads * dh);  // padding: 0
    Dev::copy_columns(ctx, s.dout, dh, datty, d.v, d.n * d.heads, d.v);
    Dev::attention_backward(ctx, d, s.dqkv, s.dout, keep.out, keep.qkv, keep.att); }
  { const auto t = Dev::timed(ctx, "rope_bwd");  // into the chains' output gradients
    Dev::split_dqkv(ctx, d, c.q, c.kvb, c.kva + d.kv_rank, d.kv_a_width(), s.dqkv); }
  { const auto t = Dev::timed(ctx, "wkv_b_dx");  // and its weight gradient
    Dev::linear_backward(ctx, d.n, s.dkv_n, false, g.kv_b, c.kvb, keep.kv_n, p.kv_b, d.kv_rank, d.kv_b_width()); }
  { const auto t = Dev::timed(ctx, "kv_a_norm_bwd");
    Dev::zero(ctx, s.dc_kv, d.n * d.kv_rank);
    Dev::rms_backward(ctx, s.dc_kv, g.kv_a_norm, s.dkv_n, keep.c_kv, p.kv_a_norm, keep.kv_rstd, d.n, d.kv_rank);
    Dev::copy_columns(ctx, c.kva, d.kv_a_width(), s.dc_kv, d.kv_rank, d.n, d.kv_rank); }
  { const auto t = Dev::timed(ctx, "wkv_a_dx");
    Dev::linear_backward(ctx, d.n, dx, false, g.kv_a, c.kva, x, p.kv_a, d.c, d.kv_a_width()); }
  if (d.q_rank == 0) {
    const auto t = Dev::timed(ctx, "wq_dx");
    Dev::linear_backward(ctx, d.n, dx, true, g.q, c.q, x, p.q, d.c, d.q_width());
    return;
  }
  { const auto t = Dev::timed(ctx, "wq_b_dx");
    Dev::linear_backward(ctx, d.n, s.dqa_n, false, g.q_b, c.q, keep.qa_n, p.q_b, d.q_rank, d.q_width()); }
  { const auto t = Dev::timed(ctx, "q_a_norm_bwd");
    Dev::zero(ctx, s.dqa, d.n * d.q_rank);
    Dev::rms_backward(ctx, s.dqa, g.q_a_norm, s.dqa_n, keep.qa, p.q_a_norm, keep.qa_rstd, d.n, d.q_rank); }
  const auto t = Dev::timed(ctx, "wq_a_dx");
  Dev::linear_backward(ctx, d.n, dx, true, g.q_a, s.dqa, x, p.q_a, d.c, d.q_rank);
}

}  // namespace mla_sequence
}  // namespace fsdpx
