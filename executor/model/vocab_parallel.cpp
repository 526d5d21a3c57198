// executor/model/vocab_parallel.cpp — vocabulary-slice embedding and cross-entropy, positions by index
// (see vocab_parallel.h).
#include "executor/model/vocab_parallel.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "executor/cpu/kernel_pool.h"

namespace fsdpx {

template <class Real>
void vocab_embedding_forward(Real* out, const std::int32_t* tokens, const Real* wte, std::int64_t v_first,
                             std::int64_t v_count, std::int64_t n, std::int64_t c) {
  cpu::parallel_for(n, n * c, [&](std::int64_t i) {
    const std::int64_t v = std::int64_t(tokens[i]) - v_first;
    Real* y = out + i * c;
    if (v < 0 || v >= v_count) std::fill(y, y + c, Real(0));
    else std::copy(wte + v * c, wte + (v + 1) * c, y);
  });
}

template <class Real>
void vocab_embedding_backward(Real* dwte, const Real* dout, const std::int32_t* tokens, std::int64_t v_first,
                              std::int64_t v_count, std::int64_t n, std::int64_t c) {
  cpu::parallel_for(c, n * c, [&](std::int64_t j) {  // a channel per item, tokens in order: deterministic
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t v = std::int64_t(tokens[i]) - v_first;
      if (v >= 0 && v < v_count) dwte[v * c + j] += dout[i * c + j];
    }
  });
}

template <class Real>
void add_positions(Real* out, const Real* wpe, const std::int64_t* positions, std::int64_t n, std::int64_t c) {
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < c; ++j) out[i * c + j] += wpe[positions[i] * c + j];
}

template <class Real>
void positions_backward(Real* dwpe, const Real* dout, const std::int64_t* positions, std::int64_t n, std::int64_t c) {
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < c; ++j) dwpe[positions[i] * c + j] += dout[i * c + j];
}

template <class Real>
void vocab_ce_stats(Real* stats, const Real* logits, const std::int32_t* targets, std::int64_t n,
                    std::int64_t v_local, std::int64_t v_first) {
  cpu::parallel_for(n, n * v_local, [&](std::int64_t i) {
    const Real* z = logits + i * v_local;  // [V_local]
    const Real maxv = *std::max_element(z, z + v_local);
    Real sum = 0;
    for (std::int64_t v = 0; v < v_local; ++v) sum += std::exp(z[v] - maxv);
    const std::int64_t t = std::int64_t(targets[i]) - v_first;
    stats[i * 3] = maxv, stats[i * 3 + 1] = sum, stats[i * 3 + 2] = t >= 0 && t < v_local ? z[t] : Real(0);
  });
}

template <class Real>
Real vocab_ce_probs(Real* logits, const Real* all_stats, int ranks, std::int64_t n, std::int64_t v_local) {
  std::vector<Real> losses(static_cast<std::size_t>(n));  // [N]
  cpu::parallel_for(n, n * v_local, [&](std::int64_t i) {
    Real maxv = all_stats[i * 3], target = 0, sum = 0;
    for (int r = 1; r < ranks; ++r) maxv = std::max(maxv, all_stats[(r * n + i) * 3]);
    for (int r = 0; r < ranks; ++r) {  // rank order: every rank combines identically
      const Real* s = all_stats + (r * n + i) * 3;
      sum += s[1] * std::exp(s[0] - maxv);
      target += s[2];
    }
    const Real lse = maxv + std::log(sum);
    Real* z = logits + i * v_local;
    for (std::int64_t v = 0; v < v_local; ++v) z[v] = std::exp(z[v] - lse);
    losses[static_cast<std::size_t>(i)] = lse - target;
  });
  Real total = 0;
  for (Real l : losses) total += l;
  return total;
}

template <class Real>
void vocab_ce_backward(Real* probs, const std::int32_t* targets, std::int64_t n, std::int64_t v_local,
                       std::int64_t v_first, Real scale) {
  cpu::parallel_for(n, n * v_local, [&](std::int64_t i) {
    Real* p = probs + i * v_local;
    const std::int64_t t = std::int64_t(targets[i]) - v_first;
    for (std::int64_t v = 0; v < v_local; ++v) p[v] = (p[v] - (v == t ? Real(1) : Real(0))) * scale;
  });
}

#define FSDPX_INSTANTIATE(Real)                                                                                  \
  template void vocab_embedding_forward<Real>(Real*, const std::int32_t*, const Real*, std::int64_t, std::int64_t, \
                                              std::int64_t, std::int64_t);                                      \
  template void vocab_embedding_backward<Real>(Real*, const Real*, const std::int32_t*, std::int64_t,            \
                                               std::int64_t, std::int64_t, std::int64_t);                       \
  template void add_positions<Real>(Real*, const Real*, const std::int64_t*, std::int64_t, std::int64_t);        \
  template void positions_backward<Real>(Real*, const Real*, const std::int64_t*, std::int64_t, std::int64_t);   \
  template void vocab_ce_stats<Real>(Real*, const Real*, const std::int32_t*, std::int64_t, std::int64_t,        \
                                     std::int64_t);                                                             \
  template Real vocab_ce_probs<Real>(Real*, const Real*, int, std::int64_t, std::int64_t);                       \
  template void vocab_ce_backward<Real>(Real*, const std::int32_t*, std::int64_t, std::int64_t, std::int64_t, Real);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx
