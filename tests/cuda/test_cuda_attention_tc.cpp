// tests/cuda/test_cuda_attention_tc.cpp — the tensor-core attention (executor/cuda/attention_tc.h, forward
// and backward, causal, GQA 4:1) against the CPU plain-softmax reference and the CUDA-core kernel
// (attention.h) on the same bf16 inputs, for head dims 64 and 128 and sequence lengths that are not
// multiples of the 64-row tile (one partial tile, and three tiles with a partial last one). Skipped with
// test_cuda's "SKIPPED: no CUDA device found" without a GPU.
#include <doctest/doctest.h>

#include <string>

#include "executor/cpu/attention.h"
#include "executor/cuda/attention.h"
#include "executor/cuda/attention_tc.h"
#include "tests/cuda/cuda_test_util.h"

namespace fsdpx::cuda::test {
namespace {

struct AttnRun {
  std::vector<float> out, lse, dqkv;
};

// Forward then backward of the tensor-core (tc) or the CUDA-core kernel; dqkv starts at dqkv0 (+=).
AttnRun run_gpu(bool tc, const AttnShape& s, const std::vector<float>& qkv, const std::vector<float>& dout,
                const std::vector<float>& dqkv0) {
  const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
  DeviceBuffer<bf16> d_qkv(n_qkv), d_out(n_out), d_dout(n_out), d_dqkv(n_qkv);
  DeviceBuffer<float> d_lse(flash_attention_lse_elems(s)), d_scratch(flash_attention_scratch_elems(s));
  upload_bf16(d_qkv, qkv), upload_bf16(d_dout, dout), upload_bf16(d_dqkv, dqkv0);
  upload_bf16(d_out, random_bf16(n_out, 5.0f, 6.0f));  // poison: every output must be written
  if (tc) {
    tc_attention_forward(d_out.get(), d_lse.get(), d_qkv.get(), s, nullptr);
    tc_attention_backward(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_out.get(), d_qkv.get(), d_lse.get(), s,
                          nullptr);
  } else {
    flash_attention_forward(d_out.get(), d_lse.get(), d_qkv.get(), s, nullptr);
    flash_attention_backward(d_dqkv.get(), d_scratch.get(), d_dout.get(), d_out.get(), d_qkv.get(), d_lse.get(), s,
                             nullptr);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  return AttnRun{download_bf16(d_out), download(d_lse), download_bf16(d_dqkv)};
}

void check_tc(const AttnShape& s) {
  const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
  const auto qkv = random_bf16(n_qkv, -1.5f, 1.5f), dout = random_bf16(n_out), dqkv0 = random_bf16(n_qkv);
  std::vector<float> out(n_out), saved(cpu::attention_saved_elems(s)), dqkv = dqkv0;
  cpu::attention_forward(out.data(), saved.data(), qkv.data(), s);
  cpu::attention_backward(dqkv.data(), dout.data(), qkv.data(), saved.data(), s);
  const AttnRun tc = run_gpu(true, s, qkv, dout, dqkv0), core = run_gpu(false, s, qkv, dout, dqkv0);
  const std::string tag = "hd " + std::to_string(s.hd) + " t " + std::to_string(s.t);
  // P is rounded to bf16 before P·V and dS before dS·K, dSᵀ·Q (as FA2): bf16 tolerances, as test_cuda_attention.
  CHECK(close("tc forward vs CPU " + tag, tc.out, out, 1e-2, kBf16Rtol));
  CHECK(close("tc forward vs CUDA-core " + tag, tc.out, core.out, 1e-2, kBf16Rtol));
  CHECK(close("tc lse vs CUDA-core " + tag, tc.lse, core.lse, 1e-4, 1e-4));
  CHECK(close("tc backward dqkv vs CPU " + tag, tc.dqkv, dqkv, 2e-2, 2 * kBf16Rtol));
  CHECK(close("tc backward dqkv vs CUDA-core " + tag, tc.dqkv, core.dqkv, 2e-2, 2 * kBf16Rtol));
}

TEST_CASE("tensor-core attention matches the CPU reference and the CUDA-core kernel (GQA 4:1, ragged tiles)") {
  for (const std::int64_t hd : {64, 128})
    for (const std::int64_t t : {45, 150}) {
      AttnShape s;
      s.b = 2, s.t = t, s.nh = 8, s.nkv = 2, s.hd = hd;
      check_tc(s);
    }
}

TEST_CASE("tensor-core attention takes head dims 64 and 128 only, and its backward is bitwise deterministic") {
  AttnShape s;
  s.b = 1, s.t = 100, s.nh = 4, s.nkv = 1, s.hd = 64;
  CHECK(tc_attention_supports(s));
  AttnShape odd = s;
  odd.hd = 96;
  CHECK_FALSE(tc_attention_supports(odd));
  const std::int64_t n_qkv = s.b * s.t * s.qkv_row(), n_out = s.b * s.t * s.nh * s.hd;
  const auto qkv = random_bf16(n_qkv), dout = random_bf16(n_out), zeros = std::vector<float>(n_qkv, 0.0f);
  const AttnRun first = run_gpu(true, s, qkv, dout, zeros), second = run_gpu(true, s, qkv, dout, zeros);
  CHECK(first.out == second.out);
  CHECK(first.dqkv == second.dqkv);
}

}  // namespace
}  // namespace fsdpx::cuda::test
