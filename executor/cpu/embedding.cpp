// executor/cpu/embedding.cpp — embedding lookup and its deterministic scatter-add backward.
#include "executor/cpu/embedding.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cpu/kernel_pool.h"

namespace fsdpx::cpu {

template <class Real>
void embedding_forward(Real* out, const std::int32_t* tokens, const Real* wte, const Real* wpe, std::int64_t b,
                       std::int64_t t, std::int64_t c, std::int64_t vocab) {
  for (std::int64_t i = 0; i < b * t; ++i)
    FSDP_CHECK(tokens[i] >= 0 && tokens[i] < vocab, fmt::format("embedding: token {} out of range", tokens[i]));
  parallel_for(b * t, b * t * c, [&](std::int64_t i) {
    const Real* e = wte + std::int64_t(tokens[i]) * c;  // [C]
    const Real* p = wpe ? wpe + (i % t) * c : nullptr;   // [C]
    Real* y = out + i * c;
    for (std::int64_t j = 0; j < c; ++j) y[j] = p ? e[j] + p[j] : e[j];
  });
}

template <class Real>
void embedding_backward(Real* dwte, Real* dwpe, const Real* dout, const std::int32_t* tokens, std::int64_t b,
                        std::int64_t t, std::int64_t c) {
  // Channels in fixed blocks across threads; tokens visited in order inside each block: one summation
  // order per element whatever the thread count, and rows read contiguously.
  constexpr std::int64_t kBlock = 64;
  parallel_for((c + kBlock - 1) / kBlock, b * t * c, [&](std::int64_t blk) {
    const std::int64_t j0 = blk * kBlock, j1 = std::min(c, j0 + kBlock);
    for (std::int64_t i = 0; i < b * t; ++i) {
      Real* dw = dwte + std::int64_t(tokens[i]) * c;
      for (std::int64_t j = j0; j < j1; ++j) dw[j] += dout[i * c + j];
    }
  });
  if (!dwpe) return;
  parallel_for(t, b * t * c, [&](std::int64_t ti) {
    for (std::int64_t bi = 0; bi < b; ++bi)
      for (std::int64_t j = 0; j < c; ++j) dwpe[ti * c + j] += dout[(bi * t + ti) * c + j];
  });
}

#define FSDPX_INSTANTIATE(Real)                                                                                \
  template void embedding_forward<Real>(Real*, const std::int32_t*, const Real*, const Real*, std::int64_t,     \
                                        std::int64_t, std::int64_t, std::int64_t);                            \
  template void embedding_backward<Real>(Real*, Real*, const Real*, const std::int32_t*, std::int64_t,          \
                                         std::int64_t, std::int64_t);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cpu
