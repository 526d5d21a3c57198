// executor/cpu/fp16.h — IEEE binary16 on the CPU, so that the fp32 reference backend rounds the tensors a
// GPU would hold in fp16 (round to nearest even through GCC's _Float16; beyond 65504 they become
// infinities, below 2^-24 zeros, as on the device) and runs fp16 loss scaling's unscale-and-check pass.
// Leaves out fp16 arithmetic: values are rounded where a GPU would store them, computed in fp32.
#pragma once

#include <cstdint>

namespace fsdpx::cpu {

// x[i] := fp32(fp16(x[i])) for i < n.
void round_to_fp16(float* x, std::int64_t n);

// x[i] *= inv_scale for i < n; true when some x[i] was an infinity or a NaN before (PyTorch's
// _amp_foreach_non_finite_check_and_unscale_: the product is skipped when inv_scale is 1).
bool unscale_and_check(float* x, std::int64_t n, float inv_scale);

}  // namespace fsdpx::cpu
