// executor/cuda_backend/cuda_mla_attention.cpp — the latent attention of a CUDA block on the device (see
// cuda_mla_attention.h): the shared kernel-call sequence (executor/model/mla_sequence.h, the CPU's order and
// kernel names) over the device policy below, so the float model of the emulated build follows the CPU
// within rounding. The policy's heads are padded to the flash kernel's Dp; its buffers are the block's.
#include "executor/cuda_backend/cuda_mla_attention.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "executor/cuda/attention.h"
#include "executor/cuda/attention_tc.h"
#include "executor/cuda/mla.h"
#include "executor/cuda/norm.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/cuda_sequence_kernels.h"
#include "executor/model/mla_sequence.h"

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
MlaDims dims_of(const CudaBlockContext<T>& ctx) {
  FSDP_CHECK(ctx.par.tp == 1 && ctx.par.cp == 1 && !ctx.lora.layout && ctx.rope_cos && ctx.rope_sin && ctx.scratch,
             "cuda_mla_attention: latent attention runs on CUDA without tp, cp or LoRA, with its RoPE table");
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

// The device policy of mla_sequence.h: the shared launches (cuda_sequence_kernels.h), fp32 norm statistics,
// the flash (or tensor-core) attention core on heads padded to Dp, and the RoPE kernels (cuda/mla.h).
template <class T>
struct CudaMlaPolicy : CudaSequenceKernels<T> {
  using Ctx = CudaBlockContext<T>;

  static std::int64_t head_dim(const MlaDims& d) { return mla_padded_head_dim(d.qk()); }
  static void rms_forward(const Ctx& ctx, T* out, float* rstd, const T* x, const T* w, std::int64_t n,
                          std::int64_t c, double eps) {
    rmsnorm_forward(out, rstd, x, w, n, c, float(eps), ctx.stream);
  }
  static void rms_backward(const Ctx& ctx, T* dinp, float* dw, const T* dout, const T* x, const T* w,
                           const float* rstd, std::int64_t n, std::int64_t c) {
    rmsnorm_backward(dinp, dw, ctx.scratch->mla.norm.get(), dout, x, w, rstd, n, c, ctx.stream);
  }
  static AttnShape shape(const MlaDims& d) { return AttnShape{d.b, d.t, d.heads, d.heads, head_dim(d)}; }
  static void attention_forward(const Ctx& ctx, const MlaDims& d, T* out, float* lse, const T* qkv) {
    if (ctx.tensor_core_attention && tc_attention_supports(shape(d)))
      tc_attention_forward(out, lse, qkv, shape(d), ctx.stream);
    else
      flash_attention_forward(out, lse, qkv, shape(d), ctx.stream);
  }
  static void attention_backward(const Ctx& ctx, const MlaDims& d, T* dqkv, const T* dout, const T* out,
                                 const T* qkv, const float* lse) {
    float* delta = ctx.scratch->attn.get();
    if (ctx.tensor_core_attention && tc_attention_supports(shape(d)))
      tc_attention_backward(dqkv, delta, dout, out, qkv, lse, shape(d), ctx.stream);
    else
      flash_attention_backward(dqkv, delta, dout, out, qkv, lse, shape(d), ctx.stream);
  }
  static void assemble_qkv(const Ctx& ctx, const MlaDims& d, T* qkv, const T* q, const T* kvb, const T* k_pe,
                           std::int64_t pe_ld) {
    mla_assemble_qkv(qkv, q, kvb, k_pe, pe_ld, ctx.rope_cos, ctx.rope_sin, rows_of(d), ctx.stream);
  }
  static void split_dqkv(const Ctx& ctx, const MlaDims& d, T* dq, T* dkvb, T* dk_pe, std::int64_t pe_ld,
                         const T* dqkv) {
    mla_split_dqkv(dq, dkvb, dk_pe, pe_ld, dqkv, ctx.rope_cos, ctx.rope_sin, rows_of(d), ctx.stream);
  }
};

}  // namespace

template <class T>
void cuda_mla_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, CudaBlockActs<T>& acts) {
  const MlaDims d = dims_of(ctx);
  CudaMlaActs<T>& a = acts.mla;
  CudaMlaScratch<T>& s = ctx.scratch->mla;
  const MlaKept<T, float> keep{a.qa.get(), a.qa_n.get(), a.qa_rstd.get(), a.c_kv.get(), a.kv_n.get(),
                               a.kv_rstd.get(), a.qkv.get(), a.out.get(), acts.att.get()};
  mla_sequence::forward<CudaMlaPolicy<T>>(ctx, d, mla_tensors(p), acts.ln1.get(), keep,
                                          MlaChains<T>{s.q.get(), s.kva.get(), s.kvb.get()}, acts.atty.get());
}

template <class T>
void cuda_mla_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const BlockTensors<float*>& g,
                       const CudaBlockActs<T>& acts, CudaBlockScratch<T>& sc) {
  const MlaDims d = dims_of(ctx);
  const CudaMlaActs<T>& a = acts.mla;
  CudaMlaScratch<T>& s = sc.mla;
  const MlaKept<const T, const float> keep{a.qa.get(), a.qa_n.get(), a.qa_rstd.get(), a.c_kv.get(), a.kv_n.get(),
                                           a.kv_rstd.get(), a.qkv.get(), a.out.get(), acts.att.get()};
  const MlaGradScratch<T> gs{s.dout.get(), s.dqkv.get(), s.dkv_n.get(), s.dc_kv.get(), s.dqa_n.get(), s.dqa.get()};
  mla_sequence::backward<CudaMlaPolicy<T>>(ctx, d, mla_tensors(p), mla_tensors(g), acts.ln1.get(), keep,
                                           sc.datty.get(), MlaChains<T>{s.q.get(), s.kva.get(), s.kvb.get()}, gs,
                                           sc.dln.get());
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
