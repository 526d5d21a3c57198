// executor/model/context_parallel.cpp — the K/V all-gather and gradient reduce-scatter of context
// parallelism (see context_parallel.h). Rank r's local token (b, i) is token (b, positions_r[i]) of
// the whole sequence; the collectives move [cp, N, KVW] blocks in rank order.
#include "executor/model/context_parallel.h"

#include <algorithm>

namespace fsdpx {

template <class Real>
cpu::ContextAttnShape context_shape(const BlockContext<Real>& ctx) {
  const BlockDims& d = ctx.dims;
  const std::int64_t* mine = ctx.cp_positions->data() + std::int64_t(ctx.par.cp_rank) * d.t;
  return cpu::ContextAttnShape{d.b, d.t, d.t_kv, d.attn.nh, d.attn.nkv, d.attn.hd, mine};
}

namespace {

// For every cp rank r, local token (b, i): from[(r·N + b·T + i)·KVW] <-> to[(b·T_kv + pos_r[i])·KVW].
template <class Real>
void reorder(const BlockContext<Real>& ctx, const Real* from, Real* to, bool to_sequence) {
  const BlockDims& d = ctx.dims;
  const std::int64_t kvw = d.kv_width();
  for (int r = 0; r < ctx.par.cp; ++r)
    for (std::int64_t b = 0; b < d.b; ++b)
      for (std::int64_t i = 0; i < d.t; ++i) {
        const std::int64_t pos = (*ctx.cp_positions)[std::size_t(std::int64_t(r) * d.t + i)];
        const std::int64_t gathered = (std::int64_t(r) * d.n + b * d.t + i) * kvw, seq = (b * d.t_kv + pos) * kvw;
        if (to_sequence) std::copy(from + gathered, from + gathered + kvw, to + seq);
        else std::copy(from + seq, from + seq + kvw, to + gathered);
      }
}

}  // namespace

template <class Real>
void gather_context_kv(const BlockContext<Real>& ctx, const Real* qkv, BlockScratch<Real>& s) {
  const BlockDims& d = ctx.dims;
  const std::int64_t kvw = d.kv_width(), q = d.attn.nh * d.attn.hd;
  for (std::int64_t i = 0; i < d.n; ++i)  // the K and V columns follow the Q columns
    std::copy(qkv + i * d.qkv + q, qkv + i * d.qkv + q + kvw, s.kv_local.data() + i * kvw);
  ctx.comm->all_gather(ModelAxis::cp, s.kv_local.data(), s.kv_gathered.data(), d.n * kvw);
  reorder(ctx, s.kv_gathered.data(), s.kv_full.data(), true);
}

template <class Real>
void scatter_context_kv_grads(const BlockContext<Real>& ctx, BlockScratch<Real>& s, Real* dqkv) {
  const BlockDims& d = ctx.dims;
  const std::int64_t kvw = d.kv_width(), q = d.attn.nh * d.attn.hd;
  reorder(ctx, s.dkv_full.data(), s.kv_gathered.data(), false);
  ctx.comm->reduce_scatter(ModelAxis::cp, s.kv_gathered.data(), s.kv_local.data(), d.n * kvw);
  for (std::int64_t i = 0; i < d.n; ++i)
    for (std::int64_t j = 0; j < kvw; ++j) dqkv[i * d.qkv + q + j] += s.kv_local[std::size_t(i * kvw + j)];
}

#define FSDPX_INSTANTIATE(Real)                                                                           \
  template cpu::ContextAttnShape context_shape<Real>(const BlockContext<Real>&);                          \
  template void gather_context_kv<Real>(const BlockContext<Real>&, const Real*, BlockScratch<Real>&);     \
  template void scatter_context_kv_grads<Real>(const BlockContext<Real>&, BlockScratch<Real>&, Real*);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
