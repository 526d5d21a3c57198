// executor/cpu/context_attention.cpp — causal attention of query rows at given positions against whole
// sequences, by rows: forward softmax(Q·Kᵀ·scale)·V over keys 0..pos; backward dP = dO·Vᵀ,
// dS = P ⊙ (dP − Σ P·dP), dQ = dS·K·scale, dK += dSᵀ·Q·scale, dV += Pᵀ·dO (llm.c attention_backward).
#include "executor/cpu/context_attention.h"

#include <cmath>
#include <vector>

#include "core/errors.h"

namespace fsdpx::cpu {

std::int64_t context_attention_saved_elems(const ContextAttnShape& s) { return s.b * s.nh * s.t_q * s.t_kv; }

template <class Real>
void context_attention_forward(Real* out, Real* saved, const Real* qkv, const Real* kv, const ContextAttnShape& s) {
  FSDP_CHECK(s.nkv > 0 && s.nh % s.nkv == 0 && s.q_pos != nullptr, "context attention: bad shape");
  const std::int64_t row = s.qkv_row(), kv_row = s.kv_row(), group = s.nh / s.nkv, q_dim = s.nh * s.hd;
  const Real scale = Real(1) / std::sqrt(Real(s.hd));
#pragma omp parallel for collapse(3)
  for (std::int64_t b = 0; b < s.b; ++b)
    for (std::int64_t h = 0; h < s.nh; ++h)
      for (std::int64_t t = 0; t < s.t_q; ++t) {
        const std::int64_t kvh = h / group, seen = s.q_pos[t] + 1;
        const Real* q = qkv + (b * s.t_q + t) * row + h * s.hd;   // [HD]
        Real* p = saved + ((b * s.nh + h) * s.t_q + t) * s.t_kv;  // [T_kv], zero past the position
        Real maxv = -INFINITY;
        for (std::int64_t t2 = 0; t2 < seen; ++t2) {
          const Real* k = kv + (b * s.t_kv + t2) * kv_row + kvh * s.hd;
          Real dot = 0;
          for (std::int64_t i = 0; i < s.hd; ++i) dot += q[i] * k[i];
          p[t2] = dot * scale;
          if (p[t2] > maxv) maxv = p[t2];
        }
        Real sum = 0;
        for (std::int64_t t2 = 0; t2 < seen; ++t2) sum += (p[t2] = std::exp(p[t2] - maxv));
        for (std::int64_t t2 = 0; t2 < s.t_kv; ++t2) p[t2] = t2 < seen ? p[t2] / sum : Real(0);
        Real* o = out + (b * s.t_q + t) * q_dim + h * s.hd;  // [HD]
        for (std::int64_t i = 0; i < s.hd; ++i) o[i] = 0;
        for (std::int64_t t2 = 0; t2 < seen; ++t2) {
          const Real* v = kv + (b * s.t_kv + t2) * kv_row + (s.nkv + kvh) * s.hd;
          for (std::int64_t i = 0; i < s.hd; ++i) o[i] += p[t2] * v[i];
        }
      }
}

template <class Real>
void context_attention_backward(Real* dqkv, Real* dkv, const Real* dout, const Real* qkv, const Real* kv,
                                const Real* saved, const ContextAttnShape& s) {
  const std::int64_t row = s.qkv_row(), kv_row = s.kv_row(), group = s.nh / s.nkv, q_dim = s.nh * s.hd;
  const Real scale = Real(1) / std::sqrt(Real(s.hd));
#pragma omp parallel for collapse(2)
  for (std::int64_t b = 0; b < s.b; ++b)
    for (std::int64_t kvh = 0; kvh < s.nkv; ++kvh) {
      std::vector<Real> ds(static_cast<std::size_t>(s.t_kv));  // [T_kv] dP of one query row
      for (std::int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
        for (std::int64_t t = 0; t < s.t_q; ++t) {
          const std::int64_t seen = s.q_pos[t] + 1;
          const Real* p = saved + ((b * s.nh + h) * s.t_q + t) * s.t_kv;  // [T_kv]
          const Real* dO = dout + (b * s.t_q + t) * q_dim + h * s.hd;      // [HD]
          const Real* q = qkv + (b * s.t_q + t) * row + h * s.hd;
          Real* dq = dqkv + (b * s.t_q + t) * row + h * s.hd;
          Real pdp = 0;
          for (std::int64_t t2 = 0; t2 < seen; ++t2) {
            const std::int64_t base = (b * s.t_kv + t2) * kv_row + (s.nkv + kvh) * s.hd;
            Real dp = 0;
            for (std::int64_t i = 0; i < s.hd; ++i) {
              dp += dO[i] * kv[base + i];
              dkv[base + i] += p[t2] * dO[i];
            }
            ds[static_cast<std::size_t>(t2)] = dp;
            pdp += p[t2] * dp;
          }
          for (std::int64_t t2 = 0; t2 < seen; ++t2) {
            const std::int64_t base = (b * s.t_kv + t2) * kv_row + kvh * s.hd;
            const Real d = p[t2] * (ds[static_cast<std::size_t>(t2)] - pdp) * scale;
            for (std::int64_t i = 0; i < s.hd; ++i) {
              dq[i] += d * kv[base + i];
              dkv[base + i] += d * q[i];
            }
          }
        }
    }
}

#define FSDPX_INSTANTIATE(Real)                                                                                   \
  template void context_attention_forward<Real>(Real*, Real*, const Real*, const Real*, const ContextAttnShape&); \
  template void context_attention_backward<Real>(Real*, Real*, const Real*, const Real*, const Real*, const Real*, \
                                                 const ContextAttnShape&);
FSDPX_INSTANTIATE(float)
FSDPX_INSTANTIATE(double)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cpu
