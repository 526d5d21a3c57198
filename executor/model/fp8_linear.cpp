// executor/model/fp8_linear.cpp — the linear layer with emulated tensorwise fp8 operands (see fp8_linear.h).
#include "executor/model/fp8_linear.h"

#include <algorithm>
#include <cmath>

#include "executor/cpu/fp8.h"
#include "executor/cpu/gemm.h"

namespace fsdpx {

namespace {

using cpu::Fp8Format;

// out [n] = round_to_fp8(x · s) / s with s = fp8_max / max(amax(|x|), 1e-12) in fp32, as torchao's
// hp_tensor_and_scale_to_float8 casts (x.float() · scale, saturated) and its emulated GEMM reads back
// (float8_utils.py amax_to_scale). Returns out.
template <class Real>
const Real* rounded(const Real* x, std::int64_t n, Fp8Format f, std::vector<Real>& out) {
  out.resize(std::size_t(n));
  float amax = 0;
  for (std::int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(float(x[i])));
  const float s = cpu::fp8_max(f) / std::max(amax, 1e-12f);
  for (std::int64_t i = 0; i < n; ++i) out[std::size_t(i)] = Real(cpu::round_to_fp8(float(x[i]) * s, f) / s);
  return out.data();
}

}  // namespace

template <class Real>
void linear_forward(Fp8Workspace<Real>* fp8, Real* out, const Real* inp, const Real* weight, const Real* bias,
                    std::int64_t n, std::int64_t c, std::int64_t oc) {
  if (fp8) {
    inp = rounded(inp, n * c, Fp8Format::e4m3, fp8->a);
    weight = rounded(weight, oc * c, Fp8Format::e4m3, fp8->b);
  }
  cpu::matmul_forward(out, inp, weight, bias, n, c, oc);
}

template <class Real>
void linear_backward_dx(Fp8Workspace<Real>* fp8, Real* dinp, const Real* dout, const Real* weight, std::int64_t n,
                        std::int64_t c, std::int64_t oc) {
  if (fp8) {
    dout = rounded(dout, n * oc, Fp8Format::e5m2, fp8->a);
    weight = rounded(weight, oc * c, Fp8Format::e4m3, fp8->b);
  }
  cpu::matmul_backward_dx(dinp, dout, weight, n, c, oc);
}

template <class Real>
void linear_backward_dw(Fp8Workspace<Real>* fp8, Real* dweight, Real* dbias, const Real* dout, const Real* inp,
                        std::int64_t n, std::int64_t c, std::int64_t oc) {
  if (!fp8) {
    cpu::matmul_backward_dw(dweight, dbias, dout, inp, n, c, oc);
    return;
  }
  // The bias is added outside torchao's fp8 matmul, so autograd sums the high-precision gradient (in n
  // order per element, as matmul_backward_dw does).
  if (dbias)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < oc; ++j) dbias[j] += dout[i * oc + j];
  const Real* qdout = rounded(dout, n * oc, Fp8Format::e5m2, fp8->a);
  const Real* qinp = rounded(inp, n * c, Fp8Format::e4m3, fp8->b);
  cpu::matmul_backward_dw(dweight, static_cast<Real*>(nullptr), qdout, qinp, n, c, oc);
}

#define FSDPX_FP8_LINEAR(Real)                                                                                    \
  template void linear_forward<Real>(Fp8Workspace<Real>*, Real*, const Real*, const Real*, const Real*,         \
                                     std::int64_t, std::int64_t, std::int64_t);                                 \
  template void linear_backward_dx<Real>(Fp8Workspace<Real>*, Real*, const Real*, const Real*, std::int64_t,    \
                                         std::int64_t, std::int64_t);                                           \
  template void linear_backward_dw<Real>(Fp8Workspace<Real>*, Real*, Real*, const Real*, const Real*,           \
                                         std::int64_t, std::int64_t, std::int64_t);
FSDPX_FP8_LINEAR(float)
FSDPX_FP8_LINEAR(double)
#undef FSDPX_FP8_LINEAR

}  // namespace fsdpx
