// executor/model/block_projections.h — the steps a block (block.cpp) takes around its projections: the
// tensor-parallel region of a half, the row-parallel biases added after the reduction, LoRA's adapter path
// on a projection's output, and the whole backward of a row-parallel output projection (attn_out,
// mlp_down), shared by the two halves. Internal to block.cpp; leaves out the column-parallel GEMMs
// (qkv, mlp_up), whose backward differs per half (query groups, the MLP activation).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "executor/cpu/gemm.h"
#include "executor/model/block.h"
#include "executor/model/tp_region.h"

namespace fsdpx::block_detail {

template <class Real>
TpRegion region(const BlockContext<Real>& ctx) {
  return TpRegion{ctx.par, ctx.comm, ctx.dims.n, ctx.dims.n_local, ctx.dims.c};
}

// A row-parallel GEMM's bias, added once after the reduction: out [n, c] += bias [c].
template <class Real>
void add_bias(Real* out, const Real* bias, std::int64_t n, std::int64_t c) {
  if (!bias) return;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < c; ++j) out[i * c + j] += bias[j];
}

// Its gradient from the rank's rows: dbias [c] += Σ_n dout [n, c].
template <class Real>
void bias_backward(Real* dbias, const Real* dout, std::int64_t n, std::int64_t c) {
  if (!dbias) return;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < c; ++j) dbias[j] += dout[i * c + j];
}

// LoRA's adapter path on one projection's output y [N, width] (nothing without LoRA).
template <class Real>
void adapter_forward(const BlockContext<Real>& ctx, LoraTarget t, const Real* x, Real* y, std::int64_t width,
                     BlockActs<Real>& a) {
  if (!ctx.lora.layout) return;
  ScopedOp op(ctx.profiler, "lora", ctx.module);
  lora_forward(ctx.lora, t, x, y, width, ctx.dims.n, a.lora_u);
}

template <class Real>
void adapter_backward(const BlockContext<Real>& ctx, LoraTarget t, const Real* x, const Real* dy, std::int64_t width,
                      Real* dx, const BlockActs<Real>& a) {
  if (!ctx.lora.layout) return;
  ScopedOp op(ctx.profiler, "lora_bwd", ctx.module);
  lora_backward(ctx.lora, t, x, dy, width, dx, ctx.dims.n, a.lora_u);
}

// A row-parallel output projection (attn_out, mlp_down) y [N, C] = x [N, in] · Wᵀ (+ bias) and its adapter:
// W [C, in] and its gradients (unused with LoRA), the saved input x, dx [N, in] (zeroed by the caller), and
// where a split backward keeps d y [N, C] (null for GradPass::all).
template <class Real>
struct OutProjection {
  const char *dx_op, *dw_op;  // kernel names
  LoraTarget target;
  const Real* w;
  Real *dw, *db;
  const Real* x;
  Real* dx;
  std::int64_t in;
  std::vector<Real>* kept_dy;
};

// dx = dy W (+ the adapter's), dW += dyᵀ x and dbias += Σ dy, from dy = d y over all N tokens (through the
// TP region's exit; under a split backward the input pass keeps dy and the weight pass reads it back).
template <class Real>
void out_projection_backward(const BlockContext<Real>& ctx, const OutProjection<Real>& o, const BlockActs<Real>& a,
                             Real* dres, BlockScratch<Real>& s, GradPass pass) {
  const BlockDims& d = ctx.dims;
  const bool split = ctx.par.tp > 1;
  const bool input = pass != GradPass::weight, weight = pass != GradPass::input && !ctx.lora.layout;
  const Real* dy = pass == GradPass::weight ? o.kept_dy->data() : region(ctx).exit_backward(dres, s.wide.data());
  if (pass == GradPass::input) std::copy(dy, dy + d.n * d.c, o.kept_dy->begin());
  if (input) {
    { ScopedOp op(ctx.profiler, o.dx_op, ctx.module);
      linear_backward_dx(ctx.fp8, o.dx, dy, o.w, d.n, o.in, d.c); }
    adapter_backward(ctx, o.target, o.x, dy, d.c, o.dx, a);
  }
  if (weight) {
    ScopedOp op(ctx.profiler, o.dw_op, ctx.module);
    linear_backward_dw(ctx.fp8, o.dw, split ? nullptr : o.db, dy, o.x, d.n, o.in, d.c);
    if (split) bias_backward(o.db, dres, d.n_local, d.c);
  }
}

}  // namespace fsdpx::block_detail
