// executor/cuda_backend/cuda_moe_mlp.cpp — the MoE MLP of a CUDA block on the device with its routing on the
// host (see cuda_moe_mlp.h): the shared kernel-call sequence (executor/model/moe_sequence.h: the CPU's order
// and kernel names) over the device policy below. The router GEMM's fp32 logits go down, the host routing
// and dispatch plan (moe_routing.h, moe_exchange.h) run there and the row indices go up; backward, the
// combine weights' gradient goes down and the router logits' gradient comes up for the host router backward.
#include "executor/cuda_backend/cuda_moe_mlp.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "core/errors.h"
#include "executor/cuda/context_attention.h"  // gather_rows
#include "executor/cuda/moe.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/cuda_sequence_kernels.h"
#include "executor/model/moe_exchange.h"
#include "executor/model/moe_routing.h"
#include "executor/model/moe_sequence.h"

namespace fsdpx::cuda {
namespace {

// host [n] (fp32) = device src [n] (T); zeros when src is null. Waits for the stream: what the kernels before
// it wrote is there.
template <class T>
std::vector<float> download(const T* src, std::int64_t n, cudaStream_t stream) {
  std::vector<float> out(static_cast<std::size_t>(n));
  if (n == 0 || src == nullptr) return out;
  std::vector<T> raw(out.size());
  CUDA_CHECK(cudaMemcpyAsync(raw.data(), src, raw.size() * sizeof(T), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  for (std::size_t i = 0; i < raw.size(); ++i) out[i] = static_cast<float>(raw[i]);
  return out;
}

// dst [n] = src [n] (host), landed when this returns.
template <class U>
void put(U* dst, const std::vector<U>& src, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src.data(), src.size() * sizeof(U), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

// device dst [n] (T) = host src [n] (fp32, rounded to T); returns once the copy has landed.
template <class T>
void upload(T* dst, const std::vector<float>& src, cudaStream_t stream) {
  if (src.empty() || dst == nullptr) return;
  std::vector<T> raw(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) raw[i] = T(src[i]);
  put(dst, raw, stream);
}

template <class T>
MoeDims dims_of(const CudaBlockContext<T>& ctx) {
  FSDP_CHECK(!ctx.lora.layout, "cuda_moe_mlp: MoE blocks run on CUDA without LoRA");
  return moe_block_dims(ctx);
}

// The ep group's per-expert row counts (the dispatch plan's metadata, moe_exchange.h) over the device
// communicator: up as fp32 (exact below 2^24 rows per expert), across, and down. The rows themselves cross
// on the device (CudaModelComm::all_to_allv_rows), never through this host interface.
class DeviceCountExchange final : public ExpertExchange {
 public:
  DeviceCountExchange(CudaModelComm& comm, int ep, cudaStream_t stream) : comm_(comm), ep_(ep), stream_(stream) {
    FSDP_CHECK(comm.stream() == stream, "cuda_moe_mlp: the ep exchange runs on the block's stream");
  }
  void exchange_counts(const double* in, double* out, std::int64_t per_rank) override {
    const std::int64_t n = per_rank * ep_;
    std::vector<float> host(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < host.size(); ++i) {
      FSDP_CHECK(in[i] >= 0 && in[i] < double(1 << 24), "cuda_moe_mlp: a row count fp32 cannot carry");
      host[i] = float(in[i]);
    }
    DeviceBuffer<float> dev(2 * n);
    upload(dev.get(), host, stream_);
    comm_.exchange_counts_f32(dev.get(), dev.get() + n, per_rank);
    const std::vector<float> back = download(static_cast<const float*>(dev.get() + n), n, stream_);
    std::copy(back.begin(), back.end(), out);
  }
  void all_to_allv(const float*, const std::vector<std::int64_t>&, float*, const std::vector<std::int64_t>&,
                   std::int64_t) override {
    FSDP_CHECK(false, "cuda_moe_mlp: routed rows cross on the device (all_to_allv_rows)");
  }
  void all_to_allv(const double*, const std::vector<std::int64_t>&, double*, const std::vector<std::int64_t>&,
                   std::int64_t) override {
    FSDP_CHECK(false, "cuda_moe_mlp: routed rows cross on the device (all_to_allv_rows)");
  }

 private:
  CudaModelComm& comm_;
  int ep_;  // the ep group's size (the counts' chunks)
  cudaStream_t stream_;
};

// The routing's row indices and weights for the kernels (cuda/moe.h), uploaded.
template <class T>
void upload_indices(const MoeDims& d, CudaMoeActs<T>& a, cudaStream_t stream) {
  const std::size_t rows = std::size_t(d.rows());
  std::vector<std::int32_t> slot(rows), combine(rows);
  std::vector<float> combine_w(rows);
  for (std::size_t r = 0; r < rows; ++r) slot[r] = std::int32_t(a.token_of[r] * d.k + a.slot_of[r]);
  for (std::int64_t i = 0; i < d.n; ++i) {  // each token's rows ascending: the CPU's expert-major sum order
    std::vector<std::int64_t> s(std::size_t(d.k));
    for (std::int64_t j = 0; j < d.k; ++j) s[std::size_t(j)] = j;
    std::sort(s.begin(), s.end(), [&](std::int64_t x, std::int64_t y) {
      return a.row_of[std::size_t(i * d.k + x)] < a.row_of[std::size_t(i * d.k + y)];
    });
    for (std::int64_t j = 0; j < d.k; ++j) {
      const std::size_t from = std::size_t(i * d.k + s[std::size_t(j)]), to = std::size_t(i * d.k + j);
      combine[to] = std::int32_t(a.row_of[from]), combine_w[to] = a.weight[from];
    }
  }
  put(a.token_of_row.get(), a.token_of, stream), put(a.slot_of_row.get(), slot, stream);
  put(a.combine_rows.get(), combine, stream), put(a.combine_weight.get(), combine_w, stream);
  put(a.slot_weight.get(), a.weight, stream);
}

// The routing on the host from the device's logits, then the dispatch plan (counts across the ep group).
template <class T>
void route_on_host(const CudaBlockContext<T>& ctx, const MoeDims& d, const MoeTensors<const T*>& p,
                   CudaMoeActs<T>& a) {
  a.probs = download(static_cast<const float*>(a.logits.get()), d.n * d.e, ctx.stream);
  const std::vector<float> bias = d.score_bias ? download(p.score_bias, d.e, ctx.stream) : std::vector<float>{};
  moe_route(d, bias.empty() ? nullptr : bias.data(), a);
  std::optional<DeviceCountExchange> ex;
  if (d.ep > 1) ex.emplace(*ctx.comm, d.ep, ctx.stream);
  moe_plan_dispatch(d, a, ex ? &*ex : nullptr);
  upload_indices(d, a, ctx.stream);
}

// The device policy of moe_sequence.h: the shared launches (cuda_sequence_kernels.h), the router's fp32
// logits, the host routing between the passes' syncs, and the routed rows' kernels (cuda/moe.h); rows
// cross the ep group on the device. dx is written (to_tokens is its first write).
template <class T>
struct CudaMoePolicy : CudaSequenceKernels<T> {
  using Ctx = CudaBlockContext<T>;
  using Acts = CudaMoeActs<T>;
  using Scratch = CudaMoeScratch<T>;

  static void router(const Ctx& ctx, const MoeDims& d, const MoeTensors<const T*>& p, const T* x, Acts& a) {
    matmul_forward<T>(*ctx.gemm, a.logits.get(), GemmOut::f32, x, p.router_w, nullptr, d.n, d.c, d.e, false,
                      ctx.stream);
  }
  static void route(const Ctx& ctx, const MoeDims& d, const MoeTensors<const T*>& p, Acts& a) {
    route_on_host(ctx, d, p, a);
  }
  static void gather(const Ctx& ctx, const MoeDims& d, const T* x, Acts& a) {
    gather_rows(a.xr.get(), x, static_cast<const std::int64_t*>(a.token_of_row.get()), d.rows(), d.c, ctx.stream);
  }
  static void reserve(const Ctx& ctx, const MoeDims& d, Acts& a) {
    const std::int64_t rows = std::max<std::int64_t>(a.expert_rows(), 1);
    ensure_elems(a.h, rows * 2 * d.f, ctx.stream), ensure_elems(a.act, rows * d.f, ctx.stream);
    if (d.ep > 1) ensure_elems(a.ex_x, rows * d.c, ctx.stream), ensure_elems(a.ex_y, rows * d.c, ctx.stream);
  }
  static void exchange(const Ctx& ctx, const MoeDims& d, const T* from, const std::vector<std::int64_t>& from_rows,
                       T* to, const std::vector<std::int64_t>& to_rows) {
    ctx.comm->all_to_allv_rows(from, from_rows, to, to_rows, d.c);
  }
  static void combine(const Ctx& ctx, const MoeDims& d, const Acts& a, T* out) {
    moe_combine_rows(out, static_cast<const T*>(a.y.get()), static_cast<const std::int32_t*>(a.combine_rows.get()),
                     static_cast<const float*>(a.combine_weight.get()), d.n, d.k, d.c, false, ctx.stream);
  }
  static void routed_grads(const Ctx& ctx, const MoeDims& d, const T* dout, const Acts& a, Scratch& s) {
    moe_routed_grads(s.dy.get(), s.dweight.get(), dout, static_cast<const T*>(a.y.get()),
                     static_cast<const std::int32_t*>(a.slot_of_row.get()), static_cast<const float*>(a.slot_weight.get()),
                     d.rows(), d.k, d.c, ctx.stream);
  }
  static void reserve_grads(const Ctx& ctx, const MoeDims& d, const Acts& a, Scratch& s) {
    const std::int64_t rows = std::max<std::int64_t>(a.expert_rows(), 1);
    ensure_elems(s.ex_dy, rows * d.c, ctx.stream), ensure_elems(s.ex_dx, rows * d.c, ctx.stream);
  }
  static void prepare_expert_grads(const Ctx& ctx, const MoeDims& d, const Acts& a, Scratch& s) {
    const std::int64_t rows = std::max<std::int64_t>(a.expert_rows(), 1);
    ensure_elems(s.dact, rows * d.f, ctx.stream), ensure_elems(s.dh, rows * 2 * d.f, ctx.stream);
    CudaMoePolicy::zero(ctx, s.dh.get(), rows * 2 * d.f);  // the SwiGLU backward adds
  }
  static void to_tokens(const Ctx& ctx, const MoeDims& d, const Acts& a, const T* dxr, T* dx) {
    moe_combine_rows(dx, dxr, static_cast<const std::int32_t*>(a.combine_rows.get()), nullptr, d.n, d.k, d.c, false,
                     ctx.stream);
  }
  // The combine weights' gradient down, the host router backward, the logits' gradient up.
  static const T* router_backward(const Ctx& ctx, const MoeDims& d, const Acts& a, Scratch& s) {
    const std::vector<float> dweight = download(static_cast<const float*>(s.dweight.get()), d.rows(), ctx.stream);
    moe_router_backward(d, a, dweight.data(), ctx.moe_aux, s.dprobs.data(), s.dlogits_host.data());
    upload(s.dlogits.get(), s.dlogits_host, ctx.stream);
    return s.dlogits.get();
  }
};

}  // namespace

template <class T>
void CudaMoeActs<T>::allocate(const MoeDims& d) {
  MoeRoutes<float>::allocate(d);
  const std::int64_t rows = d.rows();
  logits = DeviceBuffer<float>(d.n * d.e);
  xr = DeviceBuffer<T>(rows * d.c), y = DeviceBuffer<T>(rows * d.c);
  h = DeviceBuffer<T>(rows * 2 * d.f), act = DeviceBuffer<T>(rows * d.f);  // grown per dispatch at ep > 1
  sh_h = DeviceBuffer<T>(d.n * 2 * d.sf), sh_act = DeviceBuffer<T>(d.n * d.sf);
  token_of_row = DeviceBuffer<std::int64_t>(rows), slot_of_row = DeviceBuffer<std::int32_t>(rows);
  combine_rows = DeviceBuffer<std::int32_t>(rows);
  slot_weight = DeviceBuffer<float>(rows), combine_weight = DeviceBuffer<float>(rows);
}

template <class T>
std::int64_t CudaMoeActs<T>::bytes() const {
  return logits.bytes() + xr.bytes() + y.bytes() + ex_x.bytes() + ex_y.bytes() + h.bytes() + act.bytes() +
         sh_h.bytes() + sh_act.bytes() + token_of_row.bytes() + slot_of_row.bytes() + combine_rows.bytes() +
         slot_weight.bytes() + combine_weight.bytes();
}

template <class T>
void CudaMoeScratch<T>::allocate(const MoeDims& d) {
  const std::int64_t rows = d.rows();
  dy = DeviceBuffer<T>(rows * d.c), dxr = DeviceBuffer<T>(rows * d.c);
  dact = DeviceBuffer<T>(rows * d.f), dh = DeviceBuffer<T>(rows * 2 * d.f);  // grown per dispatch at ep > 1
  sh_dact = DeviceBuffer<T>(d.n * d.sf), sh_dh = DeviceBuffer<T>(d.n * 2 * d.sf);
  dlogits = DeviceBuffer<T>(d.n * d.e), dweight = DeviceBuffer<float>(rows);
  dprobs.assign(std::size_t(d.n * d.e), 0.0f), dlogits_host.assign(std::size_t(d.n * d.e), 0.0f);
}

template <class T>
std::int64_t CudaMoeScratch<T>::bytes() const {
  return dy.bytes() + dxr.bytes() + ex_dy.bytes() + ex_dx.bytes() + dact.bytes() + dh.bytes() + sh_dact.bytes() +
         sh_dh.bytes() + dlogits.bytes() + dweight.bytes();
}

template <class T>
void cuda_moe_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, CudaBlockActs<T>& acts, T* out) {
  moe_sequence::forward<CudaMoePolicy<T>>(ctx, dims_of(ctx), moe_tensors(p), static_cast<const T*>(acts.ln2.get()),
                                          out, acts.moe);
}

template <class T>
void cuda_moe_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const BlockTensors<float*>& g,
                       const CudaBlockActs<T>& acts, const T* dout, CudaBlockScratch<T>& scratch) {
  moe_sequence::backward<CudaMoePolicy<T>>(ctx, dims_of(ctx), moe_tensors(p), moe_tensors(g),
                                           static_cast<const T*>(acts.ln2.get()), dout, acts.moe, scratch.moe,
                                           scratch.dln.get());
}

void add_to_device_scalar(float* loss_device, float add, cudaStream_t stream) {
  std::vector<float> v = download(static_cast<const float*>(loss_device), 1, stream);
  v[0] += add;
  upload(loss_device, v, stream);
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template struct CudaMoeActs<T>;                                                                                \
  template struct CudaMoeScratch<T>;                                                                             \
  template void cuda_moe_forward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&, CudaBlockActs<T>&, \
                                    T*);                                                                         \
  template void cuda_moe_backward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&,                  \
                                     const BlockTensors<float*>&, const CudaBlockActs<T>&, const T*,             \
                                     CudaBlockScratch<T>&);
FSDPX_CUDA_MODEL_TYPES(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
