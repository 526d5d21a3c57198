// executor/model/fp8_linear.h — a block's linear layer (executor/cpu/gemm.h) with torchao's tensorwise float8
// recipe emulated, as torchtitan's float8 converter runs it (torchao/float8/config.py Float8LinearConfig
// defaults, float8_linear.py): the three GEMMs take input and weight cast to E4M3 and the output gradient
// cast to E5M2, each with one dynamic scale from its own amax (executor/cpu/fp8.h), and accumulate in fp32;
// the bias and its gradient stay in high precision. Without a workspace (fp8 off) the calls are the plain
// GEMMs. Leaves out fp8 storage (operands are rounded in place of a cast) and use_fast_accum.
#pragma once

#include <cstdint>
#include <vector>

namespace fsdpx {

// Scratch for the rounded operands of one GEMM (reused across calls; one per model, not shared by threads).
template <class Real>
struct Fp8Workspace {
  std::vector<Real> a, b;
};

// out [N, OC] = fp8(inp [N, C]) · fp8(weight [OC, C])ᵀ + bias [OC] (bias may be null).
template <class Real>
void linear_forward(Fp8Workspace<Real>* fp8, Real* out, const Real* inp, const Real* weight, const Real* bias,
                    std::int64_t n, std::int64_t c, std::int64_t oc);

// dinp [N, C] += fp8(dout [N, OC]) · fp8(weight [OC, C]).
template <class Real>
void linear_backward_dx(Fp8Workspace<Real>* fp8, Real* dinp, const Real* dout, const Real* weight, std::int64_t n,
                        std::int64_t c, std::int64_t oc);

// dweight [OC, C] += fp8(dout)ᵀ · fp8(inp); dbias [OC] += Σ_n dout[n] from the unrounded dout (may be null).
template <class Real>
void linear_backward_dw(Fp8Workspace<Real>* fp8, Real* dweight, Real* dbias, const Real* dout, const Real* inp,
                        std::int64_t n, std::int64_t c, std::int64_t oc);

}  // namespace fsdpx
