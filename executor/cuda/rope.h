// executor/cuda/rope.h — rotary position embedding on the Q and K heads of the fused 16-bit qkv
// activation, in place, with the rotate_half pairing of executor/cpu/rope.h (dim i with i + HD/2).
// The cos/sin tables are fp32 [T, HD/2] on the device (make_rope_table<float> of
// executor/model/rope_table.h, uploaded: any RoPE scaling, YaRN's cos/sin scale included, is in the
// table); rotation is done in fp32. Backward rotates by the opposite angle. Leaves out nothing of the
// scaling: the kernel only reads the table.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// qkv [B, T, (NH + 2·NKV)·HD] (T = bf16 or f16): rotates the NH query heads and NKV key heads; V untouched.
template <class T>
void rope_forward(T* qkv, const float* cos_table, const float* sin_table, std::int64_t b, std::int64_t t,
                  std::int64_t nh, std::int64_t nkv, std::int64_t hd, cudaStream_t stream);

// dqkv [B, T, (NH + 2·NKV)·HD]: gradient w.r.t. the rotated Q, K in, w.r.t. the unrotated Q, K out.
template <class T>
void rope_backward(T* dqkv, const float* cos_table, const float* sin_table, std::int64_t b, std::int64_t t,
                   std::int64_t nh, std::int64_t nkv, std::int64_t hd, cudaStream_t stream);

}  // namespace fsdpx::cuda
