// executor/cuda_backend/cuda_mla_attention.cpp — the host-staged latent attention of a CUDA block (see
// cuda_mla_attention.h): device T <-> host fp32 copies (host_staging.h) around
// executor/model/mla_attention.h's mla_forward and mla_backward.
#include "executor/cuda_backend/cuda_mla_attention.h"

#include <vector>

#include "core/errors.h"
#include "executor/cuda_backend/host_staging.h"
#include "executor/model/mla_attention.h"

namespace fsdpx::cuda {
namespace {

template <class T>
MlaDims dims_of(const CudaBlockContext<T>& ctx) {
  FSDP_CHECK(ctx.par.tp == 1 && ctx.par.cp == 1 && !ctx.lora.layout && ctx.mla_rope != nullptr,
             "cuda_mla_attention: latent attention runs on CUDA without tp, cp or LoRA, with its RoPE table");
  return make_mla_dims(*ctx.spec, ctx.dims.b, ctx.dims.t);
}

// The block's latent projections (mla_attention.h MlaTensors) staged on the host.
template <class P, class T>
MlaTensors<P> stage(const MlaDims& d, const BlockTensors<T*>& t, StagedTensors<T>& st, cudaStream_t stream) {
  FSDP_CHECK(t.mla_kv_a && t.mla_kv_a_norm && t.mla_kv_b && (t.mla_q || (t.mla_q_a && t.mla_q_a_norm && t.mla_q_b)),
             "cuda_mla_attention: the block has no latent-attention tensors");
  MlaTensors<P> m;
  m.q_a = st.stage(t.mla_q_a, d.q_rank * d.c, stream);
  m.q_a_norm = st.stage(t.mla_q_a_norm, d.q_rank, stream);
  m.q_b = st.stage(t.mla_q_b, d.q_width() * d.q_rank, stream);
  m.q = st.stage(t.mla_q, d.q_width() * d.c, stream);
  m.kv_a = st.stage(t.mla_kv_a, d.kv_a_width() * d.c, stream);
  m.kv_a_norm = st.stage(t.mla_kv_a_norm, d.kv_rank, stream);
  m.kv_b = st.stage(t.mla_kv_b, d.kv_b_width() * d.kv_rank, stream);
  return m;
}

}  // namespace

template <class T>
void cuda_mla_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, CudaBlockActs<T>& a) {
  const MlaDims d = dims_of(ctx);
  StagedTensors<const T> w;
  const MlaTensors<const float*> wh = stage<const float*>(d, p, w, ctx.stream);
  const std::vector<float> x = download(a.ln1.get(), d.n * d.c, ctx.stream);
  std::vector<float> out(std::size_t(d.n * d.out_width()));
  a.mla_qkv.assign(std::size_t(d.n * 3 * d.q_width()), 0.0f);
  a.mla_att.assign(std::size_t(attention_saved_elems(d.attn())), 0.0f);
  mla_forward(d, wh, *ctx.mla_rope, x.data(), out.data(), a.mla_qkv.data(), a.mla_att.data(), a.mla, ctx.profiler,
              ctx.module);
  upload(a.atty.get(), out, ctx.stream);
}

template <class T>
void cuda_mla_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const BlockTensors<float*>& g,
                       const CudaBlockActs<T>& a, CudaBlockScratch<T>& s) {
  const MlaDims d = dims_of(ctx);
  StagedTensors<const T> w;
  StagedTensors<float> grads;  // the gradients so far: mla_backward adds to them as on the CPU
  const MlaTensors<const float*> wh = stage<const float*>(d, p, w, ctx.stream);
  const MlaTensors<float*> gh = stage<float*>(d, g, grads, ctx.stream);
  const std::vector<float> x = download(a.ln1.get(), d.n * d.c, ctx.stream);
  const std::vector<float> dout = download(s.datty.get(), d.n * d.out_width(), ctx.stream);
  std::vector<float> dx(x.size(), 0.0f), dqkv(a.mla_qkv.size(), 0.0f);
  mla_backward(d, wh, gh, *ctx.mla_rope, x.data(), dout.data(), a.mla_qkv.data(), a.mla_att.data(), a.mla,
               dqkv.data(), dx.data(), s.mla, ctx.profiler, ctx.module);
  upload(s.dln.get(), dx, ctx.stream);
  grads.put_back(ctx.stream);
}

#define FSDPX_INSTANTIATE(T)                                                                                        \
  template void cuda_mla_forward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&, CudaBlockActs<T>&); \
  template void cuda_mla_backward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&,                     \
                                     const BlockTensors<float*>&, const CudaBlockActs<T>&, CudaBlockScratch<T>&);
FSDPX_HOST_STAGED_TYPES(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
