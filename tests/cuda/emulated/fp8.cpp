// tests/cuda/emulated/fp8.cpp — executor/cuda/fp8.h and fp8_gemm.h on the emulated runtime: amax, scale, cast
// and decode on the stream with the device's own conversions (cuda_fp8.h's __nv_cvt_float_to_fp8 and
// __nv_cvt_fp8_to_halfraw are host functions too), and the TN fp8 GEMM as fp32 loops over the decoded codes
// times both inverse scales, one bf16 rounding of D, amax of D before it. So test_cuda_fp8 runs without a GPU
// and checks the device conversions against cpu::round_to_fp8. Leaves out cuBLASLt's alignment limits.
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/errors.h"
#include "executor/cuda/fp8.h"
#include "executor/cuda/fp8_gemm.h"
#include "tests/cuda/emulated/elem.h"
#include "tests/cuda/emulated/emu_stream.h"

namespace fsdpx::cuda {

using emu::enqueue;

namespace {

__nv_fp8_interpretation_t interpretation(Fp8Format f) { return f == Fp8Format::e4m3 ? __NV_E4M3 : __NV_E5M2; }

float decode(std::uint8_t code, Fp8Format f) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(code), interpretation(f))));
}

// An operand's values: decoded codes [count] times its inverse scale.
std::vector<float> values(const Fp8Operand& o, std::int64_t count) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) v[std::size_t(i)] = decode(o.codes[i], o.format) * o.inv_scale[0];
  return v;
}

}  // namespace

template <class T>
void fp8_amax(float* amax, const T* x, std::int64_t n, cudaStream_t stream) {
  enqueue(stream, [=] {
    float m = 0;
    for (std::int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(emu::to_f32(x[i])));
    amax[0] = m;
  });
}
template void fp8_amax<float>(float*, const float*, std::int64_t, cudaStream_t);
template void fp8_amax<bf16>(float*, const bf16*, std::int64_t, cudaStream_t);

void fp8_scale_from_amax(float* scale, float* inv_scale, const float* amax, Fp8Format f, cudaStream_t stream) {
  enqueue(stream, [=] {
    scale[0] = fp8_max(f) / std::max(amax[0], 1e-12f);
    inv_scale[0] = 1.0f / scale[0];
  });
}

template <class T>
void fp8_cast(std::uint8_t* codes, const T* x, std::int64_t rows, std::int64_t cols, bool transpose,
              const float* scale, Fp8Format f, cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        codes[transpose ? c * rows + r : r * cols + c] =
            __nv_cvt_float_to_fp8(emu::to_f32(x[r * cols + c]) * scale[0], __NV_SATFINITE, interpretation(f));
  });
}
template void fp8_cast<float>(std::uint8_t*, const float*, std::int64_t, std::int64_t, bool, const float*, Fp8Format,
                              cudaStream_t);
template void fp8_cast<bf16>(std::uint8_t*, const bf16*, std::int64_t, std::int64_t, bool, const float*, Fp8Format,
                             cudaStream_t);

void fp8_decode(float* out, const std::uint8_t* codes, std::int64_t n, const float* inv_scale, Fp8Format f,
                cudaStream_t stream) {
  enqueue(stream, [=] {
    for (std::int64_t i = 0; i < n; ++i) out[i] = decode(codes[i], f) * inv_scale[0];
  });
}

void fp8_gemm_tn(GemmContext&, std::int64_t m, std::int64_t n, std::int64_t k, const Fp8Operand& a,
                 const Fp8Operand& b, bf16* d, float* amax_d, bool accumulate, cudaStream_t stream) {
  FSDP_CHECK(m > 0 && n > 0 && k > 0 && k % 16 == 0, "fp8 gemm: cuBLASLt's fp8 kernels need k a multiple of 16");
  FSDP_CHECK(a.format == Fp8Format::e4m3 || b.format == Fp8Format::e4m3, "fp8 gemm: no e5m2 x e5m2 kernel");
  enqueue(stream, [=] {
    const std::vector<float> va = values(a, k * m), vb = values(b, k * n);  // column-major [k, m], [k, n]
    float amax = 0;
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < m; ++i) {
        float acc = accumulate ? emu::to_f32(d[j * m + i]) : 0.0f;
        for (std::int64_t p = 0; p < k; ++p) acc += va[std::size_t(i * k + p)] * vb[std::size_t(j * k + p)];
        d[j * m + i] = emu::from_f32<bf16>(acc);
        amax = std::max(amax, std::fabs(emu::to_f32(d[j * m + i])));  // fp8_amax's pass over the bf16 D
      }
    if (amax_d) amax_d[0] = amax;
  });
}

}  // namespace fsdpx::cuda
