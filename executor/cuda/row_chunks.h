// executor/cuda/row_chunks.h — the row chunks of the deterministic column sums (norm.h's weight and bias
// gradients, bias.h's bias gradient; each its own count): a fixed chunk count, so the sum order does not
// depend on the GPU, and the fp32 scratch of per-chunk partial sums those kernels take. Inline here so
// that every build of the kernels (the GPU's and the emulated runtime's host loops, tests/cuda/emulated)
// sizes the model's scratch alike, as docs/cuda.md "Device model" states it.
#pragma once

#include <cstdint>

namespace fsdpx::cuda {

inline constexpr std::int64_t kMaxRowChunks = 64;

inline std::int64_t row_chunks(std::int64_t n) { return n < kMaxRowChunks ? n : kMaxRowChunks; }

// Norm backward computes dinp and the weight partials in one pass, one thread block per chunk: its chunks
// are the blocks that fill the GPU (1,024 ≈ 132 SMs × 8 blocks of 256 threads on an H200).
inline constexpr std::int64_t kMaxNormRowChunks = 1024;

inline std::int64_t norm_row_chunks(std::int64_t n) { return n < kMaxNormRowChunks ? n : kMaxNormRowChunks; }

// fp32 elements of the scratch buffer that norm backward needs for n rows of width c (dweight, dbias).
inline std::int64_t norm_backward_scratch_elems(std::int64_t n, std::int64_t c) { return 2 * norm_row_chunks(n) * c; }

// fp32 elements of the scratch buffer that bias backward needs for n rows of oc columns.
inline std::int64_t bias_backward_scratch_elems(std::int64_t n, std::int64_t oc) { return row_chunks(n) * oc; }

}  // namespace fsdpx::cuda
