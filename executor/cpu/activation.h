// executor/cpu/activation.h — the MLP nonlinearities and the residual add: SwiGLU (Shazeer 2020,
// "GLU Variants Improve Transformer"), GELU with the tanh approximation (Hendrycks & Gimpel 2016;
// GPT-2, llm.c gelu_forward) and squared ReLU (So et al. 2021, "Primer"). Backward accumulates (+=).
// Leaves out exact-erf GELU and other GLU variants.
#pragma once

#include <cstdint>

#include "core/model_spec.h"
#include "executor/model/block_dims.h"

namespace fsdpx::cpu {

using fsdpx::mlp_up_width;  // columns of the MLP up-projection output per token (block_dims.h)

// inp [N, mlp_up_width] -> out [N, F]. SwiGLU: out = silu(gate) · up with gate = inp[:, :F], up = inp[:, F:].
template <class Real>
void mlp_act_forward(FfnKind kind, Real* out, const Real* inp, std::int64_t n, std::int64_t f);

// dinp [N, mlp_up_width] += dout [N, F] · ∂out/∂inp.
template <class Real>
void mlp_act_backward(FfnKind kind, Real* dinp, const Real* dout, const Real* inp, std::int64_t n, std::int64_t f);

// out [count] = a + b (the residual stream). Its backward is the identity into both inputs, which the
// model applies by letting the residual gradient flow through in place.
template <class Real>
void residual_forward(Real* out, const Real* a, const Real* b, std::int64_t count);

}  // namespace fsdpx::cpu
