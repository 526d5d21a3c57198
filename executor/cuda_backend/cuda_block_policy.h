// executor/cuda_backend/cuda_block_policy.h — the CUDA device policy of the block's kernel-call sequence
// (executor/model/block_sequence.h): launches on the context's stream over DeviceBuffer activations (T =
// bf16 or f16; float in the emulated build), cuBLAS(Lt) GEMMs writing dx and accumulating fp32 dW, the
// flash (or tensor-core, or context-parallel) attention core of cuda_attention_core.h, fp32 norm
// statistics and gradients. A split backward keeps each half's fp32 norm gradients from its input pass
// (CudaBlockWeightGrads::norm) and adds them in its weight pass. The MoE MLP runs on the device with host
// routing (cuda_moe_mlp.h), the latent attention on the device (cuda_mla_attention.h). Internal to
// cuda_block.cpp; leaves out the query-group gather of kv_heads < tp and biases under tp (backend_capabilities refuses those plans; the calls FSDP_CHECK).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/errors.h"
#include "executor/cuda/activation.h"
#include "executor/cuda/bias.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/rope.h"
#include "executor/cuda_backend/cuda_attention_core.h"
#include "executor/cuda_backend/cuda_block.h"
#include "executor/cuda_backend/cuda_mla_attention.h"
#include "executor/cuda_backend/cuda_moe_mlp.h"
#include "executor/cuda_backend/cuda_op_timer.h"
#include "executor/cuda_backend/grad_kernels.h"
#include "executor/model/block_sequence.h"
#include "executor/model/moe_sequence.h"  // is_moe_mlp

namespace fsdpx::cuda {

template <class T>
struct CudaBlockPolicy
    : BlockPolicyTypes<T, float, CudaBlockContext<T>, CudaBlockActs<T>, CudaBlockScratch<T>, CudaBlockWeightGrads<T>> {
  using Types = typename CudaBlockPolicy::BlockPolicyTypes;
  using typename Types::Ctx, typename Types::Acts, typename Types::Scratch, typename Types::Kept;

  static constexpr auto timed = cuda::timed<T>;
  static void zero(const Ctx& ctx, const DeviceBuffer<T>& buf) { zero_async(buf, ctx.stream); }
  static void zero(const Ctx& ctx, T* p, std::int64_t n) {
    CUDA_CHECK(cudaMemsetAsync(p, 0, std::size_t(n) * sizeof(T), ctx.stream));
  }
  // Nothing: the dx GEMMs write (accumulate = false) and the attention core's backward zeroes dqkv itself.
  static void clear_dx(const Ctx&, const DeviceBuffer<T>&) {}
  static void clear_dx(const Ctx&, T*, std::int64_t) {}
  static void copy(const Ctx& ctx, T* dst, const T* src, std::int64_t n) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, std::size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice, ctx.stream));
  }

  static void norm_forward(const Ctx& ctx, T* out, float* mean, float* rstd, const T* x, const T* w, const T* b) {
    norm_forward16(ctx, out, mean, rstd, x, w, b);
  }
  static void qkv_forward(const Ctx& ctx, const BlockTensors<const T*>& p, Acts& a) {
    const BlockDims& d = ctx.dims;
    FSDP_CHECK(!d.grouped_qkv(), "CudaBlockPolicy: kv_heads < tp is not run on CUDA");
    const auto t = timed(ctx, "qkv");
    linear_forward(ctx, a.qkv.get(), a.ln1.get(), p.qkv_w, p.qkv_b, d.c, d.qkv);
  }
  // out [N, oc] = x [N, k] · Wᵀ (+ b), written.
  static void linear_forward(const Ctx& ctx, T* out, const T* x, const T* w, const T* b, std::int64_t k,
                             std::int64_t oc) {
    matmul_forward(*ctx.gemm, out, GemmOut::operand, x, w, b, ctx.dims.n, k, oc, false, ctx.stream);
  }
  static void adapter_forward(const Ctx& ctx, LoraTarget t, const T* x, T* y, std::int64_t width, Acts& a) {
    if (!ctx.lora.layout) return;
    const auto timer = timed(ctx, "lora");
    lora_forward16(*ctx.gemm, ctx.lora, t, x, y, width, ctx.dims.n, a.lora_u.get(), ctx.stream);
  }
  static bool has_rope(const Ctx& ctx) { return ctx.rope_cos != nullptr; }
  static void rope_forward(const Ctx& ctx, T* qkv) {
    const BlockDims& d = ctx.dims;
    cuda::rope_forward(qkv, ctx.rope_cos, ctx.rope_sin, d.b, d.t, d.attn.nh, d.attn.nkv, d.attn.hd, ctx.stream);
  }
  static void rope_backward(const Ctx& ctx, T* dqkv) {
    const BlockDims& d = ctx.dims;
    cuda::rope_backward(dqkv, ctx.rope_cos, ctx.rope_sin, d.b, d.t, d.attn.nh, d.attn.nkv, d.attn.hd, ctx.stream);
  }
  static void attention_forward(const Ctx& ctx, Acts& a) { block_detail::attention_forward(ctx, a); }
  static void attention_backward(const Ctx& ctx, const Acts& a, Scratch& s) {
    block_detail::attention_backward(ctx, a, s, s.dqkv.get());
  }
  static void mlp_act_forward(const Ctx& ctx, T* out, const T* in) {
    cuda::mlp_act_forward(ctx.spec->ffn_kind, out, in, ctx.dims.n, ctx.dims.f, ctx.stream);
  }
  static void mlp_act_backward(const Ctx& ctx, T* dinp, const T* dout, const T* inp) {
    cuda::mlp_act_backward(ctx.spec->ffn_kind, dinp, dout, inp, ctx.dims.n, ctx.dims.f, ctx.stream);
  }
  static void residual_forward(const Ctx& ctx, T* out, const T* a, const T* b, std::int64_t n) {
    cuda::residual_forward(out, a, b, n, ctx.stream);
  }
  static void add_bias(const Ctx&, T*, const T* bias, std::int64_t, std::int64_t) {
    FSDP_CHECK(bias == nullptr, "CudaBlockPolicy: tensor parallelism runs blocks without biases on CUDA");
  }
  // Latent attention (on the device, step for step the CPU's, cuda_mla_attention.h) and the MoE MLP
  // (cuda_moe_mlp.h): a.atty, the MLP's output and s.dln written.
  static bool is_mla(const Ctx& ctx) { return ctx.spec->is_mla(); }
  static constexpr auto mla_forward = cuda_mla_forward<T>;
  static constexpr auto mla_backward = cuda_mla_backward<T>;
  static constexpr auto is_moe = is_moe_mlp<Ctx>;
  static constexpr auto moe_forward = cuda_moe_forward<T>;
  static constexpr auto moe_backward = cuda_moe_backward<T>;

  // dinp [N, c] = dout [N, oc] · W (written: accumulate = false).
  static void linear_dx(const Ctx& ctx, T* dinp, const T* dout, const T* w, std::int64_t c, std::int64_t oc) {
    matmul_backward_dx(*ctx.gemm, dinp, GemmOut::operand, dout, w, ctx.dims.n, c, oc, false, ctx.stream);
  }
  // dW [oc, c] += doutᵀ·inp (fp32), db [oc] += Σ_n dout when the layer has a bias (null dw: LoRA's frozen base).
  static void linear_dw(const Ctx& ctx, Scratch& s, float* dw, float* db, const T* dout, const T* inp,
                        std::int64_t c, std::int64_t oc) {
    FSDP_CHECK(dw != nullptr || db == nullptr, "linear_dw: a bias gradient without its weight's");
    if (!dw) return;
    matmul_backward_dw(*ctx.gemm, dw, GemmOut::f32, dout, inp, ctx.dims.n, c, oc, true, ctx.stream);
    if (db) cuda::bias_backward(db, s.bias.get(), dout, ctx.dims.n, oc, ctx.stream);
  }
  static void bias_backward(const Ctx& ctx, Scratch& s, float* db, const T* dout, std::int64_t n, std::int64_t c) {
    if (db) cuda::bias_backward(db, s.bias.get(), dout, n, c, ctx.stream);
  }
  static void adapter_backward(const Ctx& ctx, LoraTarget t, const T* x, const T* dy, std::int64_t width, T* dx,
                               const Acts& a, Scratch& s) {
    if (!ctx.lora.layout) return;
    const auto timer = timed(ctx, "lora_bwd");
    lora_backward16(*ctx.gemm, ctx.lora, t, x, dy, width, dx, ctx.dims.n, a.lora_u.get(), s.lora_du.get(), ctx.stream);
  }
  static const T* qkv_grad_out(const Ctx& ctx, Scratch& s) {
    FSDP_CHECK(!ctx.dims.grouped_qkv(), "CudaBlockPolicy: kv_heads < tp is not run on CUDA");
    return s.dqkv.get();
  }

  // Where a split backward keeps one half's fp32 norm gradients (half 0: attention, 1: MLP): [w, b] x C.
  static float* norm_keep(const Ctx& ctx, Kept* kept, int half) {
    return kept ? kept->norm.get() + 2 * half * ctx.dims.c : nullptr;
  }
  // A norm's backward from dln [N, C] (the rank's rows at the region's local row): dinp += into dres, dw,
  // db +=. A split backward's input pass writes dw, db to `slots` ([w, b] x C, zeroed here), its weight
  // pass adds them to the gradients.
  static void norm_backward(const Ctx& ctx, std::string_view op, GradPass pass, float* slots, T* dres, float* dw,
                            float* db, Scratch& s, const T* dln, const T* x, const T* w, const T* b,
                            const float* mean, const float* rstd) {
    const BlockDims& d = ctx.dims;
    const auto timer = timed(ctx, op);
    if (pass == GradPass::weight) {
      if (dw) accumulate_check_finite(dw, slots, d.c, nullptr, ctx.stream);
      if (db) accumulate_check_finite(db, slots + d.c, d.c, nullptr, ctx.stream);
      return;
    }
    if (pass == GradPass::input) {
      CUDA_CHECK(cudaMemsetAsync(slots, 0, std::size_t(2 * d.c) * sizeof(float), ctx.stream));  // the kernels add
      dw = slots, db = b ? slots + d.c : nullptr;
    }
    norm_backward16(ctx, dres, dw, db, s.norm.get(), dln + block_sequence::region(ctx).local_row() * d.c, x, w, mean,
                    rstd);
  }
};

}  // namespace fsdpx::cuda
