// executor/model/block.cpp — block forward/backward as a sequence of CPU kernels, each timed under the
// simulator's kernel name. The residual adds' backward is the identity, applied by letting `dres`
// flow through in place while each branch's input gradient is accumulated into it (llm.c style).
#include "executor/model/block.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/cpu/activation.h"
#include "executor/cpu/gemm.h"
#include "executor/cpu/norm.h"

namespace fsdpx {
namespace {

template <class Real>
void zero(std::vector<Real>& v) {
  std::fill(v.begin(), v.end(), Real(0));
}

template <class P>
P tensor_ptr(const ModuleLayout& m, P base, const char* name) {
  const TensorSlot* t = m.find(name);
  return t ? base + t->offset : nullptr;
}

}  // namespace

BlockDims make_block_dims(const ModelSpec& m, std::int64_t batch, std::int64_t seq) {
  BlockDims d;
  d.b = batch;
  d.t = seq;
  d.n = batch * seq;
  d.c = m.hidden;
  d.q = m.q_dim();
  d.qkv = m.q_dim() + 2 * m.kv_dim();
  d.f = m.ffn_hidden;
  d.fu = cpu::mlp_up_width(m.ffn_kind, m.ffn_hidden);
  d.layernorm = m.arch == Arch::gpt;
  d.attn = cpu::AttnShape{batch, seq, m.heads, m.kv_heads, m.head_dim};
  return d;
}

template <class P>
BlockTensors<P> block_tensors(const ModuleLayout& m, P base) {
  FSDP_CHECK(base != nullptr, "block_tensors: null buffer for " + m.name);
  return BlockTensors<P>{tensor_ptr(m, base, "attn_norm.weight"), tensor_ptr(m, base, "attn_norm.bias"),
                         tensor_ptr(m, base, "qkv.weight"),       tensor_ptr(m, base, "qkv.bias"),
                         tensor_ptr(m, base, "attn_out.weight"),  tensor_ptr(m, base, "attn_out.bias"),
                         tensor_ptr(m, base, "mlp_norm.weight"),  tensor_ptr(m, base, "mlp_norm.bias"),
                         tensor_ptr(m, base, "mlp_up.weight"),    tensor_ptr(m, base, "mlp_up.bias"),
                         tensor_ptr(m, base, "mlp_down.weight"),  tensor_ptr(m, base, "mlp_down.bias")};
}

template <class Real>
void BlockActs<Real>::allocate(const BlockDims& d) {
  const auto n = static_cast<std::size_t>(d.n);
  const std::size_t mean_n = d.layernorm ? n : 0;  // RMSNorm has no mean
  ln1.assign(n * d.c, 0), ln1_mean.assign(mean_n, 0), ln1_rstd.assign(n, 0);
  qkv.assign(n * d.qkv, 0);
  att.assign(static_cast<std::size_t>(cpu::attention_saved_elems(d.attn)), 0);
  atty.assign(n * d.q, 0);
  x_mid.assign(n * d.c, 0);
  ln2.assign(n * d.c, 0), ln2_mean.assign(mean_n, 0), ln2_rstd.assign(n, 0);
  fc.assign(n * d.fu, 0);
  fc_act.assign(n * d.f, 0);
}

template <class Real>
void BlockWeightInputs<Real>::allocate(const BlockDims& d) {
  const auto n = static_cast<std::size_t>(d.n);
  d_out.assign(n * d.c, 0), d_mid.assign(n * d.c, 0);
  dfc.assign(n * d.fu, 0), dqkv.assign(n * d.qkv, 0);
  dln2.assign(n * d.c, 0), dln1.assign(n * d.c, 0);
}

template <class Real>
void BlockScratch<Real>::allocate(const BlockDims& d) {
  const auto n = static_cast<std::size_t>(d.n);
  dln.assign(n * d.c, 0), datty.assign(n * d.q, 0), dqkv.assign(n * d.qkv, 0);
  dfc.assign(n * d.fu, 0), dfc_act.assign(n * d.f, 0);
}

template <class Real>
void norm_forward(Arch arch, Real* out, Real* mean, Real* rstd, const Real* inp, const Real* w, const Real* b,
                  std::int64_t n, std::int64_t c, double eps) {
  if (arch == Arch::gpt)
    cpu::layernorm_forward(out, mean, rstd, inp, w, b, n, c, eps);
  else
    cpu::rmsnorm_forward(out, rstd, inp, w, n, c, eps);
}

template <class Real>
void norm_backward(Arch arch, Real* dinp, Real* dw, Real* db, const Real* dout, const Real* inp, const Real* w,
                   const Real* mean, const Real* rstd, std::int64_t n, std::int64_t c) {
  if (arch == Arch::gpt)
    cpu::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, n, c);
  else
    cpu::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, n, c);
}

template <class Real>
void block_forward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const Real* x_in, Real* x_out,
                   BlockActs<Real>& a) {
  const BlockDims& d = ctx.dims;
  const Arch arch = ctx.spec->arch;
  OpProfiler* prof = ctx.profiler;
  const int m = ctx.module;
  { ScopedOp op(prof, "attn_norm", m);
    norm_forward(arch, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x_in, p.attn_norm_w, p.attn_norm_b, d.n,
                 d.c, ctx.spec->norm_eps); }
  { ScopedOp op(prof, "qkv", m);
    cpu::matmul_forward(a.qkv.data(), a.ln1.data(), p.qkv_w, p.qkv_b, d.n, d.c, d.qkv); }
  if (ctx.rope) {
    ScopedOp op(prof, "rope", m);
    cpu::rope_forward(a.qkv.data(), *ctx.rope, d.b, d.t, d.attn.nh, d.attn.nkv, d.attn.hd);
  }
  { ScopedOp op(prof, "attn_core", m);
    cpu::attention_forward(a.atty.data(), a.att.data(), a.qkv.data(), d.attn); }
  { ScopedOp op(prof, "attn_out", m);
    cpu::matmul_forward(x_out, a.atty.data(), p.attn_out_w, p.attn_out_b, d.n, d.q, d.c); }  // x_out as temp
  { ScopedOp op(prof, "attn_residual", m);
    cpu::residual_forward(a.x_mid.data(), x_in, x_out, d.n * d.c); }
  { ScopedOp op(prof, "mlp_norm", m);
    norm_forward(arch, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.x_mid.data(), p.mlp_norm_w,
                 p.mlp_norm_b, d.n, d.c, ctx.spec->norm_eps); }
  { ScopedOp op(prof, "mlp_up", m);
    cpu::matmul_forward(a.fc.data(), a.ln2.data(), p.mlp_up_w, p.mlp_up_b, d.n, d.c, d.fu); }
  { ScopedOp op(prof, "mlp_act", m);
    cpu::mlp_act_forward(ctx.spec->ffn_kind, a.fc_act.data(), a.fc.data(), d.n, d.f); }
  { ScopedOp op(prof, "mlp_down", m);
    cpu::matmul_forward(x_out, a.fc_act.data(), p.mlp_down_w, p.mlp_down_b, d.n, d.f, d.c); }
  { ScopedOp op(prof, "mlp_residual", m);
    cpu::residual_forward(x_out, a.x_mid.data(), x_out, d.n * d.c); }
}

// The MLP half: dres is d x_out on entry and d x_mid on exit. Under a split backward the input pass
// keeps the output gradients in `kept` and the weight pass reads them there (see GradPass).
template <class Real>
void mlp_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                  const BlockActs<Real>& a, Real* dres, BlockScratch<Real>& s, GradPass pass,
                  BlockWeightInputs<Real>* kept) {
  const BlockDims& d = ctx.dims;
  OpProfiler* prof = ctx.profiler;
  const int m = ctx.module;
  const bool input = pass != GradPass::weight, weight = pass != GradPass::input;
  const bool from_kept = pass == GradPass::weight;
  if (pass == GradPass::input) std::copy(dres, dres + d.n * d.c, kept->d_out.begin());
  const Real* d_out = from_kept ? kept->d_out.data() : dres;
  if (input) {
    zero(s.dfc_act), zero(s.dfc), zero(s.dln);
    ScopedOp op(prof, "mlp_down_dx", m);
    cpu::matmul_backward_dx(s.dfc_act.data(), dres, p.mlp_down_w, d.n, d.f, d.c);
  }
  if (weight) {
    ScopedOp op(prof, "mlp_down_dw", m);
    cpu::matmul_backward_dw(g.mlp_down_w, g.mlp_down_b, d_out, a.fc_act.data(), d.n, d.f, d.c);
  }
  if (input) {
    { ScopedOp op(prof, "mlp_act_bwd", m);
      cpu::mlp_act_backward(ctx.spec->ffn_kind, s.dfc.data(), s.dfc_act.data(), a.fc.data(), d.n, d.f); }
    ScopedOp op(prof, "mlp_up_dx", m);
    cpu::matmul_backward_dx(s.dln.data(), s.dfc.data(), p.mlp_up_w, d.n, d.c, d.fu);
  }
  if (weight) {
    ScopedOp op(prof, "mlp_up_dw", m);
    cpu::matmul_backward_dw(g.mlp_up_w, g.mlp_up_b, from_kept ? kept->dfc.data() : s.dfc.data(), a.ln2.data(), d.n,
                            d.c, d.fu);
  }
  if (pass == GradPass::input) kept->dfc = s.dfc, kept->dln2 = s.dln;
  { ScopedOp op(prof, "mlp_norm_bwd", m);
    norm_backward(ctx.spec->arch, input ? dres : nullptr, g.mlp_norm_w, g.mlp_norm_b,
                  from_kept ? kept->dln2.data() : s.dln.data(), a.x_mid.data(), p.mlp_norm_w, a.ln2_mean.data(),
                  a.ln2_rstd.data(), d.n, d.c); }
}

// The attention half: dres is d x_mid on entry and d x_in on exit.
template <class Real>
void attention_block_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p,
                              const BlockTensors<Real*>& g, const Real* x_in, const BlockActs<Real>& a, Real* dres,
                              BlockScratch<Real>& s, GradPass pass, BlockWeightInputs<Real>* kept) {
  const BlockDims& d = ctx.dims;
  OpProfiler* prof = ctx.profiler;
  const int m = ctx.module;
  const bool input = pass != GradPass::weight, weight = pass != GradPass::input;
  const bool from_kept = pass == GradPass::weight;
  if (pass == GradPass::input) std::copy(dres, dres + d.n * d.c, kept->d_mid.begin());
  if (input) {
    zero(s.datty), zero(s.dqkv), zero(s.dln);
    ScopedOp op(prof, "attn_out_dx", m);
    cpu::matmul_backward_dx(s.datty.data(), dres, p.attn_out_w, d.n, d.q, d.c);
  }
  if (weight) {
    ScopedOp op(prof, "attn_out_dw", m);
    cpu::matmul_backward_dw(g.attn_out_w, g.attn_out_b, from_kept ? kept->d_mid.data() : dres, a.atty.data(), d.n,
                            d.q, d.c);
  }
  if (input) {
    { ScopedOp op(prof, "attn_core_bwd", m);
      cpu::attention_backward(s.dqkv.data(), s.datty.data(), a.qkv.data(), a.att.data(), d.attn); }
    if (ctx.rope) {
      ScopedOp op(prof, "rope_bwd", m);
      cpu::rope_backward(s.dqkv.data(), *ctx.rope, d.b, d.t, d.attn.nh, d.attn.nkv, d.attn.hd);
    }
    ScopedOp op(prof, "qkv_dx", m);
    cpu::matmul_backward_dx(s.dln.data(), s.dqkv.data(), p.qkv_w, d.n, d.c, d.qkv);
  }
  if (weight) {
    ScopedOp op(prof, "qkv_dw", m);
    cpu::matmul_backward_dw(g.qkv_w, g.qkv_b, from_kept ? kept->dqkv.data() : s.dqkv.data(), a.ln1.data(), d.n, d.c,
                            d.qkv);
  }
  if (pass == GradPass::input) kept->dqkv = s.dqkv, kept->dln1 = s.dln;
  { ScopedOp op(prof, "attn_norm_bwd", m);
    norm_backward(ctx.spec->arch, input ? dres : nullptr, g.attn_norm_w, g.attn_norm_b,
                  from_kept ? kept->dln1.data() : s.dln.data(), x_in, p.attn_norm_w, a.ln1_mean.data(),
                  a.ln1_rstd.data(), d.n, d.c); }
}

template <class Real>
void block_backward(const BlockContext<Real>& ctx, const BlockTensors<const Real*>& p, const BlockTensors<Real*>& g,
                    const Real* x_in, const BlockActs<Real>& a, Real* dres, BlockScratch<Real>& s, GradPass pass,
                    BlockWeightInputs<Real>* kept) {
  FSDP_CHECK(pass == GradPass::all || kept != nullptr, "block_backward: a split pass needs the kept gradients");
  mlp_backward(ctx, p, g, a, dres, s, pass, kept);
  attention_block_backward(ctx, p, g, x_in, a, dres, s, pass, kept);
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template BlockTensors<const Real*> block_tensors<const Real*>(const ModuleLayout&, const Real*);                \
  template BlockTensors<Real*> block_tensors<Real*>(const ModuleLayout&, Real*);                                  \
  template struct BlockActs<Real>;                                                                                \
  template struct BlockScratch<Real>;                                                                             \
  template struct BlockWeightInputs<Real>;                                                                        \
  template void norm_forward<Real>(Arch, Real*, Real*, Real*, const Real*, const Real*, const Real*, std::int64_t, \
                                   std::int64_t, double);                                                        \
  template void norm_backward<Real>(Arch, Real*, Real*, Real*, const Real*, const Real*, const Real*, const Real*, \
                                    const Real*, std::int64_t, std::int64_t);                                    \
  template void block_forward<Real>(const BlockContext<Real>&, const BlockTensors<const Real*>&, const Real*,     \
                                    Real*, BlockActs<Real>&);                                                    \
  template void block_backward<Real>(const BlockContext<Real>&, const BlockTensors<const Real*>&,                 \
                                     const BlockTensors<Real*>&, const Real*, const BlockActs<Real>&, Real*,      \
                                     BlockScratch<Real>&, GradPass, BlockWeightInputs<Real>*);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
