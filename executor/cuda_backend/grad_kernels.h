// executor/cuda_backend/grad_kernels.h — the gradient bookkeeping of the CUDA backend's FSDP units:
// adding a reduced shard to the fp32 accumulator while flagging NaN/infinity, and Σ g² for the global
// norm in double with a fixed reduction tree (the same result run to run, like the CPU's rank-order
// sums). Leaves out fused clipping: the clip factor goes into AdamW (executor/cuda/adamw.h).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace fsdpx::cuda {

// acc [n] += add [n]; *non_finite = 1 when any element of `add` is a NaN or an infinity (non_finite may
// be null: a plain sum, as zero bubble's weight pass adds the norm gradients its input pass kept).
void accumulate_check_finite(float* acc, const float* add, std::int64_t n, int* non_finite, cudaStream_t stream);

// Doubles of scratch sum_squares needs.
std::int64_t sum_squares_scratch_elems();
// *out (+)= Σ x[i]² in double: fixed per-block partial sums, then one ordered pass over the blocks.
void sum_squares(const float* x, std::int64_t n, double* scratch, double* out, bool accumulate, cudaStream_t stream);

}  // namespace fsdpx::cuda
