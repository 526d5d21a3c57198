// executor/cuda/bias.h — the bias gradient of a linear layer, dbias [OC] += Σ_n dout [N, OC], summed
// deterministically (per-chunk column sums in row order, then chunks in order: no float atomics, as
// llm.c matmul_backward_bias_kernel9 + reduce_add_sum_kernel). Leaves out fusing into the dW GEMM
// (cuBLASLt's BGRADB epilogue), a later performance option. Also the forward bias add for a bias pointer
// the GEMM's bias epilogue cannot take (gemm.cpp: not 16-byte aligned).
#pragma once

#include <cstdint>

#include "executor/cuda/row_chunks.h"  // bias_backward_scratch_elems
#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// dbias [OC] (fp32) += Σ_n dout [N, OC] (T = bf16 or f16); scratch [bias_backward_scratch_elems].
template <class T>
void bias_backward(float* dbias, float* scratch, const T* dout, std::int64_t n, std::int64_t oc,
                   cudaStream_t stream);

// Column-major C [m, n] (ldc) += bias [m] broadcast over the n columns, in C's type (T, or fp32 when
// c_f32), added in fp32 and rounded once: the forward bias of gemm_col_major without the epilogue.
template <class T>
void bias_add_columns(void* c, bool c_f32, const T* bias, std::int64_t m, std::int64_t n, std::int64_t ldc,
                      cudaStream_t stream);

}  // namespace fsdpx::cuda
