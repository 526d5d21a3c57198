// executor/cuda_backend/cuda_moe_mlp.cpp — the host-staged MoE MLP of a CUDA block (see cuda_moe_mlp.h):
// device T <-> host fp32 copies (host_staging.h) around executor/model/moe_mlp.h's moe_forward and
// moe_backward; under expert parallelism the routed rows cross the ep group on the device
// (DeviceExpertExchange below).
#include "executor/cuda_backend/cuda_moe_mlp.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "core/errors.h"
#include "executor/cuda_backend/host_staging.h"
#include "executor/model/moe_mlp.h"

namespace fsdpx::cuda {
namespace {

template <class T>
MoeDims dims_of(const CudaBlockContext<T>& ctx) {
  FSDP_CHECK(ctx.par.tp == 1 && ctx.par.cp == 1, "cuda_moe_mlp: MoE blocks run on CUDA without tensor or context parallelism");
  FSDP_CHECK(ctx.par.ep == 1 || ctx.comm != nullptr, "cuda_moe_mlp: expert parallelism needs the model's ep group");
  FSDP_CHECK(!ctx.lora.layout, "cuda_moe_mlp: MoE blocks run on CUDA without LoRA");
  return make_moe_dims(*ctx.spec, ctx.dims.n, ctx.par.ep, ctx.par.ep_rank, ctx.dims.t);
}

// The shared exchange (moe_exchange.h) of host-staged rows over the ep group's device communicator: the
// rows go up to the device in T (the dispatch dtype: bf16 on a GPU, the float model's fp32 emulated), cross
// in one all-to-all (CudaModelComm records it) and come back down as fp32. The counts cross as fp32
// (exact below 2^24 rows per expert).
template <class T>
class DeviceExpertExchange final : public ExpertExchange {
 public:
  DeviceExpertExchange(CudaModelComm& comm, int ep, cudaStream_t stream) : comm_(comm), ep_(ep), stream_(stream) {
    FSDP_CHECK(comm.stream() == stream, "cuda_moe_mlp: the ep exchange runs on the block's stream");
  }
  void exchange_counts(const double* in, double* out, std::int64_t per_rank) override {
    const std::int64_t n = per_rank * ep_;
    std::vector<float> host(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < host.size(); ++i) {
      FSDP_CHECK(in[i] >= 0 && in[i] < double(1 << 24), "cuda_moe_mlp: a row count fp32 cannot carry");
      host[i] = float(in[i]);
    }
    float* dev = alloc<float>(2 * n);
    CUDA_CHECK(cudaMemcpyAsync(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
    comm_.exchange_counts_f32(dev, dev + n, per_rank);
    CUDA_CHECK(cudaMemcpyAsync(host.data(), dev + n, host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaFreeAsync(dev, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::copy(host.begin(), host.end(), out);
  }
  void all_to_allv(const float* in, const std::vector<std::int64_t>& send_rows, float* out,
                   const std::vector<std::int64_t>& recv_rows, std::int64_t width) override {
    const std::int64_t sent = sum(send_rows) * width, received = sum(recv_rows) * width;
    T* send = alloc<T>(std::max<std::int64_t>(sent, 1));
    T* recv = alloc<T>(std::max<std::int64_t>(received, 1));
    upload(send, std::vector<float>(in, in + sent), stream_);
    comm_.all_to_allv_rows(static_cast<const T*>(send), send_rows, recv, recv_rows, width);
    const std::vector<float> back = download(static_cast<const T*>(recv), received, stream_);
    std::copy(back.begin(), back.end(), out);
    CUDA_CHECK(cudaFreeAsync(send, stream_));
    CUDA_CHECK(cudaFreeAsync(recv, stream_));
  }
  void all_to_allv(const double*, const std::vector<std::int64_t>&, double*, const std::vector<std::int64_t>&,
                   std::int64_t) override {
    FSDP_CHECK(false, "cuda_moe_mlp: the host-staged MoE MLP runs in fp32");
  }

 private:
  static std::int64_t sum(const std::vector<std::int64_t>& v) {
    std::int64_t s = 0;
    for (std::int64_t x : v) s += x;
    return s;
  }
  template <class U>
  U* alloc(std::int64_t n) {
    void* p = nullptr;
    CUDA_CHECK(cudaMallocAsync(&p, std::size_t(n) * sizeof(U), stream_));
    return static_cast<U*>(p);
  }
  CudaModelComm& comm_;
  int ep_;  // the ep group's size (the counts' chunks)
  cudaStream_t stream_;
};

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
  std::optional<DeviceExpertExchange<T>> ex;
  if (d.ep > 1) ex.emplace(*ctx.comm, d.ep, ctx.stream);
  moe_forward(d, wh, x.data(), y.data(), a.moe, ctx.profiler, ctx.module, ex ? &*ex : nullptr);
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
  std::optional<DeviceExpertExchange<T>> ex;
  if (d.ep > 1) ex.emplace(*ctx.comm, d.ep, ctx.stream);
  moe_backward(d, wh, gh, x.data(), dy.data(), a.moe, ctx.moe_aux, dx.data(), s.moe, ctx.profiler, ctx.module,
               ex ? &*ex : nullptr);
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
