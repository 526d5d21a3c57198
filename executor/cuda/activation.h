// executor/cuda/activation.h — the MLP nonlinearities (SwiGLU, GELU tanh, squared ReLU) and the
// residual add on bf16 activations, computed in fp32, with the shapes and += backward of
// executor/cpu/activation.h (SwiGLU input rows are [gate | up], width 2F). Leaves out exact-erf GELU
// and fusing the activation into the GEMM epilogue (llm.c's GELU_AUX_BIAS, off by default there too).
#pragma once

#include <cstdint>

#include "core/model_spec.h"
#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// inp [N, mlp_up_width(kind, F)] -> out [N, F].
void mlp_act_forward(FfnKind kind, bf16* out, const bf16* inp, std::int64_t n, std::int64_t f, cudaStream_t stream);

// dinp [N, mlp_up_width] += dout [N, F] · ∂out/∂inp.
void mlp_act_backward(FfnKind kind, bf16* dinp, const bf16* dout, const bf16* inp, std::int64_t n, std::int64_t f,
                      cudaStream_t stream);

// out [count] = a + b (out may alias a or b).
void residual_forward(bf16* out, const bf16* a, const bf16* b, std::int64_t count, cudaStream_t stream);

}  // namespace fsdpx::cuda
