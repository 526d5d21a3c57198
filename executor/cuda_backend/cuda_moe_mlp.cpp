// executor/cuda_backend/cuda_moe_mlp.cpp — the host-staged MoE MLP of a CUDA block (see cuda_moe_mlp.h):
// device T <-> host fp32 copies (host_staging.h) around executor/model/moe_mlp.h's moe_forward and
// moe_backward.
#include "executor/cuda_backend/cuda_moe_mlp.h"

#include <vector>

#include "core/errors.h"
#include "executor/cuda_backend/host_staging.h"

namespace fsdpx::cuda {
namespace {

template <class T>
MoeDims dims_of(const CudaBlockContext<T>& ctx) {
  FSDP_CHECK(ctx.par.tp == 1 && ctx.par.cp == 1 && ctx.par.ep == 1,
             "cuda_moe_mlp: MoE blocks run on CUDA without tensor, context or expert parallelism");
  FSDP_CHECK(!ctx.lora.layout, "cuda_moe_mlp: MoE blocks run on CUDA without LoRA");
  return make_moe_dims(*ctx.spec, ctx.dims.n, 1, 0, ctx.dims.t);
}

// The block's MoE tensors (moe_mlp.h MoeTensors: router [E, C], experts' up [E·2F, C] and down [E·C, F],
// correction bias [E], shared expert's up [2·SF, C] and down [C, SF]) staged on the host. The bias is
// left out of gradients (`with_bias` false): it selects only (moe_mlp.h).
template <class P, class T>
MoeTensors<P> stage(const MoeDims& d, const BlockTensors<T*>& t, StagedTensors<T>& st, bool with_bias,
                    cudaStream_t stream) {
  FSDP_CHECK(t.router_w && t.experts_up_w && t.experts_down_w, "cuda_moe_mlp: the block has no MoE tensors");
  const std::int64_t local = d.local_experts();
  MoeTensors<P> m;
  m.router_w = st.stage(t.router_w, d.e * d.c, stream);
  m.up_w = st.stage(t.experts_up_w, local * 2 * d.f * d.c, stream);
  m.down_w = st.stage(t.experts_down_w, local * d.c * d.f, stream);
  if (with_bias && d.score_bias) m.score_bias = st.stage(t.router_bias, d.e, stream);
  m.shared_up_w = st.stage(t.shared_up_w, 2 * d.sf * d.c, stream);
  m.shared_down_w = st.stage(t.shared_down_w, d.c * d.sf, stream);
  return m;
}

}  // namespace

template <class T>
void cuda_moe_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, CudaBlockActs<T>& a, T* out) {
  const MoeDims d = dims_of(ctx);
  StagedTensors<const T> w;
  const MoeTensors<const float*> wh = stage<const float*>(d, p, w, true, ctx.stream);
  const std::vector<float> x = download(a.ln2.get(), d.n * d.c, ctx.stream);
  std::vector<float> y(x.size());
  moe_forward(d, wh, x.data(), y.data(), a.moe, ctx.profiler, ctx.module);
  upload(out, y, ctx.stream);
}

template <class T>
void cuda_moe_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const BlockTensors<float*>& g,
                       const CudaBlockActs<T>& a, const T* dout, CudaBlockScratch<T>& s) {
  const MoeDims d = dims_of(ctx);
  StagedTensors<const T> w;
  StagedTensors<float> grads;  // the gradients so far: moe_backward adds to them as on the CPU
  const MoeTensors<const float*> wh = stage<const float*>(d, p, w, true, ctx.stream);
  const MoeTensors<float*> gh = stage<float*>(d, g, grads, false, ctx.stream);
  const std::vector<float> x = download(a.ln2.get(), d.n * d.c, ctx.stream);
  const std::vector<float> dy = download(dout, d.n * d.c, ctx.stream);
  std::vector<float> dx(x.size(), 0.0f);
  moe_backward(d, wh, gh, x.data(), dy.data(), a.moe, ctx.moe_aux, dx.data(), s.moe, ctx.profiler, ctx.module);
  upload(s.dln.get(), dx, ctx.stream);
  grads.put_back(ctx.stream);
}

void add_to_device_scalar(float* loss_device, float add, cudaStream_t stream) {
  std::vector<float> v = download(loss_device, 1, stream);
  v[0] += add;
  upload(loss_device, v, stream);
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template void cuda_moe_forward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&, CudaBlockActs<T>&, \
                                    T*);                                                                         \
  template void cuda_moe_backward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&,                  \
                                     const BlockTensors<float*>&, const CudaBlockActs<T>&, const T*,             \
                                     CudaBlockScratch<T>&);
FSDPX_HOST_STAGED_TYPES(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
