// tests/cuda/test_cuda_norm.cpp — CUDA LayerNorm/RMSNorm (bf16, fp32 statistics) against the CPU fp32
// kernels on the same bf16-representable inputs, forward and backward (+= into non-zero gradients),
// at a width that is not a multiple of 32 and a row count that is not a multiple of 8.
#include <doctest/doctest.h>

#include "executor/cpu/norm.h"
#include "executor/cuda/norm.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {

constexpr std::int64_t kN = 77, kC = 300;
constexpr float kEps = 1e-5f;

struct NormCase {
  std::vector<float> inp = random_bf16(kN * kC, -2.0f, 2.0f), weight = random_bf16(kC, 0.5f, 1.5f),
                     bias = random_bf16(kC), dout = random_bf16(kN * kC), dinp0 = random_bf16(kN * kC),
                     dw0 = random_bf16(kC), db0 = random_bf16(kC);
};

void check_norm(bool layer) {
  NormCase c;
  // CPU reference (fp32).
  std::vector<float> out(kN * kC), mean(kN), rstd(kN), dinp = c.dinp0, dw = c.dw0, db = c.db0;
  if (layer) {
    cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), c.inp.data(), c.weight.data(), c.bias.data(), kN, kC, kEps);
    cpu::layernorm_backward(dinp.data(), dw.data(), db.data(), c.dout.data(), c.inp.data(), c.weight.data(), mean.data(),
                            rstd.data(), kN, kC);
  } else {
    cpu::rmsnorm_forward(out.data(), rstd.data(), c.inp.data(), c.weight.data(), kN, kC, kEps);
    cpu::rmsnorm_backward(dinp.data(), dw.data(), c.dout.data(), c.inp.data(), c.weight.data(), rstd.data(), kN, kC);
  }
  // CUDA.
  DeviceBuffer<bf16> d_inp(kN * kC), d_w(kC), d_b(kC), d_out(kN * kC), d_dout(kN * kC), d_dinp(kN * kC);
  DeviceBuffer<float> d_mean(kN), d_rstd(kN), d_dw(kC), d_db(kC), d_scratch(norm_backward_scratch_elems(kN, kC));
  upload_bf16(d_inp, c.inp), upload_bf16(d_w, c.weight), upload_bf16(d_b, c.bias), upload_bf16(d_dout, c.dout);
  upload_bf16(d_dinp, c.dinp0), upload(d_dw, c.dw0), upload(d_db, c.db0);
  if (layer) {
    layernorm_forward(d_out.get(), d_mean.get(), d_rstd.get(), d_inp.get(), d_w.get(), d_b.get(), kN, kC, kEps, nullptr);
    layernorm_backward(d_dinp.get(), d_dw.get(), d_db.get(), d_scratch.get(), d_dout.get(), d_inp.get(), d_w.get(),
                       d_mean.get(), d_rstd.get(), kN, kC, nullptr);
  } else {
    rmsnorm_forward(d_out.get(), d_rstd.get(), d_inp.get(), d_w.get(), kN, kC, kEps, nullptr);
    rmsnorm_backward(d_dinp.get(), d_dw.get(), d_scratch.get(), d_dout.get(), d_inp.get(), d_w.get(), d_rstd.get(), kN,
                     kC, nullptr);
  }
  CHECK(close("norm out", download_bf16(d_out), out, 1e-2, kBf16Rtol));
  CHECK(close("norm rstd", download(d_rstd), rstd, 0, 1e-5));
  if (layer) CHECK(close("norm mean", download(d_mean), mean, 1e-6, 1e-5));
  CHECK(close("norm dinp", download_bf16(d_dinp), dinp, 2e-2, kBf16Rtol));
  // dweight sums N = 77 products in fp32 in a different order than the CPU: fp32-level tolerance.
  CHECK(close("norm dweight", download(d_dw), dw, 1e-4, 1e-4));
  if (layer) CHECK(close("norm dbias", download(d_db), db, 1e-4, 1e-4));
}

TEST_CASE("cuda layernorm forward/backward match the CPU reference") { check_norm(true); }

TEST_CASE("cuda rmsnorm forward/backward match the CPU reference") { check_norm(false); }

TEST_CASE("cuda norm backward is bitwise deterministic") {
  NormCase c;
  DeviceBuffer<bf16> d_inp(kN * kC), d_w(kC), d_dout(kN * kC), d_dinp(kN * kC), d_out(kN * kC);
  DeviceBuffer<float> d_rstd(kN), d_dw(kC), d_scratch(norm_backward_scratch_elems(kN, kC));
  upload_bf16(d_inp, c.inp), upload_bf16(d_w, c.weight), upload_bf16(d_dout, c.dout);
  rmsnorm_forward(d_out.get(), d_rstd.get(), d_inp.get(), d_w.get(), kN, kC, kEps, nullptr);
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    upload(d_dw, std::vector<float>(kC, 0.0f));
    rmsnorm_backward(d_dinp.get(), d_dw.get(), d_scratch.get(), d_dout.get(), d_inp.get(), d_w.get(), d_rstd.get(), kN,
                     kC, nullptr);
    if (run == 0) first = download(d_dw);
    else CHECK(first == download(d_dw));
  }
}

}  // namespace
}  // namespace fsdpx::cuda::test
