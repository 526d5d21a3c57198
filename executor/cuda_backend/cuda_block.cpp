// executor/cuda_backend/cuda_block.cpp — the device block: its buffers (activations, backward scratch,
// what zero bubble's split keeps), the arch's norm on the device (shared with the final norm), and
// cuda_block_forward / _backward / _backward_input / _backward_weight as the block's shared kernel-call
// sequence (executor/model/block_sequence.h) over the CUDA policy (cuda_block_policy.h), on one stream.
// With a profiler each kernel group is event-timed under the CPU block's names.
#include "executor/cuda_backend/cuda_block.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/cuda/attention.h"
#include "executor/cuda/bias.h"
#include "executor/cuda/norm.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/cuda_block_policy.h"
#include "executor/model/block_sequence.h"
#include "executor/model/block_tensor_names.h"

namespace fsdpx::cuda {
template <class T>
void CudaBlockActs<T>::allocate(const BlockDims& d, std::int64_t lora_u_elems) {
  const std::int64_t n = d.n, nl = d.n_local, mean_n = d.layernorm ? nl : 0;  // RMSNorm has no mean
  ln1 = DeviceBuffer<T>(n * d.c), ln1_mean = DeviceBuffer<float>(mean_n), ln1_rstd = DeviceBuffer<float>(nl);
  qkv = DeviceBuffer<T>(n * d.qkv);
  lse = DeviceBuffer<float>(flash_attention_lse_elems(d.attn));
  atty = DeviceBuffer<T>(n * d.q);
  x_mid = DeviceBuffer<T>(nl * d.c);
  ln2 = DeviceBuffer<T>(n * d.c), ln2_mean = DeviceBuffer<float>(mean_n), ln2_rstd = DeviceBuffer<float>(nl);
  fc = DeviceBuffer<T>(n * d.fu);
  fc_act = DeviceBuffer<T>(n * d.f);
  lora_u = DeviceBuffer<T>(lora_u_elems);
}

template <class T>
std::int64_t CudaBlockActs<T>::bytes() const {
  return ln1.bytes() + ln1_mean.bytes() + ln1_rstd.bytes() + qkv.bytes() + lse.bytes() + atty.bytes() +
         x_mid.bytes() + ln2.bytes() + ln2_mean.bytes() + ln2_rstd.bytes() + fc.bytes() + fc_act.bytes() +
         lora_u.bytes() + moe.bytes() + mla.bytes();
}

template <class T>
void CudaBlockScratch<T>::allocate(const BlockDims& d, bool has_bias, std::int64_t lora_rank) {
  const std::int64_t n = d.n;
  dln = DeviceBuffer<T>(n * d.c), datty = DeviceBuffer<T>(n * d.q), dqkv = DeviceBuffer<T>(n * d.qkv);
  dfc = DeviceBuffer<T>(n * d.fu), dfc_act = DeviceBuffer<T>(n * d.f);
  attn = DeviceBuffer<float>(flash_attention_scratch_elems(d.attn));
  norm = DeviceBuffer<float>(norm_backward_scratch_elems(n, d.c));
  bias = DeviceBuffer<float>(has_bias ? bias_backward_scratch_elems(n, std::max({d.qkv, d.c, d.fu})) : 0);
  lora_du = DeviceBuffer<T>(n * lora_rank);
  wide = DeviceBuffer<T>(d.n_local != d.n ? n * d.c : 0);
  if (!d.context_parallel()) return;
  const std::int64_t kvw = d.kv_width(), cp = d.t_kv / d.t;
  kv_local = DeviceBuffer<T>(n * kvw), kv_gathered = DeviceBuffer<T>(cp * n * kvw);
  kv_full = DeviceBuffer<T>(d.b * d.t_kv * kvw), dkv_full = DeviceBuffer<T>(d.b * d.t_kv * kvw);
}

template <class T>
std::int64_t CudaBlockScratch<T>::bytes() const {
  return dln.bytes() + datty.bytes() + dqkv.bytes() + dfc.bytes() + dfc_act.bytes() + attn.bytes() + norm.bytes() +
         bias.bytes() + lora_du.bytes() + wide.bytes() + kv_local.bytes() + kv_gathered.bytes() + kv_full.bytes() +
         dkv_full.bytes() + moe.bytes() + mla.bytes();
}

template <class T>
BlockTensors<const T*> block_params16(const ModuleLayout& m, const T* base) {
  return block_tensors_at(m, base);
}

template <class T>
void norm_forward16(const CudaBlockContext<T>& ctx, T* out, float* mean, float* rstd, const T* inp,
                       const T* w, const T* b) {
  const BlockDims& d = ctx.dims;
  const float eps = float(ctx.spec->norm_eps);
  if (ctx.spec->arch == Arch::gpt) layernorm_forward(out, mean, rstd, inp, w, b, d.n_local, d.c, eps, ctx.stream);
  else rmsnorm_forward(out, rstd, inp, w, d.n_local, d.c, eps, ctx.stream);
}

template <class T>
void norm_backward16(const CudaBlockContext<T>& ctx, T* dinp, float* dw, float* db, float* scratch,
                        const T* dout, const T* inp, const T* w, const float* mean, const float* rstd) {
  const BlockDims& d = ctx.dims;
  if (ctx.spec->arch == Arch::gpt)
    layernorm_backward(dinp, dw, db, scratch, dout, inp, w, mean, rstd, d.n_local, d.c, ctx.stream);
  else
    rmsnorm_backward(dinp, dw, scratch, dout, inp, w, rstd, d.n_local, d.c, ctx.stream);
}

template <class T>
void CudaBlockWeightGrads<T>::allocate(const BlockDims& d) {
  d_out = DeviceBuffer<T>(d.n * d.c), d_mid = DeviceBuffer<T>(d.n * d.c);
  dfc = DeviceBuffer<T>(d.n * d.fu), dqkv = DeviceBuffer<T>(d.n * d.qkv);
  norm = DeviceBuffer<float>(4 * d.c);
}

template <class T>
std::int64_t CudaBlockWeightGrads<T>::bytes() const {
  return d_out.bytes() + d_mid.bytes() + dfc.bytes() + dqkv.bytes() + norm.bytes();
}

template <class T>
void cuda_block_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const T* x_in, T* x_out,
                        CudaBlockActs<T>& a) {
  FSDP_CHECK(x_out != x_in, "cuda_block_forward: x_out aliases x_in");
  block_sequence::block_forward<CudaBlockPolicy<T>>(ctx, p, x_in, x_out, a);
}

template <class T>
void cuda_block_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p,
                         const BlockTensors<float*>& g, const T* x_in, const CudaBlockActs<T>& a, T* dres,
                         CudaBlockScratch<T>& scratch, GradPass pass, CudaBlockWeightGrads<T>* keep) {
  block_sequence::block_backward<CudaBlockPolicy<T>>(ctx, p, g, x_in, a, dres, scratch, pass, keep);
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template struct CudaBlockActs<T>;                                                                              \
  template struct CudaBlockScratch<T>;                                                                           \
  template struct CudaBlockWeightGrads<T>;                                                                       \
  template BlockTensors<const T*> block_params16<T>(const ModuleLayout&, const T*);                              \
  template void cuda_block_forward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&, const T*, T*,    \
                                      CudaBlockActs<T>&);                                                        \
  template void cuda_block_backward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&,                 \
                                       const BlockTensors<float*>&, const T*, const CudaBlockActs<T>&, T*,        \
                                       CudaBlockScratch<T>&, GradPass, CudaBlockWeightGrads<T>*);                 \
  template void norm_forward16<T>(const CudaBlockContext<T>&, T*, float*, float*, const T*, const T*, const T*);  \
  template void norm_backward16<T>(const CudaBlockContext<T>&, T*, float*, float*, float*, const T*, const T*,    \
                                   const T*, const float*, const float*);
FSDPX_CUDA_MODEL_TYPES(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
