// executor/cuda/fp8.h — torchao's tensorwise dynamic cast on the GPU, the twin of executor/cpu/fp8.h: a
// tensor's amax, its scale (torchao/float8/float8_utils.py amax_to_scale: fp8 max / max(amax, 1e-12), and
// the inverse that cuBLASLt's A/B scale pointers take), and the saturating cast of x·scale to E4M3 or E5M2
// codes (cuda_fp8.h __nv_cvt_float_to_fp8, __NV_SATFINITE, round to nearest even), optionally transposed
// for the backward GEMMs' operand layouts (fp8_gemm.h). Scales stay on the device: no host sync.
// Leaves out delayed scaling (amax histories), rowwise scales and fused cast-transpose-amax kernels.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"
#include "executor/model/fp8_format.h"

namespace fsdpx::cuda {

// amax [1] = max_i |x [n]| (zeroed first, on `stream`); T = float or bf16.
template <class T>
void fp8_amax(float* amax, const T* x, std::int64_t n, cudaStream_t stream);

// scale [1] = fp8_max(f) / max(amax [1], 1e-12) in fp32; inv_scale [1] = 1 / scale.
void fp8_scale_from_amax(float* scale, float* inv_scale, const float* amax, Fp8Format f, cudaStream_t stream);

// codes = fp8(x [rows, cols] · scale [0]) saturated to ±fp8_max, one byte each, laid out [rows, cols], or
// [cols, rows] when `transpose` (row-major both).
template <class T>
void fp8_cast(std::uint8_t* codes, const T* x, std::int64_t rows, std::int64_t cols, bool transpose,
              const float* scale, Fp8Format f, cudaStream_t stream);

// out [n] = float(codes [n]) · inv_scale [0]: the values a GEMM reads (tests, debugging).
void fp8_decode(float* out, const std::uint8_t* codes, std::int64_t n, const float* inv_scale, Fp8Format f,
                cudaStream_t stream);

}  // namespace fsdpx::cuda
