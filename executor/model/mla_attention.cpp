// executor/model/mla_attention.cpp — multi-head latent attention on the CPU (see mla_attention.h): the
// shared kernel-call sequence (mla_sequence.h) over the CPU policy below, host kernels on the heads of D =
// qk_nope + qk_rope columns. The policy's own arithmetic is the RoPE step: the assembly of the padded
// multi-head qkv (queries times YaRN's softmax factor, so the core's 1/sqrt(D) becomes DeepSeek's
// softmax_scale) and its reverse.
#include "executor/model/mla_attention.h"

#include <algorithm>

#include "core/errors.h"
#include "executor/cpu/attention.h"
#include "executor/model/cpu_sequence_kernels.h"
#include "executor/model/mla_sequence.h"

namespace fsdpx {
namespace {

// RoPE on interleaved pairs (x_2i, x_2i+1) of a rope-wide vector at table row `row`, by +angle (sign 1) or
// -angle (sign -1: the backward, the rotation's transpose).
template <class Real>
void rotate_interleaved(Real* x, const RopeTable<Real>& tab, std::int64_t row, Real sign) {
  const Real* c = tab.cos.data() + row * tab.half;
  const Real* s = tab.sin.data() + row * tab.half;
  for (std::int64_t i = 0; i < tab.half; ++i) {
    const Real x0 = x[2 * i], x1 = x[2 * i + 1];
    x[2 * i] = x0 * c[i] - sign * x1 * s[i];
    x[2 * i + 1] = x1 * c[i] + sign * x0 * s[i];
  }
}

template <class Real>
struct CpuMlaCtx {
  const RopeTable<Real>* rope;
  OpProfiler* prof;
  int module;
};

// The CPU policy of mla_sequence.h: the shared host kernels, the attention core and the RoPE steps.
template <class Real>
struct CpuMlaPolicy : CpuSequenceKernels<Real> {
  using Ctx = CpuMlaCtx<Real>;

  static std::int64_t head_dim(const MlaDims& d) { return d.qk(); }
  static void attention_forward(const Ctx&, const MlaDims& d, Real* out, Real* att, const Real* qkv) {
    cpu::attention_forward(out, att, qkv, d.attn());
  }
  static void attention_backward(const Ctx&, const MlaDims& d, Real* dqkv, const Real* dout, const Real*,
                                 const Real* qkv, const Real* att) {
    cpu::attention_backward(dqkv, dout, qkv, att, d.attn());
  }

  // qkv [N, 3·H·D] per token and head: query [q_nope | rot(q_pe)] times the softmax factor, key
  // [k_nope | rot(k_pe)] (k_pe [N, rope] at row stride pe_ld, shared by the heads), value [v | 0].
  static void assemble_qkv(const Ctx& ctx, const MlaDims& d, Real* qkv, const Real* q, const Real* kvb,
                           const Real* k_pe_rows, std::int64_t pe_ld) {
    const std::int64_t D = d.qk(), H = d.heads, row = 3 * H * D, kvb_row = d.nope + d.v;
    const Real q_scale = static_cast<Real>(d.softmax_scale_factor);
    std::vector<Real> k_pe(static_cast<std::size_t>(d.rope));
    for (std::int64_t i = 0; i < d.n; ++i) {
      const std::int64_t pos_row = i % d.t;
      Real* r = qkv + i * row;
      std::copy_n(k_pe_rows + i * pe_ld, d.rope, k_pe.begin());
      rotate_interleaved(k_pe.data(), *ctx.rope, pos_row, Real(1));
      for (std::int64_t h = 0; h < H; ++h) {
        Real* qh = r + h * D;
        std::copy_n(q + i * d.q_width() + h * D, D, qh);
        rotate_interleaved(qh + d.nope, *ctx.rope, pos_row, Real(1));
        if (q_scale != Real(1))  // YaRN's softmax factor: (f·q)·k / sqrt(D) = f · q·k / sqrt(D)
          for (std::int64_t j = 0; j < D; ++j) qh[j] *= q_scale;
        const Real* kv_h = kvb + i * d.kv_b_width() + h * kvb_row;  // [k_nope | v]
        Real* kh = r + (H + h) * D;
        std::copy_n(kv_h, d.nope, kh);
        std::copy(k_pe.begin(), k_pe.end(), kh + d.nope);
        Real* vh = r + (2 * H + h) * D;
        std::copy_n(kv_h + d.nope, d.v, vh);
        std::fill(vh + d.v, vh + D, Real(0));
      }
    }
  }
  // The reverse, all written: dq [N, H·D], dkvb [N, H·(nope + v)], dk_pe [N, rope] at row stride pe_ld
  // (the shared key: every head's gradient, summed in head order).
  static void split_dqkv(const Ctx& ctx, const MlaDims& d, Real* dq_rows, Real* dkvb, Real* dk_pe_rows,
                         std::int64_t pe_ld, const Real* dqkv) {
    const std::int64_t D = d.qk(), H = d.heads, row = 3 * H * D, kvb_row = d.nope + d.v;
    const Real q_scale = static_cast<Real>(d.softmax_scale_factor);
    for (std::int64_t i = 0; i < d.n; ++i) {
      const std::int64_t pos_row = i % d.t;
      const Real* r = dqkv + i * row;
      Real* dk_pe = dk_pe_rows + i * pe_ld;
      std::fill(dk_pe, dk_pe + d.rope, Real(0));
      for (std::int64_t h = 0; h < H; ++h) {
        Real* dq = dq_rows + i * d.q_width() + h * D;
        std::copy_n(r + h * D, D, dq);
        if (q_scale != Real(1))
          for (std::int64_t j = 0; j < D; ++j) dq[j] *= q_scale;
        rotate_interleaved(dq + d.nope, *ctx.rope, pos_row, Real(-1));
        const Real* dk = r + (H + h) * D;
        Real* dkv_h = dkvb + i * d.kv_b_width() + h * kvb_row;
        std::copy_n(dk, d.nope, dkv_h);
        for (std::int64_t j = 0; j < d.rope; ++j) dk_pe[j] += dk[d.nope + j];
        std::copy_n(r + (2 * H + h) * D, d.v, dkv_h + d.nope);
      }
      rotate_interleaved(dk_pe, *ctx.rope, pos_row, Real(-1));
    }
  }
};

}  // namespace

template <class Real>
void mla_forward(const MlaDims& d, const MlaTensors<const Real*>& p, const RopeTable<Real>& rope, const Real* x,
                 Real* out, Real* qkv, Real* att, MlaActs<Real>& a, OpProfiler* prof, int module) {
  FSDP_CHECK(rope.half * 2 == d.rope && rope.seq >= d.t, "mla_forward: the RoPE table is not qk_rope_head_dim wide");
  const MlaKept<Real, Real> keep{a.qa.data(), a.qa_n.data(), a.qa_rstd.data(), a.c_kv.data(), a.kv_n.data(),
                                 a.kv_rstd.data(), qkv, a.out_pad.data(), att};
  mla_sequence::forward<CpuMlaPolicy<Real>>({&rope, prof, module}, d, p, x, keep,
                                            MlaChains<Real>{a.q.data(), a.kva.data(), a.kvb.data()}, out);
}

template <class Real>
void mla_backward(const MlaDims& d, const MlaTensors<const Real*>& p, const MlaTensors<Real*>& g,
                  const RopeTable<Real>& rope, const Real* x, const Real* dout, const Real* qkv, const Real* att,
                  const MlaActs<Real>& a, Real* dqkv, Real* dx, MlaScratch<Real>& s, OpProfiler* prof, int module) {
  const MlaKept<const Real, const Real> keep{a.qa.data(), a.qa_n.data(), a.qa_rstd.data(), a.c_kv.data(),
                                             a.kv_n.data(), a.kv_rstd.data(), qkv, a.out_pad.data(), att};
  const MlaGradScratch<Real> gs{s.dout_pad.data(), dqkv, s.dkv_n.data(), s.dc_kv.data(), s.dqa_n.data(), s.dqa.data()};
  mla_sequence::backward<CpuMlaPolicy<Real>>({&rope, prof, module}, d, p, g, x, keep, dout,
                                             MlaChains<Real>{s.dq.data(), s.dkva.data(), s.dkvb.data()}, gs, dx);
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template void mla_forward<Real>(const MlaDims&, const MlaTensors<const Real*>&, const RopeTable<Real>&,          \
                                  const Real*, Real*, Real*, Real*, MlaActs<Real>&, OpProfiler*, int);             \
  template void mla_backward<Real>(const MlaDims&, const MlaTensors<const Real*>&, const MlaTensors<Real*>&,       \
                                   const RopeTable<Real>&, const Real*, const Real*, const Real*, const Real*,     \
                                   const MlaActs<Real>&, Real*, Real*, MlaScratch<Real>&, OpProfiler*, int);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
