// executor/cuda_backend/cuda_moe_mlp.cpp — the MoE MLP of a CUDA block on the device with its routing on the
// host (see cuda_moe_mlp.h), timed under the CPU's kernel names (moe_router, moe_topk, moe_permute,
// moe_experts_gate_up, moe_swiglu, moe_experts_down, moe_shared_gate_up, moe_shared_down and their _bwd).
// Forward: router GEMM (fp32 logits) -> logits down -> host routing and dispatch plan (moe_routing.h,
// moe_exchange.h) -> row indices up -> gather -> [ep > 1: all-to-all] -> per-expert GEMMs and SwiGLU ->
// [all-to-all back] -> weighted combine -> shared expert. Backward runs the reverse; the combine weights'
// gradient goes down and the router logits' gradient comes up for the host router backward.
#include "executor/cuda_backend/cuda_moe_mlp.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "core/errors.h"
#include "executor/cuda/activation.h"
#include "executor/cuda/context_attention.h"
#include "executor/cuda/moe.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/cuda_op_timer.h"
#include "executor/model/moe_exchange.h"
#include "executor/model/moe_routing.h"

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
  FSDP_CHECK(ctx.par.tp == 1 && ctx.par.cp == 1, "cuda_moe_mlp: MoE blocks run on CUDA without tensor or context parallelism");
  FSDP_CHECK(ctx.par.ep == 1 || ctx.comm != nullptr, "cuda_moe_mlp: expert parallelism needs the model's ep group");
  FSDP_CHECK(!ctx.lora.layout, "cuda_moe_mlp: MoE blocks run on CUDA without LoRA");
  return make_moe_dims(*ctx.spec, ctx.dims.n, ctx.par.ep, ctx.par.ep_rank, ctx.dims.t);
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
void route_on_host(const CudaBlockContext<T>& ctx, const MoeDims& d, const BlockTensors<const T*>& p,
                   CudaMoeActs<T>& a) {
  a.probs = download(static_cast<const float*>(a.logits.get()), d.n * d.e, ctx.stream);
  const std::vector<float> bias = d.score_bias ? download(p.router_bias, d.e, ctx.stream) : std::vector<float>{};
  moe_route(d, bias.empty() ? nullptr : bias.data(), a);
  std::optional<DeviceCountExchange> ex;
  if (d.ep > 1) ex.emplace(*ctx.comm, d.ep, ctx.stream);
  moe_plan_dispatch(d, a, ex ? &*ex : nullptr);
  upload_indices(d, a, ctx.stream);
}

// The experts on their side's rows: per chunk, up (gate | up), SwiGLU, down; in [R, C] -> out [R, C].
template <class T>
void experts_forward(const CudaBlockContext<T>& ctx, const MoeDims& d, const BlockTensors<const T*>& p, const T* in,
                     T* out, CudaMoeActs<T>& a) {
  const std::int64_t c = d.c, f = d.f;
  for (const ExpertChunk& k : a.chunks) {
    T* h = a.h.get() + k.r0 * 2 * f;
    T* act = a.act.get() + k.r0 * f;
    { const auto t = timed(ctx, "moe_experts_gate_up");
      matmul_forward<T>(*ctx.gemm, h, GemmOut::operand, in + k.r0 * c, p.experts_up_w + k.expert * 2 * f * c,
                        nullptr, k.rows, c, 2 * f, false, ctx.stream); }
    { const auto t = timed(ctx, "moe_swiglu");
      mlp_act_forward(FfnKind::swiglu, act, static_cast<const T*>(h), k.rows, f, ctx.stream); }
    const auto t = timed(ctx, "moe_experts_down");
    matmul_forward<T>(*ctx.gemm, out + k.r0 * c, GemmOut::operand, act, p.experts_down_w + k.expert * c * f,
                      nullptr, k.rows, f, c, false, ctx.stream);
  }
}

// The experts' backward on their side's rows: dy [R, C] -> dx [R, C] (written); their gradients +=.
template <class T>
void experts_backward(const CudaBlockContext<T>& ctx, const MoeDims& d, const BlockTensors<const T*>& p,
                      const BlockTensors<float*>& g, const CudaMoeActs<T>& a, const T* xin, const T* dy, T* dx,
                      CudaMoeScratch<T>& s) {
  const std::int64_t c = d.c, f = d.f, rows = std::max<std::int64_t>(a.expert_rows(), 1);
  ensure_elems(s.dact, rows * f, ctx.stream), ensure_elems(s.dh, rows * 2 * f, ctx.stream);
  CUDA_CHECK(cudaMemsetAsync(s.dh.get(), 0, std::size_t(rows * 2 * f) * sizeof(T), ctx.stream));  // act bwd +=
  for (const ExpertChunk& k : a.chunks) {
    const std::int64_t r0 = k.r0, ne = k.rows, ex = k.expert;
    { const auto t = timed(ctx, "moe_experts_down_bwd");
      matmul_backward_dx<T>(*ctx.gemm, s.dact.get() + r0 * f, GemmOut::operand, dy + r0 * c,
                            p.experts_down_w + ex * c * f, ne, f, c, false, ctx.stream);
      matmul_backward_dw<T>(*ctx.gemm, g.experts_down_w + ex * c * f, GemmOut::f32, dy + r0 * c,
                            a.act.get() + r0 * f, ne, f, c, true, ctx.stream); }
    { const auto t = timed(ctx, "moe_swiglu_bwd");
      mlp_act_backward(FfnKind::swiglu, s.dh.get() + r0 * 2 * f, static_cast<const T*>(s.dact.get() + r0 * f),
                       a.h.get() + r0 * 2 * f, ne, f, ctx.stream); }
    const auto t = timed(ctx, "moe_experts_gate_up_bwd");
    matmul_backward_dx<T>(*ctx.gemm, dx + r0 * c, GemmOut::operand, s.dh.get() + r0 * 2 * f,
                          p.experts_up_w + ex * 2 * f * c, ne, c, 2 * f, false, ctx.stream);
    matmul_backward_dw<T>(*ctx.gemm, g.experts_up_w + ex * 2 * f * c, GemmOut::f32, s.dh.get() + r0 * 2 * f,
                          xin + r0 * c, ne, c, 2 * f, true, ctx.stream);
  }
}

// DeepseekV3MoE's shared experts on every token: out [N, C] += down(silu(gate x) · up x).
template <class T>
void shared_forward(const CudaBlockContext<T>& ctx, const MoeDims& d, const BlockTensors<const T*>& p, const T* x,
                    T* out, CudaMoeActs<T>& a) {
  FSDP_CHECK(p.shared_up_w && p.shared_down_w, "cuda_moe_mlp: shared experts without their tensors");
  { const auto t = timed(ctx, "moe_shared_gate_up");
    matmul_forward<T>(*ctx.gemm, a.sh_h.get(), GemmOut::operand, x, p.shared_up_w, nullptr, d.n, d.c, 2 * d.sf,
                      false, ctx.stream);
    mlp_act_forward(FfnKind::swiglu, a.sh_act.get(), static_cast<const T*>(a.sh_h.get()), d.n, d.sf, ctx.stream); }
  const auto t = timed(ctx, "moe_shared_down");
  matmul_forward<T>(*ctx.gemm, out, GemmOut::operand, static_cast<const T*>(a.sh_act.get()), p.shared_down_w, nullptr,
                    d.n, d.sf, d.c, true, ctx.stream);
}

// The shared experts' backward: dx [N, C] += their input gradient from dout [N, C]; their gradients +=.
template <class T>
void shared_backward(const CudaBlockContext<T>& ctx, const MoeDims& d, const BlockTensors<const T*>& p,
                     const BlockTensors<float*>& g, const T* x, const T* dout, const CudaMoeActs<T>& a, T* dx,
                     CudaMoeScratch<T>& s) {
  { const auto t = timed(ctx, "moe_shared_down_bwd");
    matmul_backward_dx<T>(*ctx.gemm, s.sh_dact.get(), GemmOut::operand, dout, p.shared_down_w, d.n, d.sf, d.c, false,
                          ctx.stream);
    matmul_backward_dw<T>(*ctx.gemm, g.shared_down_w, GemmOut::f32, dout, a.sh_act.get(), d.n, d.sf, d.c, true,
                          ctx.stream); }
  const auto t = timed(ctx, "moe_shared_gate_up_bwd");
  zero_async(s.sh_dh, ctx.stream);
  mlp_act_backward(FfnKind::swiglu, s.sh_dh.get(), static_cast<const T*>(s.sh_dact.get()), a.sh_h.get(), d.n, d.sf,
                   ctx.stream);
  matmul_backward_dx<T>(*ctx.gemm, dx, GemmOut::operand, static_cast<const T*>(s.sh_dh.get()), p.shared_up_w, d.n,
                        d.c, 2 * d.sf, true, ctx.stream);
  matmul_backward_dw<T>(*ctx.gemm, g.shared_up_w, GemmOut::f32, static_cast<const T*>(s.sh_dh.get()), x, d.n, d.c,
                        2 * d.sf, true, ctx.stream);
}

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
  const MoeDims d = dims_of(ctx);
  FSDP_CHECK(p.router_w && p.experts_up_w && p.experts_down_w, "cuda_moe_mlp: the block has no MoE tensors");
  CudaMoeActs<T>& a = acts.moe;
  const T* x = acts.ln2.get();
  const std::int64_t c = d.c;
  { const auto t = timed(ctx, "moe_router");
    matmul_forward<T>(*ctx.gemm, a.logits.get(), GemmOut::f32, x, p.router_w, nullptr, d.n, c, d.e, false,
                      ctx.stream); }
  { const auto t = timed(ctx, "moe_topk");
    route_on_host(ctx, d, p, a); }
  { const auto t = timed(ctx, "moe_permute");
    gather_rows(a.xr.get(), x, static_cast<const std::int64_t*>(a.token_of_row.get()), d.rows(), c, ctx.stream); }
  const bool ep = d.ep > 1;
  const std::int64_t rows = std::max<std::int64_t>(a.expert_rows(), 1);
  ensure_elems(a.h, rows * 2 * d.f, ctx.stream), ensure_elems(a.act, rows * d.f, ctx.stream);
  if (ep) {
    ensure_elems(a.ex_x, rows * c, ctx.stream), ensure_elems(a.ex_y, rows * c, ctx.stream);
    ctx.comm->all_to_allv_rows(static_cast<const T*>(a.xr.get()), a.send_rows, a.ex_x.get(), a.recv_rows, c);
  }
  experts_forward(ctx, d, p, ep ? a.ex_x.get() : a.xr.get(), ep ? a.ex_y.get() : a.y.get(), a);
  if (ep) ctx.comm->all_to_allv_rows(static_cast<const T*>(a.ex_y.get()), a.recv_rows, a.y.get(), a.send_rows, c);
  { const auto t = timed(ctx, "moe_permute");
    moe_combine_rows(out, static_cast<const T*>(a.y.get()), static_cast<const std::int32_t*>(a.combine_rows.get()),
                     static_cast<const float*>(a.combine_weight.get()), d.n, d.k, c, false, ctx.stream); }
  if (d.sf > 0) shared_forward(ctx, d, p, x, out, a);
}

template <class T>
void cuda_moe_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const BlockTensors<float*>& g,
                       const CudaBlockActs<T>& acts, const T* dout, CudaBlockScratch<T>& scratch) {
  const MoeDims d = dims_of(ctx);
  const CudaMoeActs<T>& a = acts.moe;
  CudaMoeScratch<T>& s = scratch.moe;
  const T* x = acts.ln2.get();
  T* dx = scratch.dln.get();
  const std::int64_t c = d.c, rows = std::max<std::int64_t>(a.expert_rows(), 1);
  moe_routed_grads(s.dy.get(), s.dweight.get(), dout, a.y.get(), a.slot_of_row.get(), a.slot_weight.get(), d.rows(),
                   d.k, c, ctx.stream);
  if (d.ep > 1) {
    ensure_elems(s.ex_dy, rows * c, ctx.stream), ensure_elems(s.ex_dx, rows * c, ctx.stream);
    ctx.comm->all_to_allv_rows(static_cast<const T*>(s.dy.get()), a.send_rows, s.ex_dy.get(), a.recv_rows, c);
    experts_backward(ctx, d, p, g, a, a.ex_x.get(), s.ex_dy.get(), s.ex_dx.get(), s);
    ctx.comm->all_to_allv_rows(static_cast<const T*>(s.ex_dx.get()), a.recv_rows, s.dxr.get(), a.send_rows, c);
  } else {
    experts_backward(ctx, d, p, g, a, a.xr.get(), s.dy.get(), s.dxr.get(), s);
  }
  moe_combine_rows(dx, static_cast<const T*>(s.dxr.get()), a.combine_rows.get(), nullptr, d.n, d.k, c, false,
                   ctx.stream);
  if (d.sf > 0) shared_backward(ctx, d, p, g, x, dout, a, dx, s);
  const auto t = timed(ctx, "moe_router_bwd");
  const std::vector<float> dweight = download(static_cast<const float*>(s.dweight.get()), d.rows(), ctx.stream);
  moe_router_backward(d, a, dweight.data(), ctx.moe_aux, s.dprobs.data(), s.dlogits_host.data());
  upload(s.dlogits.get(), s.dlogits_host, ctx.stream);
  matmul_backward_dx<T>(*ctx.gemm, dx, GemmOut::operand, static_cast<const T*>(s.dlogits.get()), p.router_w, d.n, c,
                        d.e, true, ctx.stream);
  matmul_backward_dw<T>(*ctx.gemm, g.router_w, GemmOut::f32, static_cast<const T*>(s.dlogits.get()), x, d.n, c, d.e,
                        true, ctx.stream);
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
