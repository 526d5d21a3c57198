// executor/cuda/activation.h — the MLP nonlinearities (SwiGLU, GELU tanh, squared ReLU) and the
// residual add on 16-bit activations (T = bf16 or f16), computed in fp32, with the shapes and += backward of
// executor/cpu/activation.h (SwiGLU input rows are [gate | up], width 2F). Leaves out exact-erf GELU
// and fusing the activation into the GEMM epilogue (llm.c's GELU_AUX_BIAS, off by default there too).
#pragma once

#include <cstdint>

#include "core/model_spec.h"
#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// inp [N, mlp_up_width(kind, F)] -> out [N, F].
template <class T>
void mlp_act_forward(FfnKind kind, T* out, const T* inp, std::int64_t n, std::int64_t f, cudaStream_t stream);

// dinp [N, mlp_up_width] += dout [N, F] · ∂out/∂inp.
template <class T>
void mlp_act_backward(FfnKind kind, T* dinp, const T* dout, const T* inp, std::int64_t n, std::int64_t f,
                      cudaStream_t stream);

// out [count] = a + b (out may alias a or b).
template <class T>
void residual_forward(T* out, const T* a, const T* b, std::int64_t count, cudaStream_t stream);

}  // namespace fsdpx::cuda
