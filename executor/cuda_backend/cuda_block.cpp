// executor/cuda_backend/cuda_block.cpp — block forward/backward as a sequence of CUDA launches on one
// stream, step for step executor/model/block.cpp. Accumulate-vs-write per kernel (headers in
// executor/cuda/): GEMM dx is written (accumulate=false, so its scratch needs no zeroing), GEMM dW is
// accumulated in fp32; mlp_act_backward and flash_attention_backward accumulate, so dfc and dqkv are
// zeroed first; norm backward accumulates dinp into dres (the residual branch, as llm.c) and dw/db.
// Zero bubble's split: the input pass keeps each linear's output gradient and the norms' gradients of
// the micro-batch; the weight pass runs the dW GEMMs (and bias sums) from them and adds the norms'.
// Profiling: each kernel group sits in a CudaScopedOp named as its ScopedOp in block.cpp; a scope also
// holds the zeroing of the buffer its kernel accumulates into, and a linear's bias gradient is in _dw.
// Tensor parallelism (tp > 1): g sums each row-parallel output before its residual add, f's backward each
// half's input gradient before its norm's backward, both through executor/model/tp_region.h as the CPU
// block does; with sequence parallelism the norms and residuals run on the rank's N_local tokens.
// LoRA: each adapted projection's adapter runs right after its base GEMM (forward) and its input-gradient
// GEMM (backward), timed as "lora" / "lora_bwd" once per target as block.cpp's adapter_forward/_backward.
#include "executor/cuda_backend/cuda_block.h"

#include <algorithm>
#include <string_view>

#include "core/errors.h"
#include "executor/cuda/activation.h"
#include "executor/cuda/attention.h"
#include "executor/cuda/bias.h"
#include "executor/cuda_backend/cuda_attention_core.h"
#include "executor/cuda/norm.h"
#include "executor/cuda/rope.h"
#include "executor/cuda_backend/cuda_op_timer.h"
#include "executor/cuda_backend/grad_kernels.h"
#include "executor/cuda/cuda_check.h"

namespace fsdpx::cuda {
namespace {

template <class T>
const T* param(const ModuleLayout& m, const T* base, const char* name) {
  const TensorSlot* t = m.find(name);
  return t ? base + t->offset : nullptr;
}

// The timing scope of one kernel group of the block (module) that ctx describes; free without a profiler.
template <class T>
CudaScopedOp timed(const CudaBlockContext<T>& ctx, std::string_view op) {
  return CudaScopedOp(ctx.profiler, op, ctx.module, ctx.stream);
}

// The tensor-parallel region of a half (nothing with tp = 1).
template <class T>
TpRegionT<CudaModelComm> region(const CudaBlockContext<T>& ctx) {
  return {ctx.par, ctx.comm, ctx.dims.n, ctx.dims.n_local, ctx.dims.c};
}

// LoRA's adapter on one projection's output y [N, width] (nothing without LoRA or when `t` is not adapted).
template <class T>
void adapter_forward(const CudaBlockContext<T>& ctx, LoraTarget t, const T* x, T* y, std::int64_t width,
                     CudaBlockActs<T>& a) {
  if (!ctx.lora.layout) return;
  const auto timer = timed(ctx, "lora");
  lora_forward16(*ctx.gemm, ctx.lora, t, x, y, width, ctx.dims.n, a.lora_u.get(), ctx.stream);
}

template <class T>
void adapter_backward(const CudaBlockContext<T>& ctx, LoraTarget t, const T* x, const T* dy, std::int64_t width,
                      T* dx, const CudaBlockActs<T>& a, CudaBlockScratch<T>& sc) {
  if (!ctx.lora.layout) return;
  const auto timer = timed(ctx, "lora_bwd");
  lora_backward16(*ctx.gemm, ctx.lora, t, x, dy, width, dx, ctx.dims.n, a.lora_u.get(), sc.lora_du.get(),
                     ctx.stream);
}

}  // namespace

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
         lora_u.bytes();
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
         dkv_full.bytes();
}

template <class T>
BlockTensors<const T*> block_params16(const ModuleLayout& m, const T* base) {
  FSDP_CHECK(base != nullptr, "block_params16: null buffer for " + m.name);
  return BlockTensors<const T*>{
      param(m, base, "attn_norm.weight"), param(m, base, "attn_norm.bias"), param(m, base, "qkv.weight"),
      param(m, base, "qkv.bias"),         param(m, base, "attn_out.weight"), param(m, base, "attn_out.bias"),
      param(m, base, "mlp_norm.weight"),  param(m, base, "mlp_norm.bias"),  param(m, base, "mlp_up.weight"),
      param(m, base, "mlp_up.bias"),      param(m, base, "mlp_down.weight"), param(m, base, "mlp_down.bias")};
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

namespace {

// A row-parallel output projection (attn_out, mlp_down) and its adapter: out [N_local, C] = the sum over
// tp of x [N, k] · Wᵀ (+ bias), through `wide` [N, C] under sequence parallelism (g: tp_region.h).
template <class T>
void out_projection(const CudaBlockContext<T>& ctx, std::string_view op, LoraTarget target, const T* x, const T* w,
                    const T* b, std::int64_t k, T* out, CudaBlockActs<T>& a) {
  const BlockDims& d = ctx.dims;
  T* wide = ctx.par.sp() ? ctx.scratch->wide.get() : out;
  { const auto t = timed(ctx, op);
    matmul_forward(*ctx.gemm, wide, GemmOut::operand, x, w, b, d.n, k, d.c, false, ctx.stream); }
  adapter_forward(ctx, target, x, wide, d.c, a);
  region(ctx).exit(wide, out);
}

// A norm of the rank's N_local rows into its rows of ln [N, C], gathered over tp under sequence
// parallelism (f: tp_region.h).
template <class T>
void norm_and_enter(const CudaBlockContext<T>& ctx, std::string_view op, T* ln, float* mean, float* rstd, const T* x,
                    const T* w, const T* b) {
  const auto tp = region(ctx);
  { const auto t = timed(ctx, op);
    norm_forward16(ctx, ln + tp.local_row() * ctx.dims.c, mean, rstd, x, w, b); }
  tp.enter(ln);
}

}  // namespace

template <class T>
void cuda_block_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const T* x_in,
                        T* x_out, CudaBlockActs<T>& a) {
  const BlockDims& d = ctx.dims;
  GemmContext& gemm = *ctx.gemm;
  const cudaStream_t s = ctx.stream;
  FSDP_CHECK(x_out != x_in, "cuda_block_forward: x_out aliases x_in");
  norm_and_enter(ctx, "attn_norm", a.ln1.get(), a.ln1_mean.get(), a.ln1_rstd.get(), x_in, p.attn_norm_w, p.attn_norm_b);
  { const auto t = timed(ctx, "qkv");
    matmul_forward(gemm, a.qkv.get(), GemmOut::operand, a.ln1.get(), p.qkv_w, p.qkv_b, d.n, d.c, d.qkv, false, s); }
  for (LoraTarget t : {LoraTarget::q, LoraTarget::k, LoraTarget::v})
    adapter_forward(ctx, t, a.ln1.get(), a.qkv.get(), d.qkv, a);
  if (ctx.rope_cos) {
    const auto t = timed(ctx, "rope");
    rope_forward(a.qkv.get(), ctx.rope_cos, ctx.rope_sin, d.b, d.t, d.attn.nh, d.attn.nkv, d.attn.hd, s);
  }
  block_detail::attention_forward(ctx, a);
  // x_out [N_local, C] serves as the attention branch's output before the residual add (as the CPU block).
  out_projection(ctx, "attn_out", LoraTarget::o, a.atty.get(), p.attn_out_w, p.attn_out_b, d.q, x_out, a);
  { const auto t = timed(ctx, "attn_residual");
    residual_forward(a.x_mid.get(), x_in, x_out, d.n_local * d.c, s); }
  norm_and_enter(ctx, "mlp_norm", a.ln2.get(), a.ln2_mean.get(), a.ln2_rstd.get(), a.x_mid.get(), p.mlp_norm_w,
                 p.mlp_norm_b);
  { const auto t = timed(ctx, "mlp_up");
    matmul_forward(gemm, a.fc.get(), GemmOut::operand, a.ln2.get(), p.mlp_up_w, p.mlp_up_b, d.n, d.c, d.fu, false, s); }
  for (LoraTarget t : {LoraTarget::gate, LoraTarget::up}) adapter_forward(ctx, t, a.ln2.get(), a.fc.get(), d.fu, a);
  { const auto t = timed(ctx, "mlp_act");
    mlp_act_forward(ctx.spec->ffn_kind, a.fc_act.get(), a.fc.get(), d.n, d.f, s); }
  out_projection(ctx, "mlp_down", LoraTarget::down, a.fc_act.get(), p.mlp_down_w, p.mlp_down_b, d.f, x_out, a);
  { const auto t = timed(ctx, "mlp_residual");
    residual_forward(x_out, a.x_mid.get(), x_out, d.n_local * d.c, s); }
}

template <class T>
void CudaBlockWeightGrads<T>::allocate(const BlockDims& d) {
  dout = DeviceBuffer<T>(d.n * d.c), dx_mid = DeviceBuffer<T>(d.n * d.c);
  dfc = DeviceBuffer<T>(d.n * d.fu), dqkv = DeviceBuffer<T>(d.n * d.qkv);
  norm = DeviceBuffer<float>(4 * d.c);
}

template <class T>
std::int64_t CudaBlockWeightGrads<T>::bytes() const {
  return dout.bytes() + dx_mid.bytes() + dfc.bytes() + dqkv.bytes() + norm.bytes();
}

namespace {

template <class T>
void copy16(T* dst, const T* src, std::int64_t n, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, std::size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice, stream));
}

// dinp [N, C] = dout [N, OC]·W (written, T).
template <class T>
void linear_dx(const CudaBlockContext<T>& ctx, std::string_view op, T* dinp, const T* dout, const T* w,
               std::int64_t c, std::int64_t oc) {
  const auto t = timed(ctx, op);
  matmul_backward_dx(*ctx.gemm, dinp, GemmOut::operand, dout, w, ctx.dims.n, c, oc, false, ctx.stream);
}

// dW [OC, C] += doutᵀ·inp (fp32), db [OC] += Σ_n dout when the layer has a bias (timed with dW, as on
// the CPU).
template <class T>
void linear_dw(const CudaBlockContext<T>& ctx, CudaBlockScratch<T>& sc, std::string_view op, float* dw, float* db,
               const T* dout, const T* inp, std::int64_t c, std::int64_t oc) {
  FSDP_CHECK(dw != nullptr || db == nullptr, "linear_dw: a bias gradient without its weight's");
  if (!dw) return;  // LoRA's frozen base: no weight-gradient GEMM
  const auto t = timed(ctx, op);
  matmul_backward_dw(*ctx.gemm, dw, GemmOut::f32, dout, inp, ctx.dims.n, c, oc, true, ctx.stream);
  if (db) bias_backward(db, sc.bias.get(), dout, ctx.dims.n, oc, ctx.stream);
}

// The norm gradients of one micro-batch go to `keep` (zeroed first: the kernels accumulate) in the
// input pass: w at offset 0, b at offset C of the half's two slots.
template <class T>
float* kept_norm(CudaBlockWeightGrads<T>* keep, int slot, std::int64_t c) { return keep->norm.get() + slot * c; }

// The MLP half: dres is d x_out on entry and d x_mid on exit. With `keep` (zero bubble's input pass)
// no parameter gradient is written: the output gradients the weight pass needs are kept instead.
template <class T>
void mlp_half_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p,
                       const BlockTensors<float*>& g, const CudaBlockActs<T>& a, T* dres, CudaBlockScratch<T>& sc,
                       CudaBlockWeightGrads<T>* keep) {
  const BlockDims& d = ctx.dims;
  if (keep) copy16(keep->dout.get(), dres, d.n * d.c, ctx.stream);
  const T* dy = region(ctx).exit_backward(static_cast<const T*>(dres), sc.wide.get());  // g's backward
  linear_dx(ctx, "mlp_down_dx", sc.dfc_act.get(), dy, p.mlp_down_w, d.f, d.c);
  adapter_backward(ctx, LoraTarget::down, a.fc_act.get(), dy, d.c, sc.dfc_act.get(), a, sc);
  if (!keep) linear_dw(ctx, sc, "mlp_down_dw", g.mlp_down_w, g.mlp_down_b, dy, a.fc_act.get(), d.f, d.c);
  T* dfc = keep ? keep->dfc.get() : sc.dfc.get();
  { const auto t = timed(ctx, "mlp_act_bwd");
    CUDA_CHECK(cudaMemsetAsync(dfc, 0, std::size_t(d.n * d.fu) * sizeof(T), ctx.stream));  // accumulates
    mlp_act_backward(ctx.spec->ffn_kind, dfc, sc.dfc_act.get(), a.fc.get(), d.n, d.f, ctx.stream); }
  linear_dx(ctx, "mlp_up_dx", sc.dln.get(), dfc, p.mlp_up_w, d.c, d.fu);
  for (LoraTarget t : {LoraTarget::gate, LoraTarget::up})
    adapter_backward(ctx, t, a.ln2.get(), dfc, d.fu, sc.dln.get(), a, sc);
  if (!keep) linear_dw(ctx, sc, "mlp_up_dw", g.mlp_up_w, g.mlp_up_b, dfc, a.ln2.get(), d.c, d.fu);
  region(ctx).enter_backward(sc.dln.get());  // f's backward: the column-parallel input gradients summed
  float* dw = keep ? kept_norm(keep, 2, d.c) : g.mlp_norm_w;
  float* db = keep ? (p.mlp_norm_b ? kept_norm(keep, 3, d.c) : nullptr) : g.mlp_norm_b;
  const auto t = timed(ctx, "mlp_norm_bwd");
  norm_backward16(ctx, dres, dw, db, sc.norm.get(), sc.dln.get() + region(ctx).local_row() * d.c, a.x_mid.get(),
                  p.mlp_norm_w, a.ln2_mean.get(), a.ln2_rstd.get());
}

// The attention half: dres is d x_mid on entry and d x_in on exit; `keep` as in the MLP half.
template <class T>
void attention_half_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p,
                             const BlockTensors<float*>& g, const T* x_in, const CudaBlockActs<T>& a, T* dres,
                             CudaBlockScratch<T>& sc, CudaBlockWeightGrads<T>* keep) {
  const BlockDims& d = ctx.dims;
  if (keep) copy16(keep->dx_mid.get(), dres, d.n * d.c, ctx.stream);
  const T* dy = region(ctx).exit_backward(static_cast<const T*>(dres), sc.wide.get());
  linear_dx(ctx, "attn_out_dx", sc.datty.get(), dy, p.attn_out_w, d.q, d.c);
  adapter_backward(ctx, LoraTarget::o, a.atty.get(), dy, d.c, sc.datty.get(), a, sc);
  if (!keep) linear_dw(ctx, sc, "attn_out_dw", g.attn_out_w, g.attn_out_b, dy, a.atty.get(), d.q, d.c);
  T* dqkv = keep ? keep->dqkv.get() : sc.dqkv.get();
  block_detail::attention_backward(ctx, a, sc, dqkv);
  if (ctx.rope_cos) {
    const auto t = timed(ctx, "rope_bwd");
    rope_backward(dqkv, ctx.rope_cos, ctx.rope_sin, d.b, d.t, d.attn.nh, d.attn.nkv, d.attn.hd, ctx.stream);
  }
  linear_dx(ctx, "qkv_dx", sc.dln.get(), dqkv, p.qkv_w, d.c, d.qkv);
  for (LoraTarget t : {LoraTarget::q, LoraTarget::k, LoraTarget::v})
    adapter_backward(ctx, t, a.ln1.get(), dqkv, d.qkv, sc.dln.get(), a, sc);
  if (!keep) linear_dw(ctx, sc, "qkv_dw", g.qkv_w, g.qkv_b, dqkv, a.ln1.get(), d.c, d.qkv);
  region(ctx).enter_backward(sc.dln.get());
  float* dw = keep ? kept_norm(keep, 0, d.c) : g.attn_norm_w;
  float* db = keep ? (p.attn_norm_b ? kept_norm(keep, 1, d.c) : nullptr) : g.attn_norm_b;
  const auto t = timed(ctx, "attn_norm_bwd");
  norm_backward16(ctx, dres, dw, db, sc.norm.get(), sc.dln.get() + region(ctx).local_row() * d.c, x_in,
                  p.attn_norm_w, a.ln1_mean.get(), a.ln1_rstd.get());
}

}  // namespace

template <class T>
void cuda_block_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p,
                         const BlockTensors<float*>& g, const T* x_in, const CudaBlockActs<T>& a, T* dres,
                         CudaBlockScratch<T>& scratch) {
  mlp_half_backward<T>(ctx, p, g, a, dres, scratch, nullptr);
  attention_half_backward<T>(ctx, p, g, x_in, a, dres, scratch, nullptr);
}

template <class T>
void cuda_block_backward_input(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const T* x_in,
                               const CudaBlockActs<T>& a, T* dres, CudaBlockScratch<T>& scratch,
                               CudaBlockWeightGrads<T>& keep) {
  zero_async(keep.norm, ctx.stream);
  mlp_half_backward(ctx, p, BlockTensors<float*>{}, a, dres, scratch, &keep);
  attention_half_backward(ctx, p, BlockTensors<float*>{}, x_in, a, dres, scratch, &keep);
}

template <class T>
void cuda_block_backward_weight(const CudaBlockContext<T>& ctx, const BlockTensors<float*>& g, const CudaBlockActs<T>& a,
                                const CudaBlockWeightGrads<T>& keep, CudaBlockScratch<T>& sc) {
  const BlockDims& d = ctx.dims;
  linear_dw(ctx, sc, "mlp_down_dw", g.mlp_down_w, g.mlp_down_b, keep.dout.get(), a.fc_act.get(), d.f, d.c);
  linear_dw(ctx, sc, "mlp_up_dw", g.mlp_up_w, g.mlp_up_b, keep.dfc.get(), a.ln2.get(), d.c, d.fu);
  linear_dw(ctx, sc, "attn_out_dw", g.attn_out_w, g.attn_out_b, keep.dx_mid.get(), a.atty.get(), d.q, d.c);
  linear_dw(ctx, sc, "qkv_dw", g.qkv_w, g.qkv_b, keep.dqkv.get(), a.ln1.get(), d.c, d.qkv);
  const auto t = timed(ctx, "norm_dw");
  float* const norms[4] = {g.attn_norm_w, g.attn_norm_b, g.mlp_norm_w, g.mlp_norm_b};
  for (int k = 0; k < 4; ++k)
    if (norms[k]) accumulate_check_finite(norms[k], keep.norm.get() + k * d.c, d.c, nullptr, ctx.stream);
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
                                       CudaBlockScratch<T>&);                                                     \
  template void cuda_block_backward_input<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&, const T*, \
                                             const CudaBlockActs<T>&, T*, CudaBlockScratch<T>&,                   \
                                             CudaBlockWeightGrads<T>&);                                          \
  template void cuda_block_backward_weight<T>(const CudaBlockContext<T>&, const BlockTensors<float*>&,           \
                                              const CudaBlockActs<T>&, const CudaBlockWeightGrads<T>&,            \
                                              CudaBlockScratch<T>&);                                              \
  template void norm_forward16<T>(const CudaBlockContext<T>&, T*, float*, float*, const T*, const T*, const T*);  \
  template void norm_backward16<T>(const CudaBlockContext<T>&, T*, float*, float*, float*, const T*, const T*,    \
                                   const T*, const float*, const float*);
FSDPX_INSTANTIATE(bf16)
FSDPX_INSTANTIATE(f16)
#if defined(FSDPX_CUDA_EMULATED)  // the float model of the emulated build (tests/cuda/emulated)
FSDPX_INSTANTIATE(float)
#endif
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
