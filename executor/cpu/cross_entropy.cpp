// executor/cpu/cross_entropy.cpp — row softmax with max subtraction (vectorised exp, vec_math.h), loss
// from log-sum-exp (not from log of the rounded probability), mean over tokens summed in token order
// for determinism.
#include "executor/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "executor/cpu/vec_math.h"
#include "executor/cpu/kernel_pool.h"

namespace fsdpx::cpu {

template <class Real>
Real softmax_cross_entropy_forward(Real* logits, const std::int32_t* targets, std::int64_t n, std::int64_t vocab) {
  for (std::int64_t i = 0; i < n; ++i)
    FSDP_CHECK(targets[i] >= 0 && targets[i] < vocab, fmt::format("cross_entropy: target {} out of range", targets[i]));
  std::vector<Real> losses(static_cast<std::size_t>(n));  // [N]
  parallel_for(n, n * vocab, [&](std::int64_t i) {
  Real* z = logits + i * vocab;  // [V]
  Real maxv = z[0];
#pragma omp simd reduction(max : maxv)
  for (std::int64_t v = 1; v < vocab; ++v) maxv = std::max(maxv, z[v]);
  const Real target_logit = z[targets[i]];
  Real sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t v = 0; v < vocab; ++v) {
    z[v] = vexp(z[v] - maxv);
    sum += z[v];
  }
  for (std::int64_t v = 0; v < vocab; ++v) z[v] /= sum;
  losses[static_cast<std::size_t>(i)] = std::log(sum) + maxv - target_logit;
  });
  Real total = 0;
  for (Real l : losses) total += l;
  return total / Real(n);
}

template <class Real>
void softmax_cross_entropy_backward(Real* probs, const std::int32_t* targets, std::int64_t n, std::int64_t vocab,
                                    Real dloss) {
  const Real scale = dloss / Real(n);
  parallel_for(n, n * vocab, [&](std::int64_t i) {
    Real* p = probs + i * vocab;  // [V]
    for (std::int64_t v = 0; v < vocab; ++v) p[v] = (p[v] - (v == targets[i] ? Real(1) : Real(0))) * scale;
  });
}

#define FSDPX_INSTANTIATE(Real)                                                                                \
  template Real softmax_cross_entropy_forward<Real>(Real*, const std::int32_t*, std::int64_t, std::int64_t);   \
  template void softmax_cross_entropy_backward<Real>(Real*, const std::int32_t*, std::int64_t, std::int64_t, Real);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cpu
