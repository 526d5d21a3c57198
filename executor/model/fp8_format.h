// executor/model/fp8_format.h — the two OCP 8-bit float formats (Micikevicius et al. 2022, "FP8 Formats for
// Deep Learning", arXiv:2209.05433 Table 1) and their largest finite value: a device-neutral part of the
// model description that the CPU emulation (executor/cpu/fp8.h) and the CUDA casts (executor/cuda/fp8.h)
// both take. Leaves out rounding and scaling (each device's).
#pragma once

namespace fsdpx {

enum class Fp8Format { e4m3, e5m2 };

// The largest finite value: E4M3 (bias 7; only S.1111.111 is NaN) 1.75 x 2^8 = 448; E5M2 (bias 15,
// IEEE-like) 1.75 x 2^15 = 57344.
constexpr float fp8_max(Fp8Format f) { return f == Fp8Format::e4m3 ? 448.0f : 57344.0f; }

}  // namespace fsdpx
