// executor/cuda/cast.h — dtype casts between fp32 shards and 16-bit (bf16, f16) working copies, and the padding
// helpers of flat FSDP buffers and padded vocabularies (executor/model/README.md: units are zero-padded
// to a multiple of dp_shard; llm.c pads the vocabulary 50257 -> 50304). Round-to-nearest-even.
// Leaves out stochastic rounding and fp8.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// out [n] = bf16(inp [n]).
void cast_f32_to_bf16(bf16* out, const float* inp, std::int64_t n, cudaStream_t stream);
// out [n] = T(inp [n]) for T = bf16 or f16 (fp16: beyond 65504 → ±inf).
template <class T>
void cast_f32_to_16(T* out, const float* inp, std::int64_t n, cudaStream_t stream);
// x [n] := fp32(fp16(x)) in place: the values an fp16 tensor would hold (cpu::round_to_fp16's twin).
void round_through_f16(float* x, std::int64_t n, cudaStream_t stream);

// out [n] = float(inp [n]); accumulate: out += instead of =.
void cast_bf16_to_f32(float* out, const bf16* inp, std::int64_t n, bool accumulate, cudaStream_t stream);

// dst [rows, dst_cols] = src [rows, src_cols] with columns src_cols..dst_cols−1 set to 0 (dst_cols ≥ src_cols).
void pad_columns_bf16(bf16* dst, const bf16* src, std::int64_t rows, std::int64_t src_cols, std::int64_t dst_cols,
                      cudaStream_t stream);

// Zeroes elements [valid, padded) of a flat buffer (the tail of an FSDP unit).
void zero_tail_bf16(bf16* buf, std::int64_t valid, std::int64_t padded, cudaStream_t stream);
void zero_tail_f32(float* buf, std::int64_t valid, std::int64_t padded, cudaStream_t stream);

}  // namespace fsdpx::cuda
