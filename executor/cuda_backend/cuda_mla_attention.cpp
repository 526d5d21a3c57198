// executor/cuda_backend/cuda_mla_attention.cpp — the latent attention of a CUDA block on the device (see
// cuda_mla_attention.h), timed under the CPU's kernel names (mla_attention.cpp: wq_a, q_a_norm, wq_b or wq,
// wkv_a, kv_a_norm, wkv_b, rope, attn_core; backward attn_core_bwd, rope_bwd, wkv_b_dx, kv_a_norm_bwd,
// wkv_a_dx, wq_b_dx, q_a_norm_bwd, wq_a_dx or wq_dx), each kernel group in the CPU's order, so the float
// model of the emulated build follows the CPU within rounding.
#include "executor/cuda_backend/cuda_mla_attention.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "executor/cuda/attention.h"
#include "executor/cuda/attention_tc.h"
#include "executor/cuda/context_attention.h"  // copy_columns
#include "executor/cuda/mla.h"
#include "executor/cuda/norm.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/cuda_op_timer.h"

namespace fsdpx::cuda {

template <class T>
void CudaMlaActs<T>::allocate(const MlaDims& d) {
  const std::int64_t n = d.n, dp = mla_padded_head_dim(d.qk());
  qa = DeviceBuffer<T>(n * d.q_rank), qa_n = DeviceBuffer<T>(n * d.q_rank);
  qa_rstd = DeviceBuffer<float>(d.q_rank > 0 ? n : 0);
  c_kv = DeviceBuffer<T>(n * d.kv_rank), kv_n = DeviceBuffer<T>(n * d.kv_rank), kv_rstd = DeviceBuffer<float>(n);
  qkv = DeviceBuffer<T>(n * 3 * d.heads * dp), out = DeviceBuffer<T>(n * d.heads * dp);
}

template <class T>
std::int64_t CudaMlaActs<T>::bytes() const {
  return qa.bytes() + qa_n.bytes() + qa_rstd.bytes() + c_kv.bytes() + kv_n.bytes() + kv_rstd.bytes() + qkv.bytes() +
         out.bytes();
}

template <class T>
void CudaMlaScratch<T>::allocate(const MlaDims& d) {
  const std::int64_t n = d.n, dp = mla_padded_head_dim(d.qk());
  q = DeviceBuffer<T>(n * d.q_width()), kva = DeviceBuffer<T>(n * d.kv_a_width());
  kvb = DeviceBuffer<T>(n * d.kv_b_width());
  dout = DeviceBuffer<T>(n * d.heads * dp), dqkv = DeviceBuffer<T>(n * 3 * d.heads * dp);
  dkv_n = DeviceBuffer<T>(n * d.kv_rank), dc_kv = DeviceBuffer<T>(n * d.kv_rank);
  dqa_n = DeviceBuffer<T>(n * d.q_rank), dqa = DeviceBuffer<T>(n * d.q_rank);
  norm = DeviceBuffer<float>(norm_backward_scratch_elems(n, std::max(d.q_rank, d.kv_rank)));
}

template <class T>
std::int64_t CudaMlaScratch<T>::bytes() const {
  return q.bytes() + kva.bytes() + kvb.bytes() + dout.bytes() + dqkv.bytes() + dkv_n.bytes() + dc_kv.bytes() +
         dqa_n.bytes() + dqa.bytes() + norm.bytes();
}

namespace {

template <class T>
MlaDims dims_of(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p) {
  FSDP_CHECK(ctx.par.tp == 1 && ctx.par.cp == 1 && !ctx.lora.layout && ctx.rope_cos && ctx.rope_sin && ctx.scratch,
             "cuda_mla_attention: latent attention runs on CUDA without tp, cp or LoRA, with its RoPE table");
  FSDP_CHECK(p.mla_kv_a && p.mla_kv_a_norm && p.mla_kv_b && (p.mla_q || (p.mla_q_a && p.mla_q_a_norm && p.mla_q_b)),
             "cuda_mla_attention: the block has no latent-attention tensors");
  return make_mla_dims(*ctx.spec, ctx.dims.b, ctx.dims.t);
}

// The kernels' rows: heads padded to the flash kernel's size, and the queries' factor: YaRN's softmax
// factor times sqrt(Dp/D), so that the kernel's 1/sqrt(Dp) becomes DeepSeek's 1/sqrt(D).
MlaRows rows_of(const MlaDims& d) {
  MlaRows r;
  r.n = d.n, r.t = d.t, r.heads = d.heads, r.nope = d.nope, r.rope = d.rope, r.v = d.v;
  r.dp = mla_padded_head_dim(d.qk());
  r.q_scale = float(d.softmax_scale_factor * std::sqrt(double(r.dp) / double(d.qk())));
  return r;
}

// out [N, oc] = x [N, k] · Wᵀ (written).
template <class T>
void linear(const CudaBlockContext<T>& ctx, T* out, const T* x, const T* w, std::int64_t k, std::int64_t oc) {
  matmul_forward(*ctx.gemm, out, GemmOut::operand, x, w, nullptr, ctx.dims.n, k, oc, false, ctx.stream);
}

// dx [N, k] (=, or += with accumulate) dout [N, oc] · W; dW [oc, k] += doutᵀ · x (fp32).
template <class T>
void linear_backward(const CudaBlockContext<T>& ctx, T* dx, bool accumulate, float* dw, const T* dout, const T* x,
                     const T* w, std::int64_t k, std::int64_t oc) {
  matmul_backward_dx(*ctx.gemm, dx, GemmOut::operand, dout, w, ctx.dims.n, k, oc, accumulate, ctx.stream);
  matmul_backward_dw(*ctx.gemm, dw, GemmOut::f32, dout, x, ctx.dims.n, k, oc, true, ctx.stream);
}

}  // namespace

template <class T>
void cuda_mla_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, CudaBlockActs<T>& acts) {
  const MlaDims d = dims_of(ctx, p);
  const MlaRows r = rows_of(d);
  CudaMlaActs<T>& a = acts.mla;
  CudaMlaScratch<T>& s = ctx.scratch->mla;
  const T* x = acts.ln1.get();
  const float eps = float(d.eps);
  cudaStream_t st = ctx.stream;
  if (d.q_rank > 0) {
    { const auto t = timed(ctx, "wq_a");
      linear(ctx, a.qa.get(), x, p.mla_q_a, d.c, d.q_rank); }
    { const auto t = timed(ctx, "q_a_norm");
      rmsnorm_forward(a.qa_n.get(), a.qa_rstd.get(), a.qa.get(), p.mla_q_a_norm, d.n, d.q_rank, eps, st); }
    const auto t = timed(ctx, "wq_b");
    linear(ctx, s.q.get(), a.qa_n.get(), p.mla_q_b, d.q_rank, d.q_width());
  } else {
    const auto t = timed(ctx, "wq");
    linear(ctx, s.q.get(), x, p.mla_q, d.c, d.q_width());
  }
  { const auto t = timed(ctx, "wkv_a");
    linear(ctx, s.kva.get(), x, p.mla_kv_a, d.c, d.kv_a_width()); }
  { const auto t = timed(ctx, "kv_a_norm");  // the latent: kv_a's first Rkv columns
    copy_columns(a.c_kv.get(), d.kv_rank, s.kva.get(), d.kv_a_width(), d.n, d.kv_rank, false, st);
    rmsnorm_forward(a.kv_n.get(), a.kv_rstd.get(), a.c_kv.get(), p.mla_kv_a_norm, d.n, d.kv_rank, eps, st); }
  { const auto t = timed(ctx, "wkv_b");
    linear(ctx, s.kvb.get(), a.kv_n.get(), p.mla_kv_b, d.kv_rank, d.kv_b_width()); }
  { const auto t = timed(ctx, "rope");  // and the padded multi-head qkv
    mla_assemble_qkv(a.qkv.get(), s.q.get(), s.kvb.get(), s.kva.get() + d.kv_rank, d.kv_a_width(), ctx.rope_cos,
                     ctx.rope_sin, r, st); }
  const AttnShape shape{d.b, d.t, d.heads, d.heads, r.dp};
  { const auto t = timed(ctx, "attn_core");
    if (ctx.tensor_core_attention && tc_attention_supports(shape))
      tc_attention_forward(a.out.get(), acts.att.get(), a.qkv.get(), shape, st);
    else
      flash_attention_forward(a.out.get(), acts.att.get(), a.qkv.get(), shape, st); }
  copy_columns(acts.atty.get(), d.v, a.out.get(), r.dp, d.n * d.heads, d.v, false, st);  // each head's v columns
}

template <class T>
void cuda_mla_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const BlockTensors<float*>& g,
                       const CudaBlockActs<T>& acts, CudaBlockScratch<T>& sc) {
  const MlaDims d = dims_of(ctx, p);
  const MlaRows r = rows_of(d);
  const CudaMlaActs<T>& a = acts.mla;
  CudaMlaScratch<T>& s = sc.mla;
  const T* x = acts.ln1.get();
  cudaStream_t st = ctx.stream;
  const AttnShape shape{d.b, d.t, d.heads, d.heads, r.dp};
  { const auto t = timed(ctx, "attn_core_bwd");
    zero_async(s.dout, st), zero_async(s.dqkv, st);  // the padding columns' gradient is 0; the kernels add into dqkv
    copy_columns(s.dout.get(), r.dp, sc.datty.get(), d.v, d.n * d.heads, d.v, false, st);
    if (ctx.tensor_core_attention && tc_attention_supports(shape))
      tc_attention_backward(s.dqkv.get(), sc.attn.get(), s.dout.get(), a.out.get(), a.qkv.get(), acts.att.get(),
                            shape, st);
    else
      flash_attention_backward(s.dqkv.get(), sc.attn.get(), s.dout.get(), a.out.get(), a.qkv.get(), acts.att.get(),
                               shape, st); }
  { const auto t = timed(ctx, "rope_bwd");  // into the chains' output gradients: dq, dkvb, kv_a's rope columns
    mla_split_dqkv(s.q.get(), s.kvb.get(), s.kva.get() + d.kv_rank, d.kv_a_width(), s.dqkv.get(), ctx.rope_cos,
                   ctx.rope_sin, r, st); }
  { const auto t = timed(ctx, "wkv_b_dx");  // and its weight gradient
    linear_backward(ctx, s.dkv_n.get(), false, g.mla_kv_b, s.kvb.get(), a.kv_n.get(), p.mla_kv_b, d.kv_rank,
                    d.kv_b_width()); }
  { const auto t = timed(ctx, "kv_a_norm_bwd");
    zero_async(s.dc_kv, st);
    rmsnorm_backward(s.dc_kv.get(), g.mla_kv_a_norm, s.norm.get(), s.dkv_n.get(), a.c_kv.get(), p.mla_kv_a_norm,
                     a.kv_rstd.get(), d.n, d.kv_rank, st);
    copy_columns(s.kva.get(), d.kv_a_width(), s.dc_kv.get(), d.kv_rank, d.n, d.kv_rank, false, st); }
  { const auto t = timed(ctx, "wkv_a_dx");
    linear_backward(ctx, sc.dln.get(), false, g.mla_kv_a, s.kva.get(), x, p.mla_kv_a, d.c, d.kv_a_width()); }
  if (d.q_rank == 0) {
    const auto t = timed(ctx, "wq_dx");
    linear_backward(ctx, sc.dln.get(), true, g.mla_q, s.q.get(), x, p.mla_q, d.c, d.q_width());
    return;
  }
  { const auto t = timed(ctx, "wq_b_dx");
    linear_backward(ctx, s.dqa_n.get(), false, g.mla_q_b, s.q.get(), a.qa_n.get(), p.mla_q_b, d.q_rank,
                    d.q_width()); }
  { const auto t = timed(ctx, "q_a_norm_bwd");
    zero_async(s.dqa, st);
    rmsnorm_backward(s.dqa.get(), g.mla_q_a_norm, s.norm.get(), s.dqa_n.get(), a.qa.get(), p.mla_q_a_norm,
                     a.qa_rstd.get(), d.n, d.q_rank, st); }
  const auto t = timed(ctx, "wq_a_dx");
  linear_backward(ctx, sc.dln.get(), true, g.mla_q_a, s.dqa.get(), x, p.mla_q_a, d.c, d.q_rank);
}

#define FSDPX_INSTANTIATE(T)                                                                                        \
  template struct CudaMlaActs<T>;                                                                                   \
  template struct CudaMlaScratch<T>;                                                                                \
  template void cuda_mla_forward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&, CudaBlockActs<T>&); \
  template void cuda_mla_backward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&,                     \
                                     const BlockTensors<float*>&, const CudaBlockActs<T>&, CudaBlockScratch<T>&);
FSDPX_CUDA_MODEL_TYPES(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
