// executor/cpu/rope.cpp — RoPE rotation of Q and K heads. Forward and backward share one loop that
// rotates by +angle or −angle (the rotation is orthogonal, so its backward is its transpose).
#include "executor/cpu/rope.h"

#include "core/errors.h"
#include "executor/cpu/kernel_pool.h"

namespace fsdpx::cpu {
namespace {

template <class Real>
void rotate(Real* qkv, const RopeTable<Real>& tab, std::int64_t b, std::int64_t t, std::int64_t nh,
            std::int64_t nkv, std::int64_t hd, Real sign) {
  FSDP_CHECK(hd % 2 == 0 && tab.half == hd / 2 && tab.seq >= t, "rope: table does not match the shape");
  const std::int64_t row = (nh + 2 * nkv) * hd, half = hd / 2;
  parallel_for(b * t, b * t * row, [&](std::int64_t bt) {
    const std::int64_t ti = bt % t;
    Real* r = qkv + bt * row;  // [(NH + 2·NKV)·HD]; Q and K heads are the first NH + NKV
    const Real* c = tab.cos.data() + ti * half;
    const Real* s = tab.sin.data() + ti * half;
    for (std::int64_t h = 0; h < nh + nkv; ++h) {
      Real* x = r + h * hd;
      for (std::int64_t i = 0; i < half; ++i) {
        const Real x0 = x[i], x1 = x[i + half];
        x[i] = x0 * c[i] - sign * x1 * s[i];
        x[i + half] = x1 * c[i] + sign * x0 * s[i];
      }
    }
  });
}

}  // namespace

template <class Real>
void rope_forward(Real* qkv, const RopeTable<Real>& table, std::int64_t b, std::int64_t t, std::int64_t nh,
                  std::int64_t nkv, std::int64_t hd) {
  rotate(qkv, table, b, t, nh, nkv, hd, Real(1));
}

template <class Real>
void rope_backward(Real* dqkv, const RopeTable<Real>& table, std::int64_t b, std::int64_t t, std::int64_t nh,
                   std::int64_t nkv, std::int64_t hd) {
  rotate(dqkv, table, b, t, nh, nkv, hd, Real(-1));
}

#define FSDPX_INSTANTIATE(Real)                                                                              \
  template void rope_forward<Real>(Real*, const RopeTable<Real>&, std::int64_t, std::int64_t, std::int64_t,    \
                                   std::int64_t, std::int64_t);                                             \
  template void rope_backward<Real>(Real*, const RopeTable<Real>&, std::int64_t, std::int64_t, std::int64_t,   \
                                    std::int64_t, std::int64_t);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cpu
