// executor/cpu/attention.cpp — causal softmax attention with GQA, forward and backward, by rows.
// Backward per query row t: dP = dO·Vᵀ, dS = P ⊙ (dP − Σ P·dP), dQ = dS·K·scale, dK += dSᵀ·Q·scale,
// dV += Pᵀ·dO (the softmax Jacobian as in llm.c attention_backward).
#include "executor/cpu/attention.h"

#include <cmath>
#include <vector>

#include "core/errors.h"

namespace fsdpx::cpu {

std::int64_t attention_saved_elems(const AttnShape& s) { return s.b * s.nh * s.t * s.t; }

template <class Real>
void attention_forward(Real* out, Real* saved, const Real* qkv, const AttnShape& s) {
  FSDP_CHECK(s.nkv > 0 && s.nh % s.nkv == 0, "attention: heads must be a multiple of kv_heads");
  const std::int64_t row = s.qkv_row(), group = s.nh / s.nkv, q_dim = s.nh * s.hd;
  const Real scale = Real(1) / std::sqrt(Real(s.hd));
#pragma omp parallel for collapse(3)
  for (std::int64_t b = 0; b < s.b; ++b)
    for (std::int64_t h = 0; h < s.nh; ++h)
      for (std::int64_t t = 0; t < s.t; ++t) {
        const std::int64_t kvh = h / group;
        const Real* q = qkv + (b * s.t + t) * row + h * s.hd;       // [HD]
        Real* p = saved + ((b * s.nh + h) * s.t + t) * s.t;         // [T], zero above the diagonal
        Real maxv = -INFINITY;
        for (std::int64_t t2 = 0; t2 <= t; ++t2) {
          const Real* k = qkv + (b * s.t + t2) * row + q_dim + kvh * s.hd;
          Real dot = 0;
          for (std::int64_t i = 0; i < s.hd; ++i) dot += q[i] * k[i];
          p[t2] = dot * scale;
          if (p[t2] > maxv) maxv = p[t2];
        }
        Real sum = 0;
        for (std::int64_t t2 = 0; t2 <= t; ++t2) sum += (p[t2] = std::exp(p[t2] - maxv));
        for (std::int64_t t2 = 0; t2 < s.t; ++t2) p[t2] = t2 <= t ? p[t2] / sum : Real(0);
        Real* o = out + (b * s.t + t) * q_dim + h * s.hd;  // [HD]
        for (std::int64_t i = 0; i < s.hd; ++i) o[i] = 0;
        for (std::int64_t t2 = 0; t2 <= t; ++t2) {
          const Real* v = qkv + (b * s.t + t2) * row + q_dim + (s.nkv + kvh) * s.hd;
          for (std::int64_t i = 0; i < s.hd; ++i) o[i] += p[t2] * v[i];
        }
      }
}

template <class Real>
void attention_backward(Real* dqkv, const Real* dout, const Real* qkv, const Real* saved, const AttnShape& s) {
  const std::int64_t row = s.qkv_row(), group = s.nh / s.nkv, q_dim = s.nh * s.hd;
  const Real scale = Real(1) / std::sqrt(Real(s.hd));
#pragma omp parallel for collapse(2)
  for (std::int64_t b = 0; b < s.b; ++b)
    for (std::int64_t kvh = 0; kvh < s.nkv; ++kvh) {
      std::vector<Real> ds(static_cast<std::size_t>(s.t));  // [T] dS of one query row
      for (std::int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
        for (std::int64_t t = 0; t < s.t; ++t) {
          const Real* p = saved + ((b * s.nh + h) * s.t + t) * s.t;  // [T]
          const Real* dO = dout + (b * s.t + t) * q_dim + h * s.hd;  // [HD]
          const Real* q = qkv + (b * s.t + t) * row + h * s.hd;
          Real* dq = dqkv + (b * s.t + t) * row + h * s.hd;
          Real pdp = 0;
          for (std::int64_t t2 = 0; t2 <= t; ++t2) {
            const std::int64_t base = (b * s.t + t2) * row + q_dim;
            const Real* v = qkv + base + (s.nkv + kvh) * s.hd;
            Real* dv = dqkv + base + (s.nkv + kvh) * s.hd;
            Real dp = 0;
            for (std::int64_t i = 0; i < s.hd; ++i) {
              dp += dO[i] * v[i];
              dv[i] += p[t2] * dO[i];
            }
            ds[static_cast<std::size_t>(t2)] = dp;
            pdp += p[t2] * dp;
          }
          for (std::int64_t t2 = 0; t2 <= t; ++t2) {
            const std::int64_t base = (b * s.t + t2) * row + q_dim + kvh * s.hd;
            const Real d = p[t2] * (ds[static_cast<std::size_t>(t2)] - pdp) * scale;
            for (std::int64_t i = 0; i < s.hd; ++i) {
              dq[i] += d * qkv[base + i];
              dqkv[base + i] += d * q[i];
            }
          }
        }
    }
}

#define FSDPX_INSTANTIATE(Real)                                                            \
  template void attention_forward<Real>(Real*, Real*, const Real*, const AttnShape&); \
  template void attention_backward<Real>(Real*, const Real*, const Real*, const Real*, const AttnShape&);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cpu
