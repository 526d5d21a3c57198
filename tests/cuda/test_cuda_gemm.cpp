// tests/cuda/test_cuda_gemm.cpp — the cuBLASLt linear layer (forward with bias epilogue, bf16 and
// fp32 outputs, dx with accumulate, dW accumulating into fp32) and the deterministic bias gradient
// against executor/cpu/gemm.h on the same bf16 inputs. Tolerances: fp32 accumulation over K = C or N
// terms, then one bf16 rounding for bf16 outputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>

#include "executor/cpu/gemm.h"
#include "executor/cuda/bias.h"
#include "executor/cuda/gemm.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {

constexpr std::int64_t kN = 37, kC = 96, kOC = 72;  // N odd: rows need no alignment; C, OC multiples of 8

TEST_CASE("cuda matmul forward (bias, bf16 and fp32 out) matches the CPU reference") {
  GemmContext ctx;
  const auto inp = random_bf16(kN * kC), w = random_bf16(kOC * kC), bias = random_bf16(kOC);
  std::vector<float> out(kN * kOC);
  cpu::matmul_forward(out.data(), inp.data(), w.data(), bias.data(), kN, kC, kOC);
  DeviceBuffer<bf16> d_inp(kN * kC), d_w(kOC * kC), d_bias(kOC), d_out(kN * kOC);
  DeviceBuffer<float> d_out32(kN * kOC);
  upload_bf16(d_inp, inp), upload_bf16(d_w, w), upload_bf16(d_bias, bias);
  matmul_forward(ctx, d_out.get(), GemmOut::operand, d_inp.get(), d_w.get(), d_bias.get(), kN, kC, kOC, false, nullptr);
  CHECK(close("matmul forward bf16 + bias", download_bf16(d_out), out, 1e-2, kBf16Rtol));
  cpu::matmul_forward<float>(out.data(), inp.data(), w.data(), nullptr, kN, kC, kOC);
  matmul_forward(ctx, d_out32.get(), GemmOut::f32, d_inp.get(), d_w.get(), nullptr, kN, kC, kOC, false, nullptr);
  CHECK(close("matmul forward fp32", download(d_out32), out, 1e-4, 1e-4));
}

// A bias at an odd bf16 offset (2-byte aligned, as a module offset inside a flat unit can be) cannot take
// the bias epilogue: gemm_col_major adds it with bias_add_columns after the GEMM, same result.
TEST_CASE("cuda matmul forward with an unaligned bias (bias kernel instead of the epilogue)") {
  GemmContext ctx;
  const auto inp = random_bf16(kN * kC), w = random_bf16(kOC * kC), bias = random_bf16(kOC);
  std::vector<float> out(kN * kOC), shifted(kOC + 1, 0.0f);
  std::copy(bias.begin(), bias.end(), shifted.begin() + 1);
  cpu::matmul_forward(out.data(), inp.data(), w.data(), bias.data(), kN, kC, kOC);
  DeviceBuffer<bf16> d_inp(kN * kC), d_w(kOC * kC), d_bias(kOC + 1), d_out(kN * kOC);
  DeviceBuffer<float> d_out32(kN * kOC);
  upload_bf16(d_inp, inp), upload_bf16(d_w, w), upload_bf16(d_bias, shifted);
  const bf16* odd = d_bias.get() + 1;
  REQUIRE(reinterpret_cast<std::uintptr_t>(odd) % 4 == 2);
  matmul_forward(ctx, d_out.get(), GemmOut::operand, d_inp.get(), d_w.get(), odd, kN, kC, kOC, false, nullptr);
  // Two roundings (GEMM output, then the bias add) instead of one: 2 ulps more.
  CHECK(close("matmul forward bf16 + unaligned bias", download_bf16(d_out), out, 1e-2, 2 * kBf16Rtol));
  matmul_forward(ctx, d_out32.get(), GemmOut::f32, d_inp.get(), d_w.get(), odd, kN, kC, kOC, false, nullptr);
  CHECK(close("matmul forward fp32 + unaligned bias", download(d_out32), out, 1e-4, 1e-4));
}

TEST_CASE("cuda matmul backward dx (accumulate) and dW (fp32 +=) match the CPU reference") {
  GemmContext ctx;
  const auto inp = random_bf16(kN * kC), w = random_bf16(kOC * kC), dout = random_bf16(kN * kOC);
  const auto dinp0 = random_bf16(kN * kC), dw0 = random_bf16(kOC * kC), db0 = random_bf16(kOC);
  std::vector<float> dinp = dinp0, dw = dw0, db = db0;
  cpu::matmul_backward_dx(dinp.data(), dout.data(), w.data(), kN, kC, kOC);
  cpu::matmul_backward_dw(dw.data(), db.data(), dout.data(), inp.data(), kN, kC, kOC);
  DeviceBuffer<bf16> d_inp(kN * kC), d_w(kOC * kC), d_dout(kN * kOC), d_dinp(kN * kC);
  DeviceBuffer<float> d_dw(kOC * kC), d_db(kOC), d_scratch(bias_backward_scratch_elems(kN, kOC));
  upload_bf16(d_inp, inp), upload_bf16(d_w, w), upload_bf16(d_dout, dout), upload_bf16(d_dinp, dinp0);
  upload(d_dw, dw0), upload(d_db, db0);
  matmul_backward_dx(ctx, d_dinp.get(), GemmOut::operand, d_dout.get(), d_w.get(), kN, kC, kOC, true, nullptr);
  matmul_backward_dw(ctx, d_dw.get(), GemmOut::f32, d_dout.get(), d_inp.get(), kN, kC, kOC, true, nullptr);
  bias_backward(d_db.get(), d_scratch.get(), d_dout.get(), kN, kOC, nullptr);
  CHECK(close("matmul dx (accumulate, bf16)", download_bf16(d_dinp), dinp, 2e-2, kBf16Rtol));
  CHECK(close("matmul dW (accumulate, fp32)", download(d_dw), dw, 1e-4, 1e-4));
  CHECK(close("bias backward", download(d_db), db, 1e-5, 1e-5));
  // Without accumulate the old contents are overwritten (beta = 0).
  matmul_backward_dw(ctx, d_dw.get(), GemmOut::f32, d_dout.get(), d_inp.get(), kN, kC, kOC, false, nullptr);
  std::vector<float> fresh(kOC * kC, 0.0f);
  cpu::matmul_backward_dw<float>(fresh.data(), nullptr, dout.data(), inp.data(), kN, kC, kOC);
  CHECK(close("matmul dW (overwrite)", download(d_dw), fresh, 1e-4, 1e-4));
}

}  // namespace
}  // namespace fsdpx::cuda::test
