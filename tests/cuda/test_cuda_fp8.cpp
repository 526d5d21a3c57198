// tests/cuda/test_cuda_fp8.cpp — the GPU's tensorwise fp8 path against the CPU emulation: amax, scale and the
// E4M3 / E5M2 casts (plain and transposed) give exactly cpu::round_to_fp8's grid values; the cuBLASLt fp8 GEMMs
// (forward, dx with accumulate, dW, amax of the output) match executor/model/fp8_linear.h on the same
// inputs within bf16 output rounding (both multiply the same fp8 values and accumulate in fp32). Skipped,
// like all of test_cuda, without a device (test_cuda_main.cpp); needs sm_90 for the GEMMs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "executor/cpu/fp8.h"
#include "executor/cuda/fp8.h"
#include "executor/cuda/fp8_gemm.h"
#include "executor/model/fp8_linear.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {

constexpr std::int64_t kN = 48, kC = 64, kOC = 80;  // multiples of 16: cuBLASLt's fp8 k and leading dims

// One tensor cast on the device: its codes ([rows, cols], or transposed), scale and inverse scale.
struct DeviceFp8 {
  DeviceBuffer<std::uint8_t> codes;
  DeviceBuffer<float> amax{1}, scale{1}, inv_scale{1};
  Fp8Format format;
  DeviceFp8(const DeviceBuffer<float>& x, std::int64_t rows, std::int64_t cols, bool transpose, Fp8Format f)
      : codes(std::size_t(rows * cols)), format(f) {
    fp8_amax(amax.get(), x.get(), rows * cols, nullptr);
    fp8_scale_from_amax(scale.get(), inv_scale.get(), amax.get(), f, nullptr);
    fp8_cast(codes.get(), x.get(), rows, cols, transpose, scale.get(), f, nullptr);
  }
  Fp8Operand operand() const { return {codes.get(), format, inv_scale.get()}; }
  std::vector<float> grid_values() const {  // the codes' fp8 values (decoded with an inverse scale of 1)
    DeviceBuffer<float> out(codes.size()), one(1);
    upload(one, std::vector<float>{1.0f});
    fp8_decode(out.get(), codes.get(), std::int64_t(codes.size()), one.get(), format, nullptr);
    return download(out);
  }
};

std::vector<float> transposed(const std::vector<float>& x, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(x.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) t[std::size_t(c * rows + r)] = x[std::size_t(r * cols + c)];
  return t;
}

TEST_CASE("cuda fp8: amax, scale and casts equal the CPU's rounding (e4m3, e5m2, transposed)") {
  const std::vector<float> x = random_bf16(kN * kC, -3.0f, 3.0f);
  DeviceBuffer<float> d_x(x.size());
  upload(d_x, x);
  for (const Fp8Format f : {Fp8Format::e4m3, Fp8Format::e5m2})
    for (const bool transpose : {false, true}) {
      CAPTURE(int(f));
      CAPTURE(transpose);
      const DeviceFp8 q(d_x, kN, kC, transpose, f);
      const float s = cpu::fp8_tensorwise_scale(x.data(), std::int64_t(x.size()), f);
      CHECK(download(q.scale)[0] == s);
      CHECK(download(q.inv_scale)[0] == 1.0f / s);
      std::vector<float> want(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) want[i] = cpu::round_to_fp8(x[i] * s, f);
      if (transpose) want = transposed(want, kN, kC);
      const std::vector<float> got = q.grid_values();
      std::size_t differ = 0, first = 0;
      for (std::size_t i = got.size(); i-- > 0;)
        if (got[i] != want[i]) ++differ, first = i;
      CHECK_MESSAGE(differ == 0, differ << " codes differ, first at " << first << ": " << got[first] << " vs "
                                        << want[first]);
    }
}

TEST_CASE("cuda fp8: cuBLASLt e4m3/e5m2 GEMMs match the CPU emulation (forward + amax, dx, dW)") {
  GemmContext ctx;
  const auto inp = random_bf16(kN * kC), w = random_bf16(kOC * kC, -0.1f, 0.1f);
  const auto dout = random_bf16(kN * kOC, -0.01f, 0.01f);
  DeviceBuffer<float> d_inp(inp.size()), d_w(w.size()), d_dout(dout.size());
  upload(d_inp, inp), upload(d_w, w), upload(d_dout, dout);
  Fp8Workspace<float> ws;
  std::vector<float> out(kN * kOC), dx(kN * kC, 0.0f), dw(kOC * kC, 0.0f);
  linear_forward(&ws, out.data(), inp.data(), w.data(), static_cast<const float*>(nullptr), kN, kC, kOC);
  linear_backward_dx(&ws, dx.data(), dout.data(), w.data(), kN, kC, kOC);
  linear_backward_dw(&ws, dw.data(), static_cast<float*>(nullptr), dout.data(), inp.data(), kN, kC, kOC);

  const DeviceFp8 q_inp(d_inp, kN, kC, false, Fp8Format::e4m3), q_w(d_w, kOC, kC, false, Fp8Format::e4m3);
  DeviceBuffer<bf16> d_out(kN * kOC);
  DeviceBuffer<float> amax(1);
  fp8_matmul_forward(ctx, d_out.get(), q_inp.operand(), q_w.operand(), kN, kC, kOC, amax.get(), nullptr);
  CHECK(close("fp8 forward", download_bf16(d_out), out, 1e-3, kBf16Rtol));
  float want_amax = 0;  // the amax of the bf16 output the GEMM wrote (fp8_gemm.h), exactly
  for (float v : download_bf16(d_out)) want_amax = std::max(want_amax, std::fabs(v));
  CHECK(download(amax)[0] == want_amax);

  const DeviceFp8 q_dout(d_dout, kN, kOC, false, Fp8Format::e5m2), q_w_t(d_w, kOC, kC, true, Fp8Format::e4m3);
  DeviceBuffer<bf16> d_dx(kN * kC);
  upload_bf16(d_dx, std::vector<float>(kN * kC, 0.0f));
  fp8_matmul_backward_dx(ctx, d_dx.get(), q_dout.operand(), q_w_t.operand(), kN, kC, kOC, true, nullptr);
  CHECK(close("fp8 dx", download_bf16(d_dx), dx, 1e-5, kBf16Rtol));

  const DeviceFp8 q_dout_t(d_dout, kN, kOC, true, Fp8Format::e5m2), q_inp_t(d_inp, kN, kC, true, Fp8Format::e4m3);
  DeviceBuffer<bf16> d_dw(kOC * kC);
  fp8_matmul_backward_dw(ctx, d_dw.get(), q_dout_t.operand(), q_inp_t.operand(), kN, kC, kOC, false, nullptr);
  CHECK(close("fp8 dW", download_bf16(d_dw), dw, 1e-5, kBf16Rtol));
}

}  // namespace
}  // namespace fsdpx::cuda::test
