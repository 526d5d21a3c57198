// executor/cpu/fp8.h — fp8 emulated on the CPU (OCP 8-bit floating point, "OFP8 Formats for Deep Learning",
// Micikevicius et al. 2022, arXiv:2209.05433 §3): values rounded to E4M3 (bias 7, max 448, no infinities)
// or E5M2 (bias 15, max 57344) with round to nearest even, subnormals included, saturating at the largest
// finite value as torchao's casts do (torchao/float8/float8_utils.py to_fp8_saturated). Tensorwise dynamic
// scaling: scale = max / amax (torchao float8_utils.py amax_to_scale, amax clamped below at 1e-12).
// Leaves out fp8 storage and arithmetic: values are rounded where a GPU would cast, computed in fp32.
#pragma once

#include <cstdint>

#include "executor/model/fp8_format.h"

namespace fsdpx::cpu {

using fsdpx::Fp8Format;  // model/fp8_format.h, with the largest finite value
using fsdpx::fp8_max;
// The nearest fp8 value (ties to even), saturated to +-fp8_max; NaN stays NaN, +-0 stays.
float round_to_fp8(float x, Fp8Format f);
// fp8_max / max(amax(|x|), 1e-12), in fp32.
float fp8_tensorwise_scale(const float* x, std::int64_t n, Fp8Format f);
// x[i] := round_to_fp8(x[i] * s) / s with s = fp8_tensorwise_scale(x): what a GEMM operand holds after
// torchao's tensorwise cast, seen in fp32. Returns s.
float fp8_quantize_dequantize(float* x, std::int64_t n, Fp8Format f);

}  // namespace fsdpx::cpu
